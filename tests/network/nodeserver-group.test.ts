// The nodeservers' AgentGroup (kubernetes runtime; docs/diagnosis.md#agentgroup): real
// `rlark nodeserver` processes, each fed through its peers.json the peers state the agent makes
// (agent/nodeserver-group.ts: the key derived from the cluster's credentials, the nodes as seeds),
// gossip over UDP and serve their view on GET /group with the stats token. A killed nodeserver is
// declared dead, one whose state drops the group leaves, and a nodeserver holding another
// cluster's key is never admitted. The key shows in no log and no answer.
import type { ChildProcess } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { nodeserverGroup } from "../../operators/agent/nodeserver-group.ts";
import { peersStateFrom } from "../../operators/api/index.ts";
import type { AgentGroupReport } from "../../operators/lib/tunnel/index.ts";
import { writePeersFile } from "../../operators/network/index.ts";
import { freePort } from "../helpers/free-port.ts";
import { startFileNodeserver } from "../helpers/nodeserver-process.ts";
import { waitFor } from "../helpers/wait-for.ts";

/** Long enough for a suspicion timeout (4 s with 3 members) and the node startup. */
const slow = { attempts: 1200, everyMs: 50 };
const TOKEN = "stats-token-for-the-test";

const pem = () =>
  generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();

interface Node {
  name: string;
  dir: string;
  groupPort: number;
  statsPort: number;
  child: ChildProcess;
  stderr: () => string;
}

t.test("nodeservers fed the agent's peers state form the cluster's AgentGroup", async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), "rlark-ns-group-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const nodes: Node[] = [];

  const names = ["node-a", "node-b", "node-c", "intruder"];
  const ports = await Promise.all(
    names.map(async () => ({ group: await freePort(), stats: await freePort() })),
  );
  const [clusterPem, otherPem] = [pem(), pem()];
  // What the kubernetes agent writes: its key, the nodes' InternalIPs at the group port. Each
  // process here listens on a port of its own, so the seeds name them one by one.
  const group = nodeserverGroup(clusterPem, "gpu", ["127.0.0.1"], ports[0]?.group ?? 0);
  group.seeds = ports.slice(0, 3).map((p) => `127.0.0.1:${p.group}`);
  // another cluster's agent: another key (the same cluster name, even), the same seeds
  const otherGroup = { ...nodeserverGroup(otherPem, "gpu", ["127.0.0.1"], 1), seeds: group.seeds };
  t.not(group.key, otherGroup.key, "two credentials give two keys");
  const state = (g: typeof group | undefined) => peersStateFrom([], "agent-gpu", undefined, TOKEN, g);

  const start = (name: string, i: number, g: typeof group | undefined) => {
    const socketDir = path.join(dir, name);
    const p = ports[i] as { group: number; stats: number };
    mkdirSync(socketDir);
    writePeersFile(socketDir, state(g));
    let err = "";
    const child = startFileNodeserver(t, {
      socketDir,
      statsListen: `127.0.0.1:${p.stats}`,
      args: ["--node", name, "--group-listen", `127.0.0.1:${p.group}`],
      onStderr: (text) => {
        err += text;
      },
    });
    const node = { name, dir: socketDir, groupPort: p.group, statsPort: p.stats, child, stderr: () => err };
    nodes.push(node);
    return node;
  };
  const [a, b, c] = ["node-a", "node-b", "node-c"].map((name, i) => start(name, i, group)) as [
    Node,
    Node,
    Node,
  ];
  const intruder = start("intruder", 3, otherGroup);

  const view = async (node: Node, token = TOKEN): Promise<{ status: number; body: unknown }> => {
    const res = await fetch(`http://127.0.0.1:${node.statsPort}/group`, {
      headers: { authorization: `Bearer ${token}` },
    }).catch(() => undefined);
    return res ? { status: res.status, body: await res.json() } : { status: 0, body: undefined };
  };
  const states = async (node: Node) => {
    const answer = await view(node);
    if (answer.status !== 200) return undefined;
    const report = answer.body as AgentGroupReport;
    return Object.fromEntries((report.members ?? []).map((m) => [m.id, m.state]));
  };

  for (const node of [a, b, c])
    await waitFor(
      `${node.name} sees the three nodes alive`,
      async () => {
        const s = await states(node);
        return s && s["node-a"] === "alive" && s["node-b"] === "alive" && s["node-c"] === "alive"
          ? s
          : undefined;
      },
      slow,
    );
  const report = (await view(a)).body as AgentGroupReport;
  t.equal(report.member, "node-a", "the view says whose it is");
  t.equal(report.alive, 3, "three alive");
  t.match(
    report.members?.find((m) => m.id === "node-b")?.address,
    `127.0.0.1:${b.groupPort}`,
    "with the address each member listens at",
  );
  t.equal((await view(a, "forged")).status, 401, "without the stats token: refused");

  // killed: declared dead by the others once the suspicion timeout ran out
  c.child.kill("SIGKILL");
  for (const node of [a, b])
    await waitFor(
      `${node.name} declares node-c dead`,
      async () => (await states(node))?.["node-c"] === "dead",
      slow,
    );

  // the peers state drops the group (the agent's --nodeserver-group-port 0): b leaves, not dies
  writePeersFile(b.dir, state(undefined));
  await waitFor("node-a sees node-b leave", async () => (await states(a))?.["node-b"] === "left", slow);
  t.equal((await view(b)).status, 404, "node-b serves no view once it runs no member");

  // all this time the intruder asked the same seeds to let it in
  const intruderView = await states(intruder);
  t.same(intruderView, { intruder: "alive" }, "the other cluster's key: the intruder knows only itself");
  t.notOk((await states(a))?.intruder, "and no member ever took it in");

  const secrets = [group.key, otherGroup.key, clusterPem.split("\n")[1] ?? "x"];
  for (const node of nodes)
    for (const secret of secrets)
      t.notOk(node.stderr().includes(secret), `${node.name}'s log holds no key material`);
  t.notOk(JSON.stringify(report).includes(group.key), "nor does the view");
  t.match(a.stderr(), /group member started/, "the log says the member started (and nothing of its key)");
});
