// `node hack/bench/agents/run.ts [agents=1000] [--workers 4] [--probes 200] [--steady-s 30]`:
// N agents in a few processes, each over the real tunnel (enrolled through the hub's enrollment
// subsystem, then ssh2 with the client's jittered backoff), reporting every 10 s to one hub in a
// process of its own. Prints the hub's CPU and memory while they report, the latency of a
// desired-state delta (a Task written into the hub's store → the agent's tunnel client holds it),
// and the reconnect storm after the hub is stopped and started again on the same data directory.
// Baseline, same run: the hub process idle (no agents) and the delta latency with one agent only.
// Asserts nothing (docs/benchmarks/agents.md).
import { type ChildProcess, fork } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { freePort } from "../../../tests/helpers/free-port.ts";
import type { HubReply, HubRequest, WorkerReply, WorkerRequest } from "./hub-messages.ts";
import { wallNow } from "./payloads.ts";

const { values: flags, positionals } = parseArgs({
  options: {
    workers: { type: "string" },
    probes: { type: "string" },
    "steady-s": { type: "string" },
  },
  allowPositionals: true,
});
const agentCount = Number(positionals[0] ?? 1000);
const workerCount = Number(flags.workers ?? 4);
const probeCount = Number(flags.probes ?? 200);
const steadyMs = Number(flags["steady-s"] ?? 30) * 1000;
const here = import.meta.dirname;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---- the hub process -----------------------------------------------------------------------

class HubProcess {
  #child: ChildProcess;
  #waiting = new Map<string, Array<(reply: HubReply) => void>>();
  readonly ready: Promise<number>;

  constructor(dataDir: string, httpPort: number, sshPort: number) {
    this.#child = fork(path.join(here, "hub-process.ts"), [dataDir, String(httpPort), String(sshPort)], {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    this.#child.on("message", (reply: HubReply) => {
      if (reply.type === "error") {
        console.error(`hub: ${reply.message}`);
        return;
      }
      this.#waiting.get(reply.type)?.shift()?.(reply);
    });
    this.ready = this.#next("ready").then((r) => (r as Extract<HubReply, { type: "ready" }>).at);
  }

  get pid(): number {
    return this.#child.pid ?? 0;
  }

  #next(type: string): Promise<HubReply> {
    return new Promise((resolve) => {
      const list = this.#waiting.get(type) ?? [];
      list.push(resolve);
      this.#waiting.set(type, list);
    });
  }

  async ask<T extends HubReply["type"]>(
    request: HubRequest,
    type: T,
  ): Promise<Extract<HubReply, { type: T }>> {
    const answer = this.#next(type);
    this.#child.send(request);
    return (await answer) as Extract<HubReply, { type: T }>;
  }

  async stop(): Promise<void> {
    const exited = new Promise((r) => this.#child.once("exit", r));
    await this.ask({ type: "stop" }, "stopped");
    await exited;
  }
}

/** CPU (percent of one core) and memory of the hub over `ms`. */
async function hubLoad(hub: HubProcess, ms: number) {
  const before = await hub.ask({ type: "stats" }, "stats");
  let peakRss = before.rssBytes;
  const end = performance.now() + ms;
  while (performance.now() < end) {
    await sleep(1000);
    peakRss = Math.max(peakRss, (await hub.ask({ type: "stats" }, "stats")).rssBytes);
  }
  const after = await hub.ask({ type: "stats" }, "stats");
  return {
    cpuPercent: ((after.cpuMicros - before.cpuMicros) / 1000 / (after.at - before.at)) * 100,
    rssMiB: after.rssBytes / 2 ** 20,
    peakRssMiB: peakRss / 2 ** 20,
    heapMiB: after.heapBytes / 2 ** 20,
    connected: after.connected,
  };
}

// ---- the agent processes -------------------------------------------------------------------

const connectedAt = new Map<string, number>();
const dropsAt: number[] = [];
const probeSeen = new Map<string, number>();
let reportsSent = 0;
const workers: ChildProcess[] = [];

function startWorker(request: WorkerRequest): Promise<number> {
  const child = fork(path.join(here, "agent-worker.ts"), [], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  workers.push(child);
  return new Promise((resolve) => {
    child.on("message", (reply: WorkerReply) => {
      if (reply.type === "connected") connectedAt.set(reply.cluster, reply.at);
      else if (reply.type === "disconnected") {
        connectedAt.delete(reply.cluster);
        dropsAt.push(reply.at);
      } else if (reply.type === "probe") probeSeen.set(reply.name, reply.at);
      else if (reply.type === "reports") reportsSent += reply.sent;
      else if (reply.type === "enrolled") {
        for (const [message, n] of Object.entries(reply.failures))
          console.log(`  enrollment attempts that failed and were retried: ${n} × ${message}`);
        resolve(reply.ms);
      } else if (reply.type === "error") console.error(`agent worker: ${reply.message}`);
    });
    child.send(request);
  });
}

async function stopWorkers(): Promise<void> {
  await Promise.all(
    workers.map(
      (child) =>
        new Promise<void>((resolve) => {
          child.once("exit", () => resolve());
          child.send({ type: "stop" } satisfies WorkerRequest);
        }),
    ),
  );
}

async function waitUntil(what: string, check: () => boolean, timeoutMs: number): Promise<boolean> {
  const end = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > end) {
      console.log(`  (gave up waiting for ${what} after ${timeoutMs / 1000} s)`);
      return false;
    }
    await sleep(50);
  }
  return true;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** `count` probes, one every `gapMs`, to clusters picked at random: each one's delta latency. */
async function probeLatencies(
  hub: HubProcess,
  clusters: string[],
  count: number,
  tag: string,
): Promise<number[]> {
  const sent = new Map<string, number>();
  for (let i = 0; i < count; i++) {
    const name = `probe-${tag}-${i}`;
    // A connected agent: one that is away gets the Task in its snapshot when it returns, which
    // measures its absence, not the delta path.
    const online = clusters.filter((c) => connectedAt.has(c));
    const cluster = (online.length > 0 ? online : clusters)[
      Math.floor(Math.random() * (online.length || clusters.length))
    ]!;
    sent.set(name, (await hub.ask({ type: "probe", cluster, name }, "probe")).sentAt);
    await sleep(20 + Math.random() * 80);
  }
  await waitUntil(`${tag} probes`, () => [...sent.keys()].every((n) => probeSeen.has(n)), 30_000);
  return [...sent]
    .filter(([name]) => probeSeen.has(name))
    .map(([name, at]) => probeSeen.get(name)! - at)
    .sort((a, b) => a - b);
}

const fmt = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(1)} ms`);
const latencyLine = (what: string, sorted: number[]) =>
  `  ${what}: n=${sorted.length} p50 ${fmt(percentile(sorted, 50))}  p99 ${fmt(percentile(sorted, 99))}  max ${fmt(sorted.at(-1) ?? Number.NaN)}`;

// ---- the run -------------------------------------------------------------------------------

const dataDir = await mkdtemp(path.join(tmpdir(), "rlark-bench-agents-"));
const [httpPort, sshPort] = [await freePort(), await freePort()];
let hub = new HubProcess(dataDir, httpPort, sshPort);
const runStarted = performance.now();
try {
  await hub.ready;
  console.log(
    `== ${agentCount} agents, ${workerCount} agent processes, one hub process (pid ${hub.pid}); load average ${loadavg()[0]!.toFixed(1)} ==`,
  );
  const idle = await hubLoad(hub, 10_000);
  console.log(
    `baseline: hub idle, no agents: CPU ${idle.cpuPercent.toFixed(1)} % of a core, RSS ${idle.rssMiB.toFixed(0)} MiB, heap ${idle.heapMiB.toFixed(0)} MiB`,
  );

  const clusters = Array.from({ length: agentCount }, (_, i) => `c${String(i).padStart(4, "0")}`);
  let t0 = performance.now();
  const setup = await hub.ask({ type: "setup", clusters }, "setup");
  console.log(
    `${agentCount} Clusters written and ${agentCount} enrollment tokens made: ${fmt(performance.now() - t0)}`,
  );

  // Baseline: one agent alone, the same probes.
  t0 = performance.now();
  const first = clusters[0]!;
  const enrollOne = startWorker({
    type: "start",
    hub: setup.ssh,
    caHash: setup.caHash,
    agents: [{ cluster: first, token: setup.tokens[0]! }],
  });
  await enrollOne;
  await waitUntil("the first agent", () => connectedAt.has(first), 30_000);
  const alone = await probeLatencies(hub, [first], Math.min(probeCount, 100), "alone");

  t0 = performance.now();
  const per = Math.ceil((agentCount - 1) / workerCount);
  const enrolled = await Promise.all(
    Array.from({ length: workerCount }, (_, w) => {
      const slice = clusters.slice(1 + w * per, 1 + (w + 1) * per);
      const tokens = setup.tokens.slice(1 + w * per, 1 + (w + 1) * per);
      return startWorker({
        type: "start",
        hub: setup.ssh,
        caHash: setup.caHash,
        agents: slice.map((cluster, i) => ({ cluster, token: tokens[i]! })),
      });
    }),
  );
  console.log(
    `enrollment (RSA key, certificate over the enrollment subsystem), ${workerCount} processes in parallel: all ${fmt(performance.now() - t0)} (slowest process ${fmt(Math.max(...enrolled))})`,
  );
  await waitUntil("every agent connected", () => connectedAt.size === agentCount, 300_000);
  console.log(
    `all ${connectedAt.size} agents connected ${fmt(performance.now() - t0)} after enrollment began`,
  );

  // Settle: every agent's first report written, then the steady state is measured.
  await sleep(12_000);
  const steady = await hubLoad(hub, steadyMs);
  console.log(
    `steady, ${steady.connected} agents on the hub, a report from each every 10 s, over ${steadyMs / 1000} s: hub CPU ${steady.cpuPercent.toFixed(1)} % of a core, RSS ${steady.rssMiB.toFixed(0)} MiB (peak ${steady.peakRssMiB.toFixed(0)}), heap ${steady.heapMiB.toFixed(0)} MiB`,
  );
  console.log(
    `  vs idle: CPU +${(steady.cpuPercent - idle.cpuPercent).toFixed(1)} points, RSS ×${(steady.rssMiB / idle.rssMiB).toFixed(2)} (${(((steady.rssMiB - idle.rssMiB) * 1024) / agentCount).toFixed(0)} KiB per agent)`,
  );

  const loaded = await probeLatencies(hub, clusters, probeCount, "loaded");
  console.log(
    "desired-state delta, Task written into the hub's store → the agent's tunnel client has it (target p99 < 1 s):",
  );
  console.log(latencyLine(`one agent alone (baseline)   `, alone));
  console.log(latencyLine(`${agentCount} agents reporting       `, loaded));
  console.log(`  p99 ratio ${(percentile(loaded, 99) / percentile(alone, 99)).toFixed(2)}× the baseline`);

  // The storm: the hub stops (as for an upgrade) and starts again on the same data directory.
  dropsAt.length = 0;
  const stopAt = wallNow();
  await hub.stop();
  const stoppedAt = wallNow();
  await waitUntil("every agent to notice", () => connectedAt.size === 0, 60_000);
  hub = new HubProcess(dataDir, httpPort, sshPort);
  const readyAt = await hub.ready;
  const allBack = await waitUntil("every agent back", () => connectedAt.size === agentCount, 180_000);
  const back = [...connectedAt.values()].filter((at) => at > readyAt).sort((a, b) => a - b);
  const lastBack = back.at(-1) ?? Number.NaN;
  console.log(
    `reconnect storm: hub stopped in ${fmt(stoppedAt - stopAt)}, down ${fmt(readyAt - stoppedAt)} until the new hub listened (target: all back < 60 s)`,
  );
  console.log(
    `  ${back.length} of ${agentCount} back ${allBack ? "" : "(NOT all) "}${fmt(lastBack - readyAt)} after the hub listened, ${fmt(lastBack - stopAt)} after it was stopped; p50 ${fmt(percentile(back, 50) - readyAt)}, p90 ${fmt(percentile(back, 90) - readyAt)}`,
  );
  console.log(
    `  failed attempts and drops during the storm: ${dropsAt.length - agentCount} (beyond the ${agentCount} drops of the stop)`,
  );
  // The spread: reconnects per second after the hub listened. A herd shows as one tall bar.
  const perSecond = new Map<number, number>();
  for (const at of back)
    perSecond.set(
      Math.floor((at - readyAt) / 1000),
      (perSecond.get(Math.floor((at - readyAt) / 1000)) ?? 0) + 1,
    );
  const seconds = [...perSecond.keys()].sort((a, b) => a - b);
  console.log(
    `  reconnects per second after the hub listened: ${seconds.map((s) => `${s}s:${perSecond.get(s)}`).join(" ")}`,
  );
  const after = await hubLoad(hub, 10_000);
  console.log(
    `after the storm, over 10 s: hub CPU ${after.cpuPercent.toFixed(1)} % of a core, RSS ${after.rssMiB.toFixed(0)} MiB, ${after.connected} agents on the hub`,
  );
  const again = await probeLatencies(hub, clusters, Math.min(probeCount, 100), "after");
  console.log(latencyLine(`delta after the storm        `, again));
} finally {
  await stopWorkers();
  await hub.stop().catch(() => undefined);
  await rm(dataDir, { recursive: true, force: true });
  console.log(
    `status reports sent by the agents: ${reportsSent}; total ${fmt(performance.now() - runStarted)}`,
  );
}
