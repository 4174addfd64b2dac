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
import { startHub } from "../../../operators/hub/hub.ts";
import { loadKubeConfig, type StoreSettings } from "../../../operators/hub/store-wiring.ts";
import { KubeHttp } from "../../../operators/lib/kube-http.ts";
import { silentLogger } from "../../../operators/lib/logger.ts";
import { openKubernetesStore, openSqliteStore, type Store } from "../../../operators/lib/store/index.ts";

const { values: flags, positionals } = parseArgs({
  options: { kubeconfig: { type: "string" } },
  allowPositionals: true,
});
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
try {
  const repo = path.join(work, "repo");
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

  // The agents' node reports, as the tunnel glue writes them, before the hub starts.
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
  await mkdir(dataDir, { recursive: true });
  const seed: Store =
    settings.backend === "kubernetes"
      ? openKubernetesStore({
          kubeConfig: loadKubeConfig(settings.kubeconfig),
          resources: kinds.map(({ kind, plural, namespaced }) => ({ kind, plural, namespaced })),
          apiVersion: API,
          servedGroup: settings.servedGroup!,
        })
      : openSqliteStore({ dataDir });
  for (let c = 0; c < clusters; c++) {
    await seed.create({
      apiVersion: API,
      kind: "Cluster",
      metadata: { name: `c${c}`, labels: { "rlark.io/managed-by": "git" } },
      spec: { runtime: "kubernetes" },
      status: { phase: "Online" },
    });
    for (let n = 0; n < nodesPerCluster; n++) {
      const gpu = n % 2 === 0;
      await seed.create({
        apiVersion: API,
        kind: "Node",
        metadata: {
          name: `n${n}`,
          namespace: `agent-c${c}`,
          labels: gpu ? { "nvidia.com/gpu": "true" } : {},
        },
        spec: { unschedulable: false },
        status: {
          phase: "Online",
          allocatable: {
            cpu: "256",
            memory: "1024Gi",
            pods: "1000",
            ...(gpu ? { "nvidia.com/gpu": "64" } : {}),
          },
          capacity: {
            cpu: "256",
            memory: "1024Gi",
            pods: "1000",
            ...(gpu ? { "nvidia.com/gpu": "64" } : {}),
          },
          requested: {},
          conditions: [{ type: "Ready", status: "True" }],
        },
      });
    }
  }
  await seed.close();

  console.log("starting the hub ...");
  const started = performance.now();
  const hub = await startHub({
    dataDir,
    http: "127.0.0.1:0",
    ssh: "127.0.0.1:0",
    repo,
    branch: "main",
    intervalMs: 3_600_000,
    logger: silentLogger,
    store: settings,
    leaderElection: { leaseName: `bench-${randomBytes(3).toString("hex")}` },
  });
  while (!hub.leading()) await new Promise((resolve) => setTimeout(resolve, 100));
  const expected = jobs * 3;
  let applied: number | undefined;
  let last = 0;
  for (;;) {
    const counts = await hub.store.countByKind();
    if (applied === undefined && (counts.Job ?? 0) >= jobs) applied = performance.now() - started;
    const tasks = counts.Task ?? 0;
    if (tasks >= expected) break;
    if (tasks - last >= 5_000) {
      console.log(`  ${tasks} Tasks after ${((performance.now() - started) / 1000).toFixed(1)} s`);
      last = tasks;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const placed = performance.now() - started;
  const peakMiB = process.resourceUsage().maxRSS / 1024;
  await hub.stop();
  console.log(
    `\n${jobs} Jobs x 3 tasks over ${clusters} clusters x ${nodesPerCluster} nodes, ${settings.backend} store (this machine: 2 cores)`,
  );
  console.log(`  revision validated and applied:  ${((applied ?? placed) / 1000).toFixed(1)} s`);
  console.log(`  every Task placed and created:   ${(placed / 1000).toFixed(1)} s   (target < 30 s)`);
  console.log(`  hub peak RSS:                    ${peakMiB.toFixed(0)} MiB   (target < 1024 MiB)`);
  console.log("  for comparison, Flux's published benchmark reconciles 1000 Kustomizations in 4 min 16 s");
  await crds?.remove();
} finally {
  await rm(work, { recursive: true, force: true });
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
