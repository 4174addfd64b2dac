// The unsealed kubeconfig of an agentless cluster is written by whoever may commit a Cluster: it
// may use only inline credentials (no plugin runs on the hub, no file of the hub's is read), and
// an error names the field, never a value.
import t from "tap";
import { KubeconfigError, kubeConfigFrom } from "../../../operators/agent/agentless/index.ts";

const SECRET = "tok-abcdef0123456789";

function kubeconfig(user: string, cluster = "server: https://10.0.0.1:6443"): string {
  return `apiVersion: v1
kind: Config
clusters:
  - name: c
    cluster:
      ${cluster}
users:
  - name: u
    user:
      ${user}
contexts:
  - name: x
    context: { cluster: c, user: u }
current-context: x
`;
}

t.test("inline credentials make a client configuration of the current context", async (t) => {
  const kc = kubeConfigFrom(kubeconfig(`token: ${SECRET}`));
  t.equal(kc.getCurrentCluster()?.server, "https://10.0.0.1:6443");
  t.equal(kc.getCurrentUser()?.token, SECRET);
  t.equal(kc.getCurrentCluster()?.skipTLSVerify, false);
  const moved = kubeConfigFrom(kubeconfig(`token: ${SECRET}`), {
    server: "https://lab.example:6443",
    insecureSkipTLSVerify: true,
  });
  t.equal(moved.getCurrentCluster()?.server, "https://lab.example:6443", "spec.kubeconfig.server wins");
  t.equal(moved.getCurrentCluster()?.skipTLSVerify, true);
});

t.test("plugins, files and broken input are refused without quoting the content", async (t) => {
  const cases: [string, RegExp][] = [
    [
      kubeconfig(
        `exec: { command: /bin/sh, args: ["-c", "echo ${SECRET}"], apiVersion: client.authentication.k8s.io/v1 }`,
      ),
      /user uses "exec"/,
    ],
    [
      kubeconfig(`auth-provider: { name: oidc, config: { id-token: ${SECRET} } }`),
      /user uses "auth-provider"/,
    ],
    [kubeconfig(`tokenFile: /var/lib/rlark/admin-token`), /user uses "tokenFile"/],
    [
      kubeconfig(`client-certificate: /etc/hub.crt\n      client-key: /etc/hub.key`),
      /user uses "client-certificate"/,
    ],
    [
      kubeconfig(`token: ${SECRET}`, `server: https://x\n      certificate-authority: /etc/ca.crt`),
      /cluster uses "certificate-authority"/,
    ],
    [kubeconfig(`username: ${SECRET}`), /no inline credentials/],
    [kubeconfig(`token: ${SECRET}`, "insecure-skip-tls-verify: true"), /needs a server/],
    [`current-context: x\nusers: [${SECRET}`, /is not YAML \(line \d+\)/],
    [`${SECRET}`, /not a YAML mapping/],
    [kubeconfig(`token: ${SECRET}`).replace("current-context: x", "current-context: y"), /missing context/],
  ];
  for (const [text, expected] of cases) {
    const error = (() => {
      try {
        kubeConfigFrom(text);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    t.type(error, KubeconfigError);
    t.match((error as Error).message, expected);
    t.notOk((error as Error).message.includes(SECRET), "no value in the message");
  }
});
