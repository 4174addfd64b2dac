// `node hack/bench/hub/revision.ts [jobs=100000] [changed=10]`: the hub's revision path alone (the
// applier it runs on every git revision: load, validate, apply to a SQLite store; no controllers,
// no git): one revision of N Jobs (3 tasks each, 100 per file), then one that changes `changed`
// Jobs, each in a file of its own. Prints wall time, CPU seconds and RSS for each. Asserts
// nothing (docs/benchmarks/placement-scale.md quotes the figures). `--profile FILE` writes a CPU
// profile (.cpuprofile, for Chrome's DevTools) of the changed revision alone. Each revision is a
// git commit whose blob ids (`git ls-tree`, as the hub's watcher lists them) are handed to the
// applier, as the hub does; `--plain` hands none (a plain directory: every file read and hashed).
import { execFileSync } from "node:child_process";
import { cp, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { Session } from "node:inspector/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { stringify } from "yaml";
import { silentLogger } from "../../../operators/lib/logger.ts";
import { openSqliteStore } from "../../../operators/lib/store/index.ts";
import { createRevisionApplier, gitIn, treeBlobs } from "../../../operators/source/index.ts";

const args = process.argv.slice(2);
const profileAt = args.indexOf("--profile");
const profileFile = profileAt === -1 ? undefined : args.splice(profileAt, 2)[1];
const plainAt = args.indexOf("--plain");
const plain = plainAt !== -1;
if (plain) args.splice(plainAt, 1);
const jobs = Number(args[0] ?? 100_000);
const changed = Number(args[1] ?? 10);
const API = "rlinf.io/v1alpha1";
const PER_FILE = 100;

function task(name: string, role: string, image = "pytorch/pytorch:2.3.0") {
  const requests = { cpu: "1", memory: "2Gi" };
  const containers = [{ name: "main", image, resources: { requests } }];
  return {
    name,
    role,
    agentType: "Kubernetes",
    kubernetes: { workload: { kind: "Deployment", replicas: 1, template: { spec: { containers } } } },
  };
}

/** One Job's YAML with its name left as JOB_NAME: rendered once, written N times. */
function jobText(image?: string): string {
  return stringify({
    apiVersion: API,
    kind: "Job",
    metadata: { name: "JOB_NAME" },
    spec: { tasks: [task("learner", "Actor"), task("rollout", "Rollout"), task("env", "Env", image)] },
  });
}
const SAME = jobText();
const CHANGED = jobText("pytorch/pytorch:2.4.0");

async function writeBatch(dir: string, f: number, newer: ReadonlySet<number> = new Set()): Promise<void> {
  const docs: string[] = [];
  for (let j = f * PER_FILE; j < Math.min(jobs, (f + 1) * PER_FILE); j++)
    docs.push((newer.has(j) ? CHANGED : SAME).replace("JOB_NAME", `job-${j}`));
  await writeFile(path.join(dir, "jobs", `batch-${f}.yaml`), docs.join("---\n"));
}

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;
const GIT_ENV = {
  ...process.env,
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_AUTHOR_NAME: "bench",
  GIT_AUTHOR_EMAIL: "bench@localhost",
  GIT_COMMITTER_NAME: "bench",
  GIT_COMMITTER_EMAIL: "bench@localhost",
};
const git = (dir: string, ...gitArgs: string[]) =>
  execFileSync("git", gitArgs, { cwd: dir, env: GIT_ENV, stdio: ["ignore", "ignore", "inherit"] });

/** Commits the tree at `dir` and lists its blob ids as the watcher does; prints what listing took. */
async function commit(dir: string, first: boolean): Promise<ReadonlyMap<string, string> | undefined> {
  if (plain) return undefined;
  if (first) git(dir, "init", "--quiet");
  git(dir, "add", "--all");
  git(dir, "commit", "--quiet", "-m", "revision");
  const started = performance.now();
  const blobs = await treeBlobs(gitIn(dir), "HEAD");
  if (!first)
    console.log(
      `  git ls-tree of the changed revision: ${((performance.now() - started) / 1000).toFixed(2)} s (a git process)`,
    );
  return blobs;
}
const root = await mkdtemp(path.join(tmpdir(), "rlark-bench-revision-"));
const store = openSqliteStore({ dataDir: path.join(root, "data") });
try {
  const files = Math.ceil(jobs / PER_FILE);
  const first = path.join(root, "r1");
  await mkdir(path.join(first, "jobs"), { recursive: true });
  for (let f = 0; f < files; f++) await writeBatch(first, f);
  const firstBlobs = await commit(first, true);
  const second = path.join(root, "r2");
  await cp(first, second, { recursive: true });
  for (let i = 0; i < changed; i++) {
    const f = Math.floor((i * files) / changed);
    await writeBatch(second, f, new Set([f * PER_FILE + (i % PER_FILE)]));
  }
  const secondBlobs = await commit(second, false);
  const apply = createRevisionApplier({
    store,
    artifactDir: path.join(root, "artifacts"),
    logger: silentLogger,
  });
  console.log(
    `${jobs} Jobs x 3 tasks in ${files} files, then ${changed} of them changed (this machine: 2 cores; ${plain ? "plain directories: files hashed" : "git commits: blob ids"})`,
  );
  for (const [revision, dir, blobs] of [
    ["r1", first, firstBlobs],
    ["r2", second, secondBlobs],
  ] as const) {
    const profiler = revision === "r2" && profileFile ? new Session() : undefined;
    if (profiler) {
      profiler.connect();
      await profiler.post("Profiler.enable");
      await profiler.post("Profiler.setSamplingInterval", { interval: 200 });
      await profiler.post("Profiler.start");
    }
    const started = performance.now();
    const cpu = process.cpuUsage();
    const result = await apply({ revision, dir, path: ".", ...(blobs ? { blobs } : {}) });
    const used = process.cpuUsage(cpu);
    if (profiler && profileFile) {
      const { profile } = await profiler.post("Profiler.stop");
      await writeFile(profileFile, JSON.stringify(profile));
      profiler.disconnect();
    }
    if (!result.accepted)
      throw new Error(`${revision} refused: ${JSON.stringify(result.errors.slice(0, 3))}`);
    console.log(
      `  ${revision === "r1" ? "whole revision   " : "changed revision "} ${((performance.now() - started) / 1000).toFixed(2)} s, CPU ${((used.user + used.system) / 1e6).toFixed(2)} s, RSS ${mib(process.memoryUsage().rss)} (peak ${mib(process.resourceUsage().maxRSS * 1024)}); ${JSON.stringify({ ...result.changes, bundleObjects: undefined })}`,
    );
  }
} finally {
  await store.close();
  await rm(root, { recursive: true, force: true });
}
