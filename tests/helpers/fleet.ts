// The shared local fleet for end-to-end tests: real kube-apiservers, started once per test run by
// the first test file that asks for a cluster, shared by every e2e file of the run, and stopped
// by tests/e2e/setup/fleet-down.ts (tap's "after") when the run ends. Inside tap the run (the tap
// runner, this file's parent) registers as a holder of the fleet, so parallel test runs in one
// checkout share one fleet and the last one stops it; a test run without e2e files never starts
// it. Outside tap (`node some.test.ts`) the fleet is started if needed and left running.
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { type ClusterEntry, fleetDir, repoRoot } from "../../hack/kube/paths.ts";

export interface FleetCluster extends ClusterEntry {
  /** A fresh admin KubeConfig (client certificate, system:masters) for this cluster. */
  kubeConfig: KubeConfig;
}

const ensured = new Set<string>();

/** Starts the fleet with `hack/kube/up` (or joins the running one); returns its clusters.json. */
export function ensureFleet(env: NodeJS.ProcessEnv = process.env, shape = fleetShape(env)): string {
  const dir = fleetDir(env);
  const summary = join(dir, "clusters.json");
  const inTap = env.TAP === "1";
  if (!ensured.has(dir) && (inTap || !existsSync(summary))) {
    const holder = inTap ? ["--holder", String(process.ppid)] : [];
    const run = spawnSync("bash", [join(repoRoot, "hack/kube/up"), ...shape, ...holder], {
      stdio: ["ignore", "inherit", "inherit"],
      env,
    });
    if (run.status !== 0) throw new Error(`hack/kube/up failed (exit ${run.status ?? run.signal})`);
  }
  ensured.add(dir);
  return summary;
}

/** `--clusters N --nodes K` for the test fleet: RLARK_FLEET_CLUSTERS / RLARK_FLEET_NODES, or 2 x 3. */
export function fleetShape(env: NodeJS.ProcessEnv = process.env): string[] {
  return ["--clusters", env.RLARK_FLEET_CLUSTERS || "2", "--nodes", env.RLARK_FLEET_NODES || "3"];
}

/**
 * The shared fleet with real nodes (docs/kube.md, "Real nodes"): a folder of its own beside the
 * kwok fleet's (`RLARK_REAL_FLEET_DIR`, default `<fleet dir>-real`), 2 clusters of one kwok and
 * one real node each, started by the first file that asks and stopped after the run like the
 * kwok fleet. Its tests live in tests/e2e/real-nodes/ and need root.
 */
export const REAL_FLEET_SHAPE = ["--clusters", "2", "--nodes", "1", "--real-nodes", "1"];

export function realFleetDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.RLARK_REAL_FLEET_DIR || `${fleetDir(env)}-real`;
}

/** Every cluster of the shared real-node fleet; pin pods to `real-0` with the real-node label. */
export function realNodeFleetClusters(env: NodeJS.ProcessEnv = process.env): FleetCluster[] {
  return loadClusters(ensureFleet({ ...env, RLARK_FLEET_DIR: realFleetDir(env) }, REAL_FLEET_SHAPE));
}

/** Every cluster of the shared fleet, each with its own admin KubeConfig. */
export function fleetClusters(env: NodeJS.ProcessEnv = process.env): FleetCluster[] {
  return loadClusters(ensureFleet(env));
}

function loadClusters(summary: string): FleetCluster[] {
  const entries = JSON.parse(readFileSync(summary, "utf8")) as ClusterEntry[];
  return entries.map((entry) => {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(entry.kubeconfig);
    return { ...entry, kubeConfig };
  });
}

/** The first cluster (or the index-th) of the shared fleet. */
export function fleetCluster(index = 0, env: NodeJS.ProcessEnv = process.env): FleetCluster {
  const all = fleetClusters(env);
  const cluster = all[index];
  if (!cluster) throw new Error(`the fleet has ${all.length} clusters, not ${index + 1}`);
  return cluster;
}

interface Teardown {
  teardown(fn: () => unknown): void;
}

/**
 * Creates a namespace with a random suffix for one test and deletes it when the test ends, so
 * test files running in parallel on the same cluster never see each other's objects.
 */
export async function testNamespace(t: Teardown, kc: KubeConfig, prefix = "test"): Promise<string> {
  const name = `${prefix}-${randomBytes(4).toString("hex")}`;
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name, labels: { "rlark.io/test": "true" } } } });
  t.teardown(async () => {
    await core.deleteNamespace({ name }).catch(() => undefined);
  });
  return name;
}

/** `promise`, or a rejection naming `what` after `timeoutMs`; the timer never outlives it. */
export async function within<T>(what: string, promise: Promise<T>, timeoutMs = 30_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} within ${timeoutMs / 1000}s`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
