// `node hack/bench/agent/run.ts [tasks=200] [--samples 300] [--rate 200] [--skip-kube] [--skip-tunnel]`
//
// 1. One git revision with N Kubernetes Tasks → hub → placement → tunnel → kubernetes agent →
//    server-side apply on a real local control plane (hack/kube; started if not running and
//    stopped again only if this run started it): when each stage has seen all N.
// 2. Tunnel round trip (hub delta → agent ack) over ssh2 with real PKI and over plain TCP with
//    the same NDJSON channel, idle and while status reports flow.
// Prints the figures; asserts nothing. Everything listens on 127.0.0.1 only.
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { cpus, loadavg } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import type { KubeConfig } from "@kubernetes/client-node";
import { fleetCluster, fleetShape } from "../../../tests/helpers/fleet.ts";
import { repoRoot } from "../../kube/paths.ts";
import { deleteNamespace, type KubeResult, runKubeBench } from "./kube.ts";
import { ensureKubectl, runKubectlBaseline } from "./kubectl.ts";
import { type LatencyRow, percentile, reportBytes, runTunnelBench } from "./tunnel.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    samples: { type: "string", default: "300" },
    rate: { type: "string", default: "200" },
    "skip-kube": { type: "boolean", default: false },
    "skip-tunnel": { type: "boolean", default: false },
    verbose: { type: "boolean", default: false },
  },
});
const tasks = Number(positionals[0] ?? 200);
const samples = Number(values.samples);
const rate = Number(values.rate);

const seconds = (ms: number | undefined) => (ms === undefined ? "—" : `${(ms / 1000).toFixed(1)} s`);
const millis = (ms: number) => (ms < 10 ? ms.toFixed(2) : ms.toFixed(1)).padStart(7);

console.log(
  `rlark agent benchmark: ${cpus().length} cores, load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")} at start`,
);

async function kubePart(): Promise<void> {
  // Join the shared fleet as a holder: a fleet this run starts is stopped at the end, one that
  // tests or a person started is left as it was.
  const fleetScript = (verb: "up" | "down", ...args: string[]) =>
    spawnSync("bash", [path.join(repoRoot, `hack/kube/${verb}`), ...args, "--holder", String(process.pid)], {
      stdio: ["ignore", 2, 2],
    });
  const up = fleetScript("up", ...fleetShape());
  if (up.status !== 0) throw new Error(`hack/kube/up failed (exit ${up.status ?? up.signal})`);
  let baseline: { agent: KubeResult } | undefined;
  try {
    const cluster = fleetCluster(0);
    const namespace = `bench-agent-${randomBytes(3).toString("hex")}`;
    console.log(`\n== one git revision → ${tasks} workloads on ${cluster.name} (namespace ${namespace}) ==`);
    try {
      const result = await runKubeBench({
        tasks,
        namespace,
        kubeconfigFile: cluster.kubeconfig,
        timeoutMs: 150_000,
        verbose: values.verbose,
      });
      console.log(
        `${result.tasks} Tasks = ${result.jobs} Jobs x 2 Deployments (1 replica, 10m CPU) on ${result.nodes} kwok nodes; hub polls git every 200 ms`,
      );
      console.log(
        `commit + push of the revision: ${seconds(result.commitMs)}; times below are from the push`,
      );
      for (const m of result.milestones) {
        const done = m.ms === undefined ? `not reached (${m.reached}/${m.expected})` : seconds(m.ms);
        console.log(`  ${`${m.what} (${m.expected})`.padEnd(48)} ${done}`);
      }
      console.log(
        `the agent got ${result.upserts} Task upserts in ${result.messages} desired-set messages and made ${result.applies} server-side applies`,
      );
      const { p50, p99, max } = result.loopDelay;
      console.log(
        `event-loop delay of this process (hub + agent + poller): p50 ${p50.toFixed(0)} ms, p99 ${p99.toFixed(0)} ms, max ${max.toFixed(0)} ms`,
      );
      baseline = { agent: result };
    } finally {
      const cleanup = await deleteNamespace(cluster.kubeConfig, namespace);
      console.log(`  ${"namespace deleted with everything in it".padEnd(48)} ${seconds(cleanup)}`);
    }
    if (baseline) await kubectlPart(cluster.kubeconfig, cluster.kubeConfig, baseline.agent);
  } finally {
    fleetScript("down");
  }
}

/** kubectl apply --server-side of what the agent applied, into a fresh namespace of the same API server. */
async function kubectlPart(kubeconfigFile: string, kc: KubeConfig, agent: KubeResult): Promise<void> {
  const kubectl = ensureKubectl();
  const namespace = `bench-kubectl-${randomBytes(3).toString("hex")}`;
  const deployments = agent.rendered.filter((o) => o.kind === "Deployment").length;
  console.log(
    `\n== baseline: kubectl apply --server-side of the same ${agent.rendered.length} objects (namespace ${namespace}) ==`,
  );
  try {
    const k = await runKubectlBaseline({ kubectl, kubeconfigFile, namespace, objects: agent.rendered });
    console.log(`${k.version}; one process, start to exit: ${seconds(k.wallMs)}`);
    console.log(`  ${"kubectl: first Deployment created".padEnd(48)} ${seconds(k.firstMs)}`);
    console.log(`  ${`kubectl: all ${deployments} Deployments created`.padEnd(48)} ${seconds(k.allMs)}`);
    console.log(
      `  ${"agent, from the push: first Deployment created".padEnd(48)} ${seconds(agent.firstDeploymentMs)}`,
    );
    console.log(
      `  ${`agent, from the push: all ${deployments} created`.padEnd(48)} ${seconds(agent.allDeploymentsMs)}`,
    );
    const ratio = (a: number | undefined, b: number | undefined) =>
      a === undefined || b === undefined ? "—" : `x${(a / b).toFixed(2)}`;
    console.log(
      `push → all ${deployments} applied / kubectl's time (start to exit): ${ratio(agent.allDeploymentsMs, k.wallMs)}; ` +
        `push → first applied: ${seconds(agent.firstDeploymentMs)} (${ratio(agent.firstDeploymentMs, k.firstMs)} kubectl's first)`,
    );
  } finally {
    const cleanup = await deleteNamespace(kc, namespace);
    console.log(`  ${"namespace deleted with everything in it".padEnd(48)} ${seconds(cleanup)}`);
  }
}

function table(rows: LatencyRow[]): void {
  console.log(
    `${"transport".padEnd(10)}${"condition".padEnd(34)}${"p50".padStart(7)}${"p90".padStart(8)}${"p99".padStart(8)}${"max".padStart(8)}  reports/s at hub`,
  );
  for (const row of rows) {
    const sorted = [...row.samplesMs].sort((a, b) => a - b);
    const rateText = row.reportsPerSecond === undefined ? "" : row.reportsPerSecond.toFixed(0);
    console.log(
      `${row.transport.padEnd(10)}${row.condition.padEnd(34)}${[50, 90, 99].map((p) => millis(percentile(sorted, p))).join(" ")} ${millis(sorted.at(-1) ?? Number.NaN)}  ${rateText}`,
    );
  }
  console.log("(milliseconds)");
  const p50 = (transport: string, condition: string) => {
    const row = rows.find((r) => r.transport === transport && r.condition === condition);
    return row
      ? percentile(
          [...row.samplesMs].sort((a, b) => a - b),
          50,
        )
      : Number.NaN;
  };
  const ratios = [...new Set(rows.map((r) => r.condition))].map(
    (c) => `${c}: x${(p50("ssh", c) / p50("tcp", c)).toFixed(1)}`,
  );
  console.log(`ssh / tcp at p50: ${ratios.join("; ")}`);
}

async function tunnelPart(): Promise<void> {
  console.log("\n== tunnel round trip: the hub sends a one-Task delta, the agent acks it ==");
  console.log(
    `${samples} samples per row after 50 warm-up; a report is 3 Nodes + 50 Pods, ${(reportBytes() / 1024).toFixed(1)} KiB of JSON; hub, probe agent and load agent in one process (load agent: a worker thread)`,
  );
  table(await runTunnelBench({ samples, ratePerSecond: rate }));
}

const started = performance.now();
if (!values["skip-kube"]) await kubePart();
if (!values["skip-tunnel"]) await tunnelPart();
console.log(`\ntotal ${seconds(performance.now() - started)}`);
