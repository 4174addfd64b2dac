// "TCP failing while ICMP works?" (seed 002) on real sockets, as root: this process probes a peer
// in a network namespace of its own by TCP connect and by ICMP echo (rlark-net icmp-probe, a raw
// socket), and reports the figures to a real hub as its agent's PingMesh. A filter in the peer's
// namespace then drops TCP to the probe port: the hub's node matrix finds TCP failing while ICMP
// answers; dropping ICMP too turns it into "both fail". Every address is inside the namespace
// made here, removed at teardown.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { ProcessRuntime } from "../../operators/agent/runtimes/process/index.ts";
import { systemClock } from "../../operators/lib/clock.ts";
import { silentLogger } from "../../operators/lib/logger.ts";
import { meshStatus, PingMesh, startIcmpProber, tcpProbe } from "../../operators/network/pingmesh/index.ts";
import { startAgentOnHub } from "../helpers/agent-on-hub.ts";
import { rlarkNetBinary } from "../helpers/domain-net.ts";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { clusterYaml } from "../helpers/job-yaml.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

const sh = (...args: string[]) =>
  execFileSync(args[0] as string, args.slice(1), { encoding: "utf8", stdio: "pipe" });
const PORT = 5702;

t.test("TCP failing while ICMP works, then both, on the hub's node matrix", async (t) => {
  const id = randomBytes(2).toString("hex");
  const ns = `pmi${id}`;
  const [hostIf, peerIf] = [`pmi${id}h`, `pmi${id}p`];
  const net = `10.${200 + ((randomBytes(1)[0] ?? 0) % 50)}.${randomBytes(1)[0] ?? 0}`;
  const [here, peer] = [`${net}.1`, `${net}.2`];
  const children: ChildProcess[] = [];
  t.teardown(() => {
    for (const child of children) child.kill();
    for (const cmd of [
      ["ip", "link", "del", hostIf],
      ["ip", "netns", "del", ns],
    ])
      try {
        sh(...cmd);
      } catch {}
  });
  sh("ip", "netns", "add", ns);
  sh("ip", "link", "add", hostIf, "type", "veth", "peer", "name", peerIf);
  sh("ip", "link", "set", peerIf, "netns", ns);
  sh("ip", "addr", "add", `${here}/30`, "dev", hostIf);
  sh("ip", "link", "set", hostIf, "up");
  sh("ip", "-n", ns, "link", "set", "lo", "up");
  sh("ip", "-n", ns, "addr", "add", `${peer}/30`, "dev", peerIf);
  sh("ip", "-n", ns, "link", "set", peerIf, "up");
  // the peer's probe port: accepted and closed
  const listener = spawn(
    "ip",
    ["netns", "exec", ns, "socat", `TCP-LISTEN:${PORT},fork,reuseaddr`, "SYSTEM:true"],
    {
      stdio: "ignore",
    },
  );
  children.push(listener);

  const icmp = startIcmpProber(rlarkNetBinary(), 300);
  t.teardown(() => icmp.close());
  const self = { name: "edge-node", topology: { rack: "r1" } };
  const mesh = new PingMesh({
    self,
    clock: systemClock,
    probe: tcpProbe(systemClock, 300),
    icmpProbe: (host) => icmp.probe(host),
    intervalMs: 150,
    windowSize: 8,
  });
  mesh.setPeers([{ name: "peer", host: peer, port: PORT, topology: { rack: "r1" } }]);
  mesh.start();
  t.teardown(() => mesh.stop());

  const { hub } = await startHubOnGit(t, { files: { "clusters.yaml": clusterYaml("edge") } });
  await waitFor("Cluster edge", async () => hub.store.get("Cluster", undefined, "edge"), onRealServers);
  const runtime = await ProcessRuntime.open({
    stateDir: path.join(await mkdtemp(path.join(tmpdir(), "rlark-pingmesh-icmp-")), "runtime"),
    nodeName: "edge-node",
    logger: silentLogger,
  });
  await startAgentOnHub(t, hub, "edge", {
    runtime,
    runtimeKind: "process",
    reportIntervalMs: 200,
    pingMesh: () => meshStatus(self, mesh.results(), new Date().toISOString()),
  });
  type Answer = {
    pairs: {
      source: string;
      target: string;
      figures: { loss: number };
      icmp?: { loss: number };
      degraded?: string;
    }[];
    protocols: { source: string; target: string; verdict: string; message: string }[];
  };
  const matrix = async (): Promise<Answer> => {
    const res = await fetch(`${hub.url}/api/v1/pingmesh/edge`, {
      headers: { authorization: `Bearer ${hub.adminToken}` },
    });
    return (await res.json()) as Answer;
  };

  const healthy = await waitFor(
    "a full window of answered TCP and ICMP probes",
    async () => {
      const m = await matrix();
      const p = m.pairs[0];
      return p?.figures.loss === 0 && p.icmp?.loss === 0 && (p.figures as { samples?: number }).samples === 8
        ? m
        : undefined;
    },
    onRealServers,
  );
  t.same(
    healthy.protocols,
    [],
    "both answer: nothing to say (slowness under load is the heatmap's, not a failure)",
  );

  sh(
    "ip",
    "netns",
    "exec",
    ns,
    "iptables",
    "-A",
    "INPUT",
    "-p",
    "tcp",
    "--dport",
    String(PORT),
    "-j",
    "DROP",
  );
  const tcpOnly = await waitFor(
    "TCP failing while ICMP works",
    async () => (await matrix()).protocols.find((p) => p.verdict === "tcp-only"),
    onRealServers,
  );
  t.match(tcpOnly, {
    source: "edge-node",
    target: "peer",
    message:
      /^TCP loss \d+(\.\d)?% while ICMP answers \(p99 [\d.]+ ms, loss 0%\): the host is up; TCP to its probe port is filtered or the listener is down$/,
  });

  sh("ip", "netns", "exec", ns, "iptables", "-A", "INPUT", "-p", "icmp", "-j", "DROP");
  const both = await waitFor(
    "both failing",
    async () => (await matrix()).protocols.find((p) => p.verdict === "both"),
    onRealServers,
  );
  t.match(
    both.message,
    /^TCP (loss|no answer).* and ICMP (loss|no answer).*: the link or the host, not one port$/,
  );
});
