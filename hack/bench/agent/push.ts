// `node hack/bench/agent/push.ts [deployments=2000] [--clusters 4] [--nodes N] [--verbose]`
//
// One git push → N Deployments across C clusters of a local fleet (hack/kube, kwok nodes; its own
// fleet directory, .cache/fleet-push-<C>, so the tests' fleet keeps its shape), one kubernetes
// agent per cluster, all in this process with the hub. Baseline in the same run: `kubectl apply
// --server-side` of the same objects to the same API servers, one kubectl per cluster, all
// started at once, timed from their start to the last exit. Prints figures; asserts nothing.
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { KubeConfig } from "@kubernetes/client-node";
import { type ClusterEntry, repoRoot } from "../../kube/paths.ts";
import { deleteNamespace } from "./kube.ts";
import { ensureKubectl, runKubectlBaseline } from "./kubectl.ts";
import { type PushFleetResult, runPushFleetBench } from "./push-fleet.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    clusters: { type: "string", default: "4" },
    nodes: { type: "string" },
    verbose: { type: "boolean", default: false },
  },
});
const deployments = Number(positionals[0] ?? 2000);
const clusterCount = Number(values.clusters);
/** A kwok node of hack/kube holds 110 pods (`allocatable.pods`), as a kubelet's default does. */
const PODS_PER_NODE = 110;
// Placement waits for room a node reports and kubectl does not look: with fewer pod slots than
// Deployments (one replica each) the run would measure waiting for room that never comes.
const roomyNodes = Math.max(3, Math.ceil(deployments / clusterCount / PODS_PER_NODE));
const nodeCount = values.nodes === undefined ? roomyNodes : Number(values.nodes);
if (nodeCount * PODS_PER_NODE * clusterCount < deployments)
  console.log(
    `note: ${clusterCount} clusters x ${nodeCount} nodes hold ${nodeCount * PODS_PER_NODE * clusterCount} pods, fewer than ${deployments} Deployments: placement will wait for room (kubectl does not)`,
  );
const seconds = (ms: number | undefined) => (ms === undefined ? "—" : `${(ms / 1000).toFixed(2)} s`);
const ratio = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined ? "—" : `x${(a / b).toFixed(2)}`;

console.log(
  `push → workloads: ${deployments} Deployments over ${clusterCount} clusters; ${cpus().length} cores, load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")} at start`,
);
const fleetDir = path.join(repoRoot, ".cache", `fleet-push-${clusterCount}`);
const env = { ...process.env, RLARK_FLEET_DIR: fleetDir };
const fleet = (verb: "up" | "down", ...args: string[]) =>
  spawnSync("bash", [path.join(repoRoot, `hack/kube/${verb}`), ...args, "--holder", String(process.pid)], {
    stdio: ["ignore", 2, 2],
    env,
  });
const up = fleet("up", "--clusters", String(clusterCount), "--nodes", String(nodeCount));
if (up.status !== 0) throw new Error(`hack/kube/up failed (exit ${up.status ?? up.signal})`);
try {
  const entries = JSON.parse(readFileSync(path.join(fleetDir, "clusters.json"), "utf8")) as ClusterEntry[];
  const clusters = entries.slice(0, clusterCount).map((e, i) => ({
    name: `push-${i}`,
    kubeconfigFile: e.kubeconfig,
  }));
  const namespace = `bench-push-${randomBytes(3).toString("hex")}`;
  let result: PushFleetResult | undefined;
  try {
    result = await runPushFleetBench({
      deployments,
      clusters,
      namespace,
      timeoutMs: 300_000,
      verbose: values.verbose,
    });
  } finally {
    await Promise.all(clusters.map((c) => deleteNamespace(kubeConfigOf(c.kubeconfigFile), namespace)));
  }
  console.log(
    `${result.jobs} Jobs x 2 Deployments; commit + push ${seconds(result.commitMs)}; from the push:`,
  );
  console.log(`  ${"every Task placed (hub store)".padEnd(44)} ${seconds(result.placedMs)}`);
  console.log(`  ${"every Task in its agent's desired set".padEnd(44)} ${seconds(result.receivedMs)}`);
  console.log(`  ${"first Deployment created".padEnd(44)} ${seconds(result.firstMs)}`);
  console.log(`  ${`all ${deployments} Deployments created`.padEnd(44)} ${seconds(result.allMs)}`);
  for (const c of result.perCluster)
    console.log(
      `    ${c.name}: ${c.deployments} created, first ${seconds(c.firstMs)}, all ${seconds(c.allMs)}, ${c.applies} applies`,
    );
  console.log(
    `the agents got ${result.upserts} Task upserts in ${result.messages} desired-set messages; event-loop delay (hub + ${clusterCount} agents): p50 ${result.loopDelay.p50.toFixed(0)} ms, p99 ${result.loopDelay.p99.toFixed(0)} ms, max ${result.loopDelay.max.toFixed(0)} ms`,
  );

  const kubectl = ensureKubectl();
  const kubectlNamespace = `bench-kubectl-${randomBytes(3).toString("hex")}`;
  console.log(`\n== baseline: ${clusterCount} x kubectl apply --server-side, all at once ==`);
  try {
    const runs = await Promise.all(
      clusters.map((c) =>
        runKubectlBaseline({
          kubectl,
          kubeconfigFile: c.kubeconfigFile,
          namespace: kubectlNamespace,
          objects: result?.rendered.get(c.name) ?? [],
        }),
      ),
    );
    const wallMs = Math.max(...runs.map((r) => r.wallMs));
    const firstMs = Math.min(...runs.map((r) => r.firstMs ?? Number.POSITIVE_INFINITY));
    console.log(`${runs[0]?.version}; the slowest kubectl, start → exit: ${seconds(wallMs)}`);
    for (const [i, r] of runs.entries())
      console.log(`    ${clusters[i]?.name}: ${r.created} created, kubectl ${seconds(r.wallMs)}`);
    console.log(`  ${"kubectl: first Deployment created".padEnd(44)} ${seconds(firstMs)}`);
    console.log(
      `\npush → all ${deployments} created / kubectl's time: ${ratio(result.allMs, wallMs)} (target <= x0.3); ` +
        `push → first created: ${seconds(result.firstMs)} (target < 0.5 s)`,
    );
  } finally {
    await Promise.all(clusters.map((c) => deleteNamespace(kubeConfigOf(c.kubeconfigFile), kubectlNamespace)));
  }
} finally {
  fleet("down");
}

function kubeConfigOf(file: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(file);
  return kc;
}
