// PingMesh between the nodeservers of one cluster (docs/pingmesh.md#nodeservers): three real
// `rlark nodeserver` processes fed the agent's peers state with the group probe each other by TCP
// connect to their group address and serve the figures on GET /pingmesh with the stats token.
// Their pairs converge to the six among the three; a killed one shows as loss from the others.
import { generateKeyPairSync } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { nodeserverGroup } from "../../operators/agent/nodeserver-group.ts";
import { peersStateFrom } from "../../operators/api/index.ts";
import { type GroupPingMeshReport, writePeersFile } from "../../operators/network/index.ts";
import { freePort } from "../helpers/free-port.ts";
import { startFileNodeserver } from "../helpers/nodeserver-process.ts";
import { waitFor } from "../helpers/wait-for.ts";

const slow = { attempts: 1200, everyMs: 50 };
const TOKEN = "stats-token-for-the-pingmesh-test";

t.test("the nodeservers of a group probe each other and serve GET /pingmesh", async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), "rlark-ns-pingmesh-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const names = ["node-a", "node-b", "node-c"];
  const ports = await Promise.all(
    names.map(async () => ({ group: await freePort(), stats: await freePort() })),
  );
  const pem = generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  const group = nodeserverGroup(pem, "gpu", ["127.0.0.1"], 1);
  group.seeds = ports.map((p) => `127.0.0.1:${p.group}`);
  const start = (name: string, i: number, extra: string[] = []) => {
    const p = ports[i] as { group: number; stats: number };
    const socketDir = path.join(dir, name);
    mkdirSync(socketDir);
    writePeersFile(socketDir, peersStateFrom([], "agent-gpu", undefined, TOKEN, group));
    const child = startFileNodeserver(t, {
      socketDir,
      statsListen: `127.0.0.1:${p.stats}`,
      args: [
        "--node",
        name,
        "--group-listen",
        `127.0.0.1:${p.group}`,
        "--group-pingmesh-interval",
        "300ms",
        "--group-pingmesh-budget",
        "4",
        ...extra,
      ],
      onStderr: (text) => process.stderr.write(text),
    });
    return child;
  };
  const [, , c] = names.map((name, i) => start(name, i));

  const pingmesh = async (i: number, token = TOKEN) => {
    const res = await fetch(`http://127.0.0.1:${ports[i]?.stats}/pingmesh`, {
      headers: { authorization: `Bearer ${token}` },
    }).catch(() => undefined);
    return res ? { status: res.status, body: (await res.json()) as GroupPingMeshReport } : undefined;
  };
  const answered = (r: GroupPingMeshReport | undefined, target: string) =>
    r?.pairs.find((p) => p.target === target && p.figures.samples > 0 && p.figures.loss === 0);

  for (const [i, name] of names.entries())
    await waitFor(
      `${name} has answered probes of the two others`,
      async () => {
        const r = (await pingmesh(i))?.body;
        return names.filter((n) => n !== name).every((n) => answered(r, n)) ? r : undefined;
      },
      slow,
    );
  const report = (await pingmesh(0))?.body as GroupPingMeshReport;
  t.equal(report.source, "node-a", "the figures say whose they are");
  t.same(
    report.pairs.map((p) => p.target),
    ["node-b", "node-c"],
    "node-a's pairs: the two other members, not itself",
  );
  t.ok((report.pairs[0]?.figures.p50Ms ?? -1) >= 0, "with an RTT");
  t.equal(report.budget, 4, "the stated budget");
  t.equal((await pingmesh(0, "forged"))?.status, 401, "without the stats token: refused");

  c?.kill("SIGKILL");
  for (const i of [0, 1])
    await waitFor(
      `${names[i]} sees loss to node-c`,
      async () => {
        const pair = (await pingmesh(i))?.body.pairs.find((p) => p.target === "node-c");
        return pair && pair.figures.loss > 0 ? pair : undefined;
      },
      slow,
    );
  const after = (await pingmesh(0))?.body as GroupPingMeshReport;
  t.equal(
    after.pairs.find((p) => p.target === "node-b")?.figures.loss,
    0,
    "node-b still answers every probe",
  );

  // --group-pingmesh-interval 0s: no PingMesh, GET /pingmesh says so
  const off = await freePort();
  ports.push({ group: await freePort(), stats: off });
  start("node-d", 3, ["--group-pingmesh-interval", "0s"]);
  await waitFor("node-d answers", async () => (await pingmesh(3))?.status === 404, slow);
});
