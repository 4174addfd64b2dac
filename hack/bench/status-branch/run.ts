// `node hack/bench/status-branch/run.ts [--objects N] [--revisions R] [--changed-per-revision K]
// [--layouts flat,sharded] [--samples S]`: drives the hub's own status branch writer
// (operators/feedback, createStatusBranchWriter) against a real bare repository on this machine.
// First commit: every object's status; then R revisions, each changing K objects' status (what one
// debounce window collects) and flushed as one commit. Prints, per layout, the commit time p50/p99,
// the writer's CPU (its own and the git processes it ran) and memory, and the growth of the remote
// bare repository and of the writer's clone: measured as they are (loose objects and small packs,
// what a live hub leaves between garbage collections) and after `git gc`. Asserts nothing.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import {
  createStatusBranchWriter,
  renderStatusYaml,
  type StatusBranchLayout,
  type StatusDocument,
  statusDocumentPath,
} from "../../../operators/feedback/index.ts";
import { createGitRepository } from "../../../operators/source/index.ts";
import { cpuSecondsWithReaped } from "../probes.ts";

const { values } = parseArgs({
  options: {
    objects: { type: "string", default: "100000" },
    revisions: { type: "string", default: "1000" },
    "changed-per-revision": { type: "string", default: "10" },
    layouts: { type: "string", default: "flat,sharded" },
    samples: { type: "string", default: "10" },
  },
});
const objects = Number(values.objects);
const revisions = Number(values.revisions);
const changedPerRevision = Number(values["changed-per-revision"]);
const samples = Math.max(1, Number(values.samples));
const layouts = values.layouts.split(",") as StatusBranchLayout[];
if (
  ![objects, revisions, changedPerRevision].every((n) => Number.isInteger(n) && n >= 1) ||
  changedPerRevision > objects ||
  layouts.some((l) => l !== "flat" && l !== "sharded")
) {
  console.error(
    "usage: run.ts [--objects N] [--revisions R] [--changed-per-revision K<=N] [--layouts flat,sharded] [--samples S]",
  );
  process.exit(2);
}

const PHASES = ["Pending", "Running", "Succeeded", "Failed"] as const;

/**
 * One object's status file as statusDocuments renders it: a Job (a tenth of the objects are Nodes
 * in `agent-<cluster>` namespaces, ten per cluster, like 1,000 clusters × 10 nodes at 100,000).
 */
function render(i: number, run: number): StatusDocument {
  const node = i % 10 === 9;
  const name = node ? `node-${i}` : `train-${String(i).padStart(6, "0")}`;
  const namespace = node ? `agent-c${Math.floor(i / 100)}` : undefined;
  const kind = node ? "Node" : "Job";
  const phase = PHASES[(i + run) % PHASES.length]!;
  const view = {
    apiVersion: "rlinf.io/v1alpha1",
    kind,
    metadata: { name, ...(namespace ? { namespace } : {}), generation: 1, source: `jobs/${name}.yaml:1` },
    status: node
      ? { capacity: { cpu: "64", memory: "512Gi", "nvidia.com/gpu": "8" }, requested: { cpu: `${run % 64}` } }
      : {
          phase,
          run,
          conditions: [
            {
              type: "Placed",
              status: "True",
              reason: "Placed",
              message: `3 tasks on cluster c${i % 1000}`,
              lastTransitionTime: new Date(1_700_000_000_000 + run * 1000).toISOString(),
            },
          ],
          tasks: [
            { name: `${name}-actor`, cluster: `c${i % 1000}`, phase },
            { name: `${name}-rollout`, cluster: `c${i % 1000}`, phase },
            { name: `${name}-env`, cluster: `c${(i + 1) % 1000}`, phase },
          ],
        },
  };
  return { path: statusDocumentPath(kind, name, namespace), content: renderStatusYaml(view) };
}

const git = (dir: string, ...args: string[]) =>
  execFileSync("git", ["-C", dir, ...args], { encoding: "utf8", maxBuffer: 1 << 28 }).trim();
const bytes = (dir: string) => Number(execFileSync("du", ["-sb", dir], { encoding: "utf8" }).split("\t")[0]);
const mib = (n: number) => (n / 2 ** 20).toFixed(1);
const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
};

interface Figures {
  layout: StatusBranchLayout;
  firstCommitS: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  cpuPerRevisionMs: number;
  cpuP50Ms: number;
  cpuP99Ms: number;
  peakRssMiB: number;
  remoteFirst: number;
  remoteEnd: number;
  remoteGc: number;
  cloneEnd: number;
  curve: { revision: number; remote: number; clone: number; p50Ms: number }[];
}

async function bench(layout: StatusBranchLayout, initial: readonly StatusDocument[]): Promise<Figures> {
  const work = await mkdtemp(path.join(tmpdir(), "rlark-bench-status-"));
  try {
    const remoteDir = path.join(work, "remote.git");
    execFileSync("git", ["init", "--bare", "--quiet", "-b", "main", remoteDir]);
    const empty = git(remoteDir, "hash-object", "-t", "tree", "-w", "/dev/null");
    const seed = execFileSync("git", ["-C", remoteDir, "commit-tree", empty, "-m", "manifests"], {
      encoding: "utf8",
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: "b",
        GIT_AUTHOR_EMAIL: "b@b",
        GIT_COMMITTER_NAME: "b",
        GIT_COMMITTER_EMAIL: "b@b",
      },
    }).trim();
    git(remoteDir, "update-ref", "refs/heads/main", seed);
    const dataDir = path.join(work, "data");
    const remote = createGitRepository({ url: `file://${remoteDir}`, branch: "main", dataDir });
    const runs = new Array<number>(objects).fill(0);
    const documents = [...initial];
    const writer = createStatusBranchWriter({ remote, dataDir, layout, documents: () => documents });
    let peakRss = 0;
    const sampler = setInterval(() => {
      peakRss = Math.max(peakRss, process.memoryUsage().rss);
    }, 50);
    try {
      let started = performance.now();
      const first = await writer.flush();
      const firstCommitS = (performance.now() - started) / 1000;
      if (!first.committed) throw new Error("the first commit wrote nothing");
      const cloneDir = path.join(dataDir, "status");
      const remoteFirst = bytes(remoteDir);
      const times: number[] = [];
      const cpus: number[] = [];
      const curve: Figures["curve"] = [];
      const cpuBefore = cpuSecondsWithReaped(process.pid);
      let seedRandom = 1;
      const random = () => {
        seedRandom = (seedRandom * 1_103_515_245 + 12_345) % 2 ** 31;
        return seedRandom / 2 ** 31;
      };
      for (let revision = 1; revision <= revisions; revision++) {
        for (let c = 0; c < changedPerRevision; c++) {
          const i = Math.floor(random() * objects);
          runs[i] = runs[i]! + 1;
          documents[i] = render(i, runs[i]!);
        }
        started = performance.now();
        const cpuStart = cpuSecondsWithReaped(process.pid);
        const result = await writer.flush();
        times.push(performance.now() - started);
        cpus.push((cpuSecondsWithReaped(process.pid) - cpuStart) * 1000);
        if (!result.committed) throw new Error(`revision ${revision} committed nothing`);
        if (revision % Math.max(1, Math.floor(revisions / samples)) === 0 || revision === revisions) {
          curve.push({
            revision,
            remote: bytes(remoteDir),
            clone: bytes(cloneDir),
            p50Ms: quantile(times.slice(-Math.max(1, Math.floor(revisions / samples))), 0.5),
          });
          const last = curve.at(-1)!;
          console.log(
            `  ${layout} r${revision}: remote ${mib(last.remote)} MiB, writer clone ${mib(last.clone)} MiB, p50 ${last.p50Ms.toFixed(0)} ms`,
          );
        }
      }
      const cpu = cpuSecondsWithReaped(process.pid) - cpuBefore;
      await writer.stop();
      const remoteEnd = bytes(remoteDir);
      const cloneEnd = bytes(cloneDir);
      spawnSync("git", ["-C", remoteDir, "gc", "--quiet", "--prune=now"], { stdio: "inherit" });
      const remoteGc = bytes(remoteDir);
      const commits = Number(git(remoteDir, "rev-list", "--count", writer.statusBranch));
      if (commits !== revisions + 1) throw new Error(`expected ${revisions + 1} commits, found ${commits}`);
      return {
        layout,
        firstCommitS,
        p50Ms: quantile(times, 0.5),
        p99Ms: quantile(times, 0.99),
        maxMs: Math.max(...times),
        cpuPerRevisionMs: (cpu * 1000) / revisions,
        cpuP50Ms: quantile(cpus, 0.5),
        cpuP99Ms: quantile(cpus, 0.99),
        peakRssMiB: peakRss / 2 ** 20,
        remoteFirst,
        remoteEnd,
        remoteGc,
        cloneEnd,
        curve,
      };
    } finally {
      clearInterval(sampler);
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

console.log(
  `status branch: ${objects} objects, ${revisions} revisions × ${changedPerRevision} changed, layouts ${layouts.join(", ")}`,
);
let started = performance.now();
const cpuStart = process.cpuUsage();
const initial = Array.from({ length: objects }, (_, i) => render(i, 0));
const renderCpu = process.cpuUsage(cpuStart);
console.log(
  `rendering every status file once (renderStatusYaml, what statusDocuments did on every commit): ${((performance.now() - started) / 1000).toFixed(1)} s, ${((renderCpu.user + renderCpu.system) / 1e6).toFixed(1)} s CPU`,
);
const results: Figures[] = [];
for (const layout of layouts) {
  started = performance.now();
  results.push(await bench(layout, initial));
  console.log(`  ${layout}: ${((performance.now() - started) / 1000).toFixed(0)} s in all`);
}
const perRevision = (f: Figures) => (f.remoteEnd - f.remoteFirst) / revisions;
console.log(
  "\n| layout | first commit | commit p50 | p99 | max | CPU / commit p50, p99, mean (writer + git) | peak RSS | remote after first | remote growth / revision | remote after gc | writer clone |",
);
console.log("|---|---|---|---|---|---|---|---|---|---|---|");
for (const f of results)
  console.log(
    `| ${f.layout} | ${f.firstCommitS.toFixed(1)} s | ${f.p50Ms.toFixed(0)} ms | ${f.p99Ms.toFixed(0)} ms | ${f.maxMs.toFixed(0)} ms | ${f.cpuP50Ms.toFixed(0)}, ${f.cpuP99Ms.toFixed(0)}, ${f.cpuPerRevisionMs.toFixed(0)} ms | ${f.peakRssMiB.toFixed(0)} MiB | ${mib(f.remoteFirst)} MiB | ${(perRevision(f) / 1024).toFixed(1)} KiB | ${mib(f.remoteGc)} MiB | ${mib(f.cloneEnd)} MiB |`,
  );
const base = results[0]!;
for (const f of results.slice(1))
  console.log(
    `${f.layout} vs ${base.layout}: commit p50 ${(f.p50Ms / base.p50Ms).toFixed(2)}×, CPU ${(f.cpuPerRevisionMs / base.cpuPerRevisionMs).toFixed(2)}×, remote growth per revision ${(perRevision(f) / perRevision(base)).toFixed(3)}×, after gc ${(f.remoteGc / base.remoteGc).toFixed(2)}×`,
  );
console.log("\ngrowth curve (remote bare repository, writer clone, commit p50 over the interval):");
for (const f of results)
  console.log(
    `${f.layout}: ${f.curve.map((c) => `r${c.revision} ${mib(c.remote)}/${mib(c.clone)} MiB ${c.p50Ms.toFixed(0)} ms`).join("; ")}`,
  );
