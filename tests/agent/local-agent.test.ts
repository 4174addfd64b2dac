// `rlark up`'s local agent: started for the Cluster `local` the repository declares, and not
// waited for once the hub has applied a revision that declares none.
import { readFile } from "node:fs/promises";
import path from "node:path";
import t from "tap";
import { startLocalAgent } from "../../operators/agent/index.ts";
import { type Logger, silentLogger } from "../../operators/lib/logger.ts";
import packageJson from "../../package.json" with { type: "json" };
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

const examples = path.resolve(import.meta.dirname, "../../examples");

t.test("a revision without Cluster local: no local agent, said at once, not after a wait", async (t) => {
  const beijing = await readFile(path.join(examples, "clusters/beijing.yaml"), "utf8");
  const { hub, dataDir } = await startHubOnGit(t, { files: { "clusters/beijing.yaml": beijing } });
  await waitFor(
    "the first revision applied",
    () => hub.source?.watcher.status().lastAppliedRevision,
    onRealServers,
  );
  const said: string[] = [];
  const logger: Logger = { info: (message) => said.push(message), warn() {}, error() {} };
  const agent = await startLocalAgent({
    cluster: "local",
    dataDir,
    hub,
    createToken: () => Promise.reject(new Error("no agent is enrolled")),
    logger,
    // Far longer than the test may run: only the applied revision can end the wait.
    waitMs: 24 * 3_600_000,
  });
  t.equal(agent, undefined);
  t.match(said, [/declares no Cluster "local"/]);
});

t.test("the local agent's Node reports this rlark's version", async (t) => {
  const local = await readFile(path.join(examples, "clusters/local.yaml"), "utf8");
  const { hub, dataDir } = await startHubOnGit(t, { files: { "clusters/local.yaml": local } });
  const agent = await startLocalAgent({
    cluster: "local",
    dataDir,
    hub,
    createToken: async (cluster) => (await hub.pki.enrollment.createToken({ cluster, ttlMs: 600_000 })).token,
    logger: silentLogger,
  });
  t.ok(agent, "the agent started");
  t.teardown(() => agent?.stop());
  const versions = await waitFor(
    "the local agent's Node reported",
    async () => {
      const nodes = await hub.store.list("Node", { namespace: "agent-local" });
      const reported = nodes.items.map(
        (n) => (n.status as { nodeInfo?: { agentVersion?: string } })?.nodeInfo?.agentVersion,
      );
      return reported.length > 0 ? reported : undefined;
    },
    onRealServers,
  );
  t.same(versions, [packageJson.version], "package.json's version, not a placeholder");
});
