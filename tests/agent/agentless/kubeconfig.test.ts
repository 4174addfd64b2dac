// The unsealed kubeconfig of an agentless cluster is written by whoever may commit a Cluster: it
// may use only inline credentials (no plugin runs on the hub, no file of the hub's is read), and
// an error names the field, never a value.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { KubeconfigError, kubeConfigFrom } from "../../../operators/agent/agentless/index.ts";
import { rlark } from "../../helpers/rlark-cli.ts";

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
  const same = kubeConfigFrom(kubeconfig(`token: ${SECRET}`), {
    server: "https://10.0.0.1:6443/",
    insecureSkipTLSVerify: false,
  });
  t.equal(same.getCurrentCluster()?.server, "https://10.0.0.1:6443", "an override that says what is sealed");
});

t.test("an unsealed override of where the credential goes is refused", async (t) => {
  for (const [overrides, field] of [
    [{ server: "https://lab.example:6443" }, /spec\.kubeconfig\.server differs/],
    [{ insecureSkipTLSVerify: true }, /spec\.kubeconfig\.insecureSkipTLSVerify differs/],
  ] as const) {
    const error = (() => {
      try {
        kubeConfigFrom(kubeconfig(`token: ${SECRET}`), overrides);
      } catch (e) {
        return e;
      }
    })();
    t.ok(error instanceof KubeconfigError, JSON.stringify(overrides));
    t.match((error as Error).message, field);
    t.notOk((error as Error).message.includes(SECRET));
  }
  const skipSealed = kubeConfigFrom(
    kubeconfig(`token: ${SECRET}`, "server: https://10.0.0.1:6443\n      insecure-skip-tls-verify: true"),
    { insecureSkipTLSVerify: true },
  );
  t.equal(skipSealed.getCurrentCluster()?.skipTLSVerify, true, "skipping is what is sealed");
  t.throws(
    () =>
      kubeConfigFrom(kubeconfig(`token: ${SECRET}`, "certificate-authority-data: AAAA"), {
        server: "https://10.0.0.1:6443",
      }),
    /server differs/,
    "a server that only the override names",
  );
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

t.test("rlark seal --kubeconfig refuses what the hub would refuse, before fetching any key", async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), "rlark-seal-kubeconfig-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = path.join(dir, "exec.kubeconfig");
  await writeFile(
    file,
    kubeconfig(`exec: { command: /bin/sh, apiVersion: client.authentication.k8s.io/v1 }`),
  );
  const run = await rlark([
    "seal",
    "--hub-key",
    path.join(dir, "missing.pem"),
    "--kubeconfig",
    file,
    "--cluster",
    "lab",
  ]);
  t.equal(run.code, 2);
  t.match(run.stderr, /exec\.kubeconfig: the kubeconfig's user uses "exec"/);
  t.equal(run.stdout, "");
});

t.test(
  "rlark validate names file:line for agentless Clusters and never echoes a plain kubeconfig",
  async (t) => {
    const dir = await mkdtemp(path.join(tmpdir(), "rlark-validate-agentless-"));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    await writeFile(
      path.join(dir, "clusters.yaml"),
      `apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata: { name: a }
spec:
  runtime: process
  access: kubeconfig
  kubeconfig: { sealed: "rlark-sealed:v1:0123456789abcdef:AAAA" }
---
apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata: { name: b }
spec:
  runtime: kubernetes
  access: kubeconfig
---
apiVersion: rlinf.io/v1alpha1
kind: Cluster
metadata: { name: c }
spec:
  runtime: kubernetes
  access: kubeconfig
  kubeconfig:
    sealed: "token: ${SECRET}"
`,
    );
    const run = await rlark(["validate", dir]);
    t.equal(run.code, 1);
    const output = run.stdout + run.stderr;
    t.match(output, /clusters\.yaml:5:\d+ Cluster a \/spec\/runtime: must be "kubernetes"/);
    t.match(output, /clusters\.yaml:13:\d+ Cluster b \/spec: missing required field "kubeconfig"/);
    t.match(
      output,
      /clusters\.yaml:23:\d+ Cluster c \/spec\/kubeconfig\/sealed: must be a sealed kubeconfig/,
    );
    t.notOk(output.includes(SECRET), "the plain value is not echoed");
  },
);
