// Issue 31, item 2: a committer keeps an agentless Cluster's sealed kubeconfig and adds, unsealed,
// spec.kubeconfig.server (their own HTTPS server) and insecureSkipTLSVerify: true, to have the hub
// send the cluster's bearer token there. Where the credential goes is only what is sealed: the
// hub refuses the revision at both fields, keeps driving the cluster with its last good config,
// and the thief's server receives no request at all; a Cluster with such an override that reaches
// the store without validation is not driven either.
import t from "tap";
import { modify } from "../../operators/lib/store/index.ts";
import { refusedRevision } from "../helpers/source-status.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";
import { agentlessHub, clusterYaml, kubeconfigFor, standIn, status, version } from "./agentless-bed.ts";

const TOKEN = "lab-bearer-token-5d1e8c0b9a7f";

t.test("an unsealed server or skip-TLS that differs from the sealed kubeconfig is refused", async (t) => {
  // the cluster's own API server answers /version and refuses the rest: the hub keeps trying it
  const cluster = await standIn(t, (req, res) =>
    req.url?.startsWith("/version") ? version(res) : status(res, 403, "forbidden"),
  );
  const thief = await standIn(t, (_req, res) => version(res));
  const { hub, git, seal, lines } = await agentlessHub(t, { intervalMs: 100 });
  const sealed = seal("lab", kubeconfigFor(cluster, TOKEN));
  const versionCalls = () => cluster.requests.filter((r) => r.path.startsWith("/version")).length;

  // the sealed server, repeated unsealed, is no override
  await git.commit({ "clusters/lab.yaml": clusterYaml("lab", sealed, [`server: ${cluster.url}`]) });
  await waitFor("the hub dials the sealed server", () => versionCalls() > 0 || undefined, onRealServers);
  t.ok(
    cluster.requests.some((r) => r.authorization === `Bearer ${TOKEN}`),
    "the cluster's server gets the token",
  );

  const attack = await git.commit({
    "clusters/lab.yaml": clusterYaml("lab", sealed, [`server: ${thief.url}`, "insecureSkipTLSVerify: true"]),
  });
  const refused = await refusedRevision(hub, attack);
  t.match(refused.errors, [
    {
      file: "clusters/lab.yaml",
      line: 10,
      path: "/spec/kubeconfig/server",
      rule: "cross/kubeconfig-destination",
      message: /differs from the sealed kubeconfig's/,
    },
    {
      file: "clusters/lab.yaml",
      line: 11,
      path: "/spec/kubeconfig/insecureSkipTLSVerify",
      rule: "cross/kubeconfig-destination",
    },
  ]);
  t.equal(refused.errors?.length, 2);
  // the cluster is still tried with its last good config: two more rounds there, none elsewhere
  const before = versionCalls();
  await waitFor(
    "the cluster tried again with its sealed server",
    () => versionCalls() >= before + 2 || undefined,
    onRealServers,
  );
  t.same(thief.requests, [], "the thief's server received nothing");

  // the same override in the store, past validation (an older hub applied it): not driven
  await modify(hub.store, "Cluster", undefined, "lab", (object) => {
    const spec = object.spec as { kubeconfig: Record<string, unknown> };
    spec.kubeconfig = { ...spec.kubeconfig, server: thief.url, insecureSkipTLSVerify: true };
  });
  const message = await waitFor(
    "the override refused where the cluster is driven",
    async () => {
      const s = (await hub.store.get("Cluster", undefined, "lab"))?.status as
        | { lastTestMessage?: string }
        | undefined;
      return s?.lastTestMessage?.includes("spec.kubeconfig.server") ? s.lastTestMessage : undefined;
    },
    onRealServers,
  );
  t.match(message, /differs from the sealed kubeconfig's/);
  t.same(thief.requests, [], "the thief's server still received nothing");
  t.notOk(lines.join("").includes(TOKEN), "no token in the logs");
});
