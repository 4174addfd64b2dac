// `node hack/bench/hub/run.ts [jobs] [clusters] [nodes-per-cluster] [--kubeconfig FILE]`: one git
// revision with N Jobs (3 tasks each) against M clusters' node reports. Prints the time from hub
// start until every Task is placed and created, and the hub's peak RSS. Asserts nothing. With
// --kubeconfig the hub runs on the kubernetes store of that apiserver, with the CRDs installed
// for the run under a group of its own (deleted after).
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { stringify } from "yaml";
import { customResourceDefinitions, kinds } from "../../../operators/api/index.ts";
import { loadKubeConfig, type StoreSettings, startHub } from "../../../operators/hub/index.ts";
import { KubeHttp } from "../../../operators/lib/kube-http.ts";
import { jsonLogger, type Logger, silentLogger } from "../../../operators/lib/logger.ts";
import {
  KubernetesStore,
  openKubernetesStore,
  openSqliteStore,
  type Store,
} from "../../../operators/lib/store/index.ts";
import { seedClusters } from "./seed-nodes.ts";

const { values: flags, positionals } = parseArgs({
  options: {
    kubeconfig: { type: "string" },
    /** The hub's warnings and errors on stderr. */
    verbose: { type: "boolean" },
    /** Also print the figures as one JSON line (compare.ts reads it). */
    json: { type: "boolean" },
    /** Give up (and say so) after this many seconds. */
    "timeout-s": { type: "string" },
  },
  allowPositionals: true,
});
const timeoutMs = Number(flags["timeout-s"] ?? 1800) * 1000;
const jobs = Number(positionals[0] ?? 10_000);
const clusters = Number(positionals[1] ?? 50);
const nodesPerCluster = Number(positionals[2] ?? 20);
const API = "rlinf.io/v1alpha1";

function task(name: string, role: string, gpu: boolean, replicas: number) {
  return {
    name,
    role,
    agentType: "Kubernetes",
    ...(gpu ? { nodeSelector: { "nvidia.com/gpu": "true" } } : {}),
    kubernetes: {
      workload: {
        kind: "Deployment",
        replicas,
        template: {
          spec: {
            containers: [
              {
                name: "main",
                image: "pytorch/pytorch:2.3.0",
                resources: {
                  requests: { cpu: "1", memory: "2Gi", ...(gpu ? { "nvidia.com/gpu": "1" } : {}) },
                },
              },
            ],
          },
        },
      },
    },
  };
}

const work = await mkdtemp(path.join(tmpdir(), "rlark-bench-hub-"));
const repoDir = path.join(work, "repo");
try {
  const repo = repoDir;
  await mkdir(path.join(repo, "jobs"), { recursive: true });
  await mkdir(path.join(repo, "clusters"), { recursive: true });
  console.log(`generating ${jobs} Jobs x 3 tasks and ${clusters} Clusters ...`);
  for (let c = 0; c < clusters; c++) {
    await writeFile(
      path.join(repo, "clusters", `c${c}.yaml`),
      stringify({
        apiVersion: API,
        kind: "Cluster",
        metadata: { name: `c${c}` },
        spec: { runtime: "kubernetes" },
      }),
    );
  }
  // Many Jobs per file, as large repositories are usually laid out.
  for (let f = 0; f < jobs / 100; f++) {
    const docs = [];
    for (let j = f * 100; j < Math.min(jobs, (f + 1) * 100); j++) {
      docs.push(
        stringify({
          apiVersion: API,
          kind: "Job",
          metadata: { name: `job-${j}` },
          spec: {
            tasks: [
              task("learner", "Actor", true, 1),
              task("rollout", "Rollout", false, 2),
              task("env", "Env", false, 1),
            ],
          },
        }),
      );
    }
    await writeFile(path.join(repo, "jobs", `batch-${f}.yaml`), docs.join("---\n"));
  }
  const git = (...args: string[]) => execFileSync("git", args, { cwd: repo, stdio: "ignore" });
  git("init", "-q", "-b", "main");
  git("add", "-A");
  git("-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-qm", "bench");

  const dataDir = path.join(work, "data");
  const settings: StoreSettings = flags.kubeconfig
    ? {
        backend: "kubernetes",
        kubeconfig: flags.kubeconfig,
        namespace: "default",
        servedGroup: `b${randomBytes(4).toString("hex")}.bench.rlark.io`,
      }
    : { backend: "sqlite" };
  const crds =
    settings.backend === "kubernetes"
      ? await installCrds(settings.kubeconfig!, settings.servedGroup!)
      : undefined;
  try {
    await mkdir(dataDir, { recursive: true });
    await seedNodes(settings, dataDir);
    console.log("starting the hub ...");
    const figures = await runHub(settings, dataDir);
    const perSecond = (jobs / (figures.placedMs / 1000)).toFixed(1);
    console.log(
      `\n${jobs} Jobs x 3 tasks over ${clusters} clusters x ${nodesPerCluster} nodes, ${settings.backend} store (this machine: 2 cores)`,
    );
    console.log(`  revision validated and applied:  ${(figures.appliedMs / 1000).toFixed(1)} s`);
    console.log(
      `  every Task placed and created:   ${(figures.placedMs / 1000).toFixed(1)} s   (${perSecond} Jobs/s; target < 30 s)`,
    );
    console.log(`  hub peak RSS:                    ${figures.peakMiB.toFixed(0)} MiB   (target < 1024 MiB)`);
    if (figures.requests) {
      const total = Object.values(figures.requests).reduce((a, b) => a + b, 0);
      console.log(
        `  apiserver requests by the hub:   ${total} (${Object.entries(figures.requests)
          .map(([verb, n]) => `${verb} ${n}`)
          .join(", ")})`,
      );
    }
    console.log("  for comparison, Flux's published benchmark reconciles 1000 Kustomizations in 4 min 16 s");
    if (flags.json) {
      console.log(JSON.stringify({ jobs, clusters, nodesPerCluster, store: settings.backend, ...figures }));
    }
  } finally {
    await crds?.remove();
  }
} finally {
  await rm(work, { recursive: true, force: true });
}

/** The agents' node reports, as the tunnel glue writes them, before the hub starts. */
async function seedNodes(settings: StoreSettings, dataDir: string): Promise<void> {
  const seed: Store =
    settings.backend === "kubernetes"
      ? openKubernetesStore({
          kubeConfig: loadKubeConfig(settings.kubeconfig),
          resources: kinds.map(({ kind, plural, namespaced }) => ({ kind, plural, namespaced })),
          apiVersion: API,
          servedGroup: settings.servedGroup!,
          cache: false,
        })
      : openSqliteStore({ dataDir });
  await seedClusters(seed, clusters, nodesPerCluster);
  await seed.close();
}

interface Figures {
  appliedMs: number;
  placedMs: number;
  peakMiB: number;
  /** Requests the hub's store sent to the apiserver, by verb (kubernetes store only). */
  requests?: Record<string, number>;
}

async function runHub(settings: StoreSettings, dataDir: string): Promise<Figures> {
  const logger: Logger = flags.verbose ? quiet(jsonLogger("hub")) : silentLogger;
  const started = performance.now();
  const hub = await startHub({
    dataDir,
    http: "127.0.0.1:0",
    ssh: "127.0.0.1:0",
    repo: repoDir,
    branch: "main",
    intervalMs: 3_600_000,
    logger,
    store: settings,
    // One hub, so nobody to fail over to: durations that a machine busy with the bench itself
    // cannot run out (it measures throughput, not takeover).
    leaderElection: {
      leaseName: `bench-${randomBytes(3).toString("hex")}`,
      leaseMs: 120_000,
      renewDeadlineMs: 90_000,
      retryMs: 5_000,
    },
  });
  try {
    while (!hub.leading()) await new Promise((resolve) => setTimeout(resolve, 100));
    const expected = jobs * 3;
    let appliedMs: number | undefined;
    let lastReport = performance.now();
    for (;;) {
      const counts = await hub.store.countByKind();
      const now = performance.now();
      if (appliedMs === undefined && (counts.Job ?? 0) >= jobs) appliedMs = now - started;
      const tasks = counts.Task ?? 0;
      if (tasks >= expected) break;
      if (now - started > timeoutMs) {
        throw new Error(`${tasks} of ${expected} Tasks after ${(timeoutMs / 1000).toFixed(0)} s: gave up`);
      }
      if (now - lastReport >= 10_000) {
        console.log(
          `  ${counts.Job ?? 0} Jobs, ${tasks} Tasks after ${((now - started) / 1000).toFixed(1)} s${requestsText(hub.store)}`,
        );
        lastReport = now;
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const placedMs = performance.now() - started;
    const requests = requestsOf(hub.store);
    return {
      appliedMs: appliedMs ?? placedMs,
      placedMs,
      peakMiB: process.resourceUsage().maxRSS / 1024,
      ...(requests ? { requests: { ...requests } } : {}),
    };
  } finally {
    await hub.stop();
  }
}

function requestsOf(store: Store): Readonly<Record<string, number>> | undefined {
  return store instanceof KubernetesStore ? store.requestsSent : undefined;
}

function requestsText(store: Store): string {
  const requests = requestsOf(store);
  return requests ? ` (requests: ${JSON.stringify(requests)})` : "";
}

/** Warnings and errors only: the info lines of a 10,000-Job revision would drown them. */
function quiet(logger: Logger): Logger {
  return { info: () => undefined, warn: logger.warn, error: logger.error };
}

/** The project's CRDs under `group` (so a run never meets an installation), Established. */
async function installCrds(kubeconfig: string, group: string) {
  const http = new KubeHttp({ kubeConfig: loadKubeConfig(kubeconfig) });
  const path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
  const names: string[] = [];
  for (const crd of customResourceDefinitions()) {
    const body = structuredClone(crd) as { metadata: { name: string }; spec: { group: string } };
    body.metadata.name = `${body.metadata.name.split(".")[0]}.${group}`;
    body.spec.group = group;
    await http.request("POST", path, { body });
    names.push(body.metadata.name);
  }
  for (const name of names) {
    for (;;) {
      const crd = await http.request<{ status?: { conditions?: { type: string; status: string }[] } }>(
        "GET",
        `${path}/${name}`,
      );
      if (crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True")) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  await new Promise((resolve) => setTimeout(resolve, 2000)); // discovery of new CRDs lags Established
  return {
    async remove() {
      for (const name of names) await http.request("DELETE", `${path}/${name}`).catch(() => undefined);
      http.close();
    },
  };
}
