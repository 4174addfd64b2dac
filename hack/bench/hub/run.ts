// `node hack/bench/hub/run.ts [jobs] [clusters] [nodes-per-cluster] [--kubeconfig FILE]
// [--changed 10]`: one git revision with N Jobs (3 tasks each) against M clusters' node reports.
// Prints the time from hub start until every Task is placed and created, and the hub's peak RSS.
// Then one more revision that changes --changed Jobs (each in a file of its own, the image of one
// task): the time from the hub's trigger until that revision is applied, and until the hub has
// reconciled every changed Job (its status observed the new generation). Asserts nothing. With
// --kubeconfig the hub runs on the kubernetes store of that apiserver, with the CRDs installed
// for the run under a group of its own (deleted after).
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { stringify } from "yaml";
import { customResourceDefinitions, kinds } from "../../../operators/api/index.ts";
import { type Hub, loadKubeConfig, type StoreSettings, startHub } from "../../../operators/hub/index.ts";
import { KubeHttp } from "../../../operators/lib/kube-http.ts";
import { jsonLogger, type Logger, silentLogger } from "../../../operators/lib/logger.ts";
import {
  type KubeObject,
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
    /** Jobs the second, incremental revision changes (0: none). */
    changed: { type: "string" },
    /**
     * Processes whose CPU seconds and RSS to report beside the hub's (with --kubeconfig: the
     * kube-apiserver and its etcd, to state what the kubernetes store costs the API server).
     */
    "server-pid": { type: "string", multiple: true },
  },
  allowPositionals: true,
});
const timeoutMs = Number(flags["timeout-s"] ?? 1800) * 1000;
const jobs = Number(positionals[0] ?? 10_000);
const clusters = Number(positionals[1] ?? 50);
const nodesPerCluster = Number(positionals[2] ?? 20);
const changed = Math.min(jobs, Number(flags.changed ?? 10));
const API = "rlinf.io/v1alpha1";
const JOBS_PER_FILE = 100;

function task(name: string, role: string, gpu: boolean, replicas: number, image = "pytorch/pytorch:2.3.0") {
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
                image,
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

/** One Job's YAML, its name left as JOB_NAME: rendered once, so 100,000 Jobs are written in seconds. */
function jobText(image?: string): string {
  return stringify({
    apiVersion: API,
    kind: "Job",
    metadata: { name: "JOB_NAME" },
    spec: {
      tasks: [
        task("learner", "Actor", true, 1),
        task("rollout", "Rollout", false, 2),
        task("env", "Env", false, 1, image),
      ],
    },
  });
}
const JOB_TEXT = jobText();
const CHANGED_JOB_TEXT = jobText("pytorch/pytorch:2.4.0");

/** The file of Jobs f*100 .. f*100+99; the Jobs in `newer` have another image in their env task. */
async function writeBatch(repo: string, f: number, newer: ReadonlySet<number> = new Set()): Promise<void> {
  const docs = [];
  for (let j = f * JOBS_PER_FILE; j < Math.min(jobs, (f + 1) * JOBS_PER_FILE); j++) {
    docs.push((newer.has(j) ? CHANGED_JOB_TEXT : JOB_TEXT).replace("JOB_NAME", `job-${j}`));
  }
  await writeFile(path.join(repo, "jobs", `batch-${f}.yaml`), docs.join("---\n"));
}

/** Jobs to change in the incremental revision: one per file, spread over the repository. */
function changedJobs(): number[] {
  const files = Math.ceil(jobs / JOBS_PER_FILE);
  const out: number[] = [];
  for (let i = 0; i < changed; i++) {
    const f = Math.floor((i * files) / changed);
    out.push(Math.min(jobs - 1, f * JOBS_PER_FILE + (i % JOBS_PER_FILE)));
  }
  return [...new Set(out)];
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
  for (let f = 0; f < jobs / JOBS_PER_FILE; f++) await writeBatch(repo, f);
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
    const servers = (flags["server-pid"] ?? []).map(Number);
    const serversBefore = servers.map(processCpu);
    const figures = await runHub(settings, dataDir);
    const serverCost = servers.map((pid, i) => ({
      pid,
      name: processName(pid),
      cpuS: processCpu(pid) - (serversBefore[i] ?? 0),
      rssMiB: processRssMiB(pid),
    }));
    const perSecond = (jobs / (figures.placedMs / 1000)).toFixed(1);
    console.log(
      `\n${jobs} Jobs x 3 tasks over ${clusters} clusters x ${nodesPerCluster} nodes, ${settings.backend} store (this machine: 2 cores)`,
    );
    console.log(`  revision validated and applied:  ${(figures.appliedMs / 1000).toFixed(1)} s`);
    console.log(
      `  every Task placed and created:   ${(figures.placedMs / 1000).toFixed(1)} s   (${perSecond} Jobs/s; target at 100,000 x 3 over 1,000 x 10: < 60 s)`,
    );
    console.log(
      `  CPU of the process until then:   ${figures.cpuS.toFixed(1)} s (user + system, over 2 cores)`,
    );
    console.log(
      `  hub peak RSS:                    ${figures.peakMiB.toFixed(0)} MiB   (target at 100,000 x 3 over 1,000 x 10: < 1536 MiB)`,
    );
    const inc = figures.incremental;
    if (inc) {
      console.log(
        `  a revision changing ${inc.jobs} Jobs:    applied ${(inc.appliedMs / 1000).toFixed(2)} s (CPU ${inc.appliedCpuS.toFixed(2)} s), changed Jobs reconciled ${(inc.reconciledMs / 1000).toFixed(2)} s   (target < 1 s)`,
      );
    }
    if (figures.requests) {
      const total = Object.values(figures.requests).reduce((a, b) => a + b, 0);
      console.log(
        `  apiserver requests by the hub:   ${total} (${Object.entries(figures.requests)
          .map(([verb, n]) => `${verb} ${n}`)
          .join(", ")})`,
      );
    }
    for (const server of serverCost) {
      console.log(
        `  ${server.name} (pid ${server.pid}): ${server.cpuS.toFixed(1)} CPU s meanwhile, ${server.rssMiB.toFixed(0)} MiB RSS now`,
      );
    }
    console.log("  for comparison, Flux's published benchmark reconciles 1000 Kustomizations in 4 min 16 s");
    if (flags.json) {
      console.log(
        JSON.stringify({
          jobs,
          clusters,
          nodesPerCluster,
          store: settings.backend,
          ...figures,
          servers: serverCost,
        }),
      );
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

interface Incremental {
  jobs: number;
  /** From the trigger until the source reports the revision applied (fetch, checkout, validate, apply). */
  appliedMs: number;
  /** CPU seconds of the process meanwhile (the hub's, and this bench's waiting). */
  appliedCpuS: number;
  /** From the trigger until every changed Job's status observed its new generation. */
  reconciledMs: number;
}

interface Figures {
  incremental?: Incremental;
  /** CPU seconds the process spent from the hub's start until every Task was created. */
  cpuS: number;
  appliedMs: number;
  placedMs: number;
  peakMiB: number;
  /** Requests the hub's store sent to the apiserver, by verb (kubernetes store only). */
  requests?: Record<string, number>;
}

async function runHub(settings: StoreSettings, dataDir: string): Promise<Figures> {
  const logger: Logger = flags.verbose ? quiet(jsonLogger("hub")) : silentLogger;
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
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
    // Counted from watch events (the objects are not even parsed): a count query over the whole
    // store every tick would be a cost of the bench inside the process it measures.
    const counts: Record<string, number> = { Job: 0, Task: 0 };
    const watches = await Promise.all(
      Object.keys(counts).map((kind) =>
        hub.store.watch(kind, {}, (event) => {
          if (event.type === "ADDED") counts[kind] = (counts[kind] ?? 0) + 1;
          else if (event.type === "DELETED") counts[kind] = (counts[kind] ?? 0) - 1;
        }),
      ),
    );
    let appliedMs: number | undefined;
    let lastReport = performance.now();
    for (;;) {
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
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const placedMs = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    for (const watch of watches) watch.stop();
    const peakMiB = process.resourceUsage().maxRSS / 1024;
    const requests = requestsOf(hub.store);
    const incremental = changed > 0 ? await incrementalRevision(hub) : undefined;
    return {
      appliedMs: appliedMs ?? placedMs,
      placedMs,
      cpuS: (cpu.user + cpu.system) / 1e6,
      peakMiB,
      ...(requests ? { requests: { ...requests } } : {}),
      ...(incremental ? { incremental } : {}),
    };
  } finally {
    await hub.stop();
  }
}

/** A revision that changes `changed` Jobs, each in a file of its own; the hub is told at once. */
async function incrementalRevision(hub: Hub): Promise<Incremental> {
  const picked = changedJobs();
  const generations = new Map<string, number>();
  for (const j of picked) {
    const job = await hub.store.get("Job", undefined, `job-${j}`);
    generations.set(`job-${j}`, job?.metadata.generation ?? 0);
  }
  const byFile = new Map<number, Set<number>>();
  for (const j of picked) {
    const f = Math.floor(j / JOBS_PER_FILE);
    byFile.set(f, (byFile.get(f) ?? new Set()).add(j));
  }
  for (const [f, newer] of byFile) await writeBatch(repoDir, f, newer);
  const git = (...args: string[]) => execFileSync("git", args, { cwd: repoDir, stdio: "ignore" });
  git("add", "-A");
  git("-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-qm", "change a few Jobs");
  const revision = execFileSync("git", ["rev-parse", "HEAD"], { cwd: repoDir, encoding: "utf8" }).trim();
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const status = await hub.source!.watcher.trigger();
  const appliedCpu = process.cpuUsage(cpuBefore);
  const appliedMs = performance.now() - started;
  if (status.lastAppliedRevision !== revision) {
    throw new Error(`the incremental revision was not applied: ${JSON.stringify(status.errors.slice(0, 3))}`);
  }
  for (;;) {
    let pending = 0;
    for (const [name, before] of generations) {
      const job = await hub.store.get<KubeObject & { status?: { observedGeneration?: number } }>(
        "Job",
        undefined,
        name,
      );
      const generation = job?.metadata.generation ?? 0;
      if (generation <= before || (job?.status?.observedGeneration ?? 0) < generation) pending++;
    }
    if (pending === 0) break;
    if (performance.now() - started > timeoutMs)
      throw new Error(`${pending} changed Jobs not reconciled: gave up`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return {
    jobs: picked.length,
    appliedMs,
    appliedCpuS: (appliedCpu.user + appliedCpu.system) / 1e6,
    reconciledMs: performance.now() - started,
  };
}

function requestsOf(store: Store): Readonly<Record<string, number>> | undefined {
  return store instanceof KubernetesStore ? store.requestsSent : undefined;
}

function requestsText(store: Store): string {
  const requests = requestsOf(store);
  return requests ? ` (requests: ${JSON.stringify(requests)})` : "";
}

/** user + system CPU seconds of a process so far (Linux /proc; clock ticks of 1/100 s). */
function processCpu(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function processRssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith("VmRSS:"));
  return Number(line?.split(/\s+/)[1] ?? 0) / 1024;
}

function processName(pid: number): string {
  return readFileSync(`/proc/${pid}/comm`, "utf8").trim();
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
