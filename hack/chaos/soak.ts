// The chaos soak: the world of world.ts, a stream of commits (commits.ts) at a steady rate and,
// meanwhile, a fault (faults.ts) every so often, both drawn from one seed. Then the faults stop,
// the soak waits for quiet and checks what runs against the last valid revision of git:
// converged, nothing lost, nothing run twice, nothing leaked. hack/chaos/soak runs it from the
// command line on a fleet of its own; tests/e2e/chaos/soak.test.ts runs it short in npm test.
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Test } from "tap";
import { readNodeserverStats } from "../../operators/agent/index.ts";
import { documentPathOnBranch } from "../../operators/feedback/index.ts";
import type { Echo } from "../../tests/helpers/hub-processes.ts";
import {
  applyChange,
  type Change,
  type Desired,
  emptyDesired,
  nextChange,
  type RenderContext,
  renderFiles,
} from "./commits.ts";
import { type Fault, inject } from "./faults.ts";
import { type Counts, counts, kwokDeployments, liveTasks, starts } from "./observe.ts";
import { seeded } from "./random.ts";
import { leader, startWorld, type World } from "./world.ts";

export interface SoakOptions {
  durationMs: number;
  seed: number;
  faults: readonly Fault[];
  /** A fault every this often (the previous one over: a SIGSTOP lasts its time). */
  faultEveryMs: number;
  commitEveryMs: number;
  /** How long the soak waits for convergence once the faults stop. */
  quietBoundMs: number;
  /** The fleet's folder (state.json), for the API server and etcd faults. */
  fleetDir: string;
  /** Pids of the fleet's processes, counted with the soak's own for leaks. */
  fleetPids: () => number[];
  /** More flags for both hubs (leader-election timings). */
  hubFlags?: string[];
  /** Progress lines (a fault, a commit, the verdict). */
  log: (line: string) => void;
  /** The hubs' and agents' log lines. */
  echo: Echo;
}

export interface SoakResult {
  kills: number;
  commits: number;
  lost: number;
  duplicated: number;
  /** Seconds from the end of the faults to convergence; undefined when it did not converge. */
  convergedS: number | undefined;
  /** What did not converge (object and revision), what ran twice, what leaked. */
  problems: string[];
  line: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Revision {
  sha: string;
  desired: Desired;
  valid: boolean;
}

export async function runSoak(t: Test, options: SoakOptions): Promise<SoakResult> {
  const marker = `rlark-chaos-${options.seed}-${process.pid}`;
  // Temp dirs of everything the soak starts go under a folder of its own, so they can be counted.
  const tmpRoot = await mkdtemp(join(tmpdir(), "rlark-chaos-"));
  t.teardown(() => rm(tmpRoot, { recursive: true, force: true }));
  const savedTmp = process.env.TMPDIR;
  process.env.TMPDIR = tmpRoot;
  t.teardown(() => {
    if (savedTmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = savedTmp;
  });
  const log = options.log;
  const world = await startWorld(t, marker, options.echo, options.hubFlags);
  // Stopped before the teardowns run: they run last-registered first, so the nodeservers' and
  // agents' ends came while the supervisor still ran, and it started them again (a teardown that
  // never finished hung the file until tap's timeout).
  try {
    const ctx: RenderContext = { marker, startsLog: join(tmpRoot, "starts.log"), namespace: world.namespace };
    // Task processes run as the runtime's pod users: they may pass the folder and append to the log.
    await chmod(tmpRoot, 0o755);
    await writeFile(ctx.startsLog, "");
    await chmod(ctx.startsLog, 0o666);
    const git = world.hubs.git;
    const push = async (desired: Desired, invalid: boolean, message: string) => {
      const files: Record<string, string | null> = renderFiles(ctx, desired, invalid);
      // What the work tree holds now (a force-push's reset brought back a revision's files).
      for (const path of (await git.git("ls-files")).split("\n"))
        if (path && !(path in files)) files[path] = null;
      return git.commit(files, message);
    };
    const history: Revision[] = [];
    history.push({
      sha: await push(emptyDesired(), false, "chaos: start"),
      desired: emptyDesired(),
      valid: true,
    });

    // Before any fault: every part up and the first revision applied, then the counts to keep.
    const first = await waitQuiet(world, ctx, history, options.quietBoundMs, undefined, tmpRoot, options);
    if (first.problems.length > 0)
      throw new Error(`the soak's parts never settled: ${first.problems.join("; ")}`);
    const baseline = await counts(marker, tmpRoot, options.fleetPids());
    log(`chaos: seed ${options.seed}, ${options.durationMs / 1000} s, faults ${options.faults.join(",")}`);
    const { programs, ...figures } = baseline;
    log(`chaos: at start ${JSON.stringify(figures)}`);

    const commitRandom = seeded(options.seed);
    const faultRandom = seeded(options.seed ^ 0x5eed);
    const end = Date.now() + options.durationMs;
    let commits = 0;
    let kills = 0;
    const concurrent = new Set<string>();

    const commitLoop = async () => {
      while (Date.now() < end) {
        await sleep(options.commitEveryMs);
        const last = history.at(-1)!;
        const change: Change = nextChange(commitRandom, lastValid(history).desired, history.length > 2);
        if (change === "force-push") {
          // Rewrite the last commit: git reset to its parent, and a new commit pushed with --force.
          const dropped = history.pop()!;
          await git.git("reset", "--quiet", "--hard", "HEAD~1");
          const base = rebased(lastValid(history).desired, dropped.desired);
          const next = applyChange(commitRandom, base, nextChange(commitRandom, base, false));
          history.push({ sha: await push(next, false, "chaos: force-push"), desired: next, valid: true });
          log(`chaos: force-push over ${dropped.sha.slice(0, 8)}`);
        } else if (change === "invalid") {
          history.push({
            sha: await push(last.desired, true, "chaos: invalid"),
            desired: last.desired,
            valid: false,
          });
        } else {
          const next = applyChange(commitRandom, lastValid(history).desired, change);
          history.push({ sha: await push(next, false, `chaos: ${change}`), desired: next, valid: true });
        }
        commits++;
        if (history.length > 50) history.splice(0, history.length - 50);
      }
    };
    const faultLoop = async () => {
      while (Date.now() + options.faultEveryMs < end) {
        await sleep(options.faultEveryMs);
        const fault = faultRandom.pick(options.faults);
        const done = await inject(fault, world, faultRandom, options.fleetDir).catch(
          (error: Error) => `${fault} failed: ${error.message}`,
        );
        if (done) {
          if (done.startsWith("kill -9")) kills++;
          log(`chaos: ${((Date.now() - end + options.durationMs) / 1000).toFixed(0)} s: ${done}`);
        }
      }
    };
    // Two processes of one start key alive at once: a task run twice concurrently.
    let sampling = true;
    const sampleLoop = async () => {
      while (sampling) {
        for (const [key, pids] of await liveTasks(marker)) if (pids.length > 1) concurrent.add(key);
        await sleep(1000);
      }
    };
    const sampler = sampleLoop();
    await Promise.all([commitLoop(), faultLoop()]);
    // The last commit valid, so that the end state is a revision git says.
    if (!history.at(-1)!.valid) {
      const desired = lastValid(history).desired;
      history.push({ sha: await push(desired, false, "chaos: valid again"), desired, valid: true });
      commits++;
    }
    for (const exit of world.selfExits) log(`chaos: ${exit}, restarted`);
    log(`chaos: faults stopped after ${kills} kills and ${commits} commits; waiting for quiet`);
    const quietFrom = Date.now();
    const verdict = await waitQuiet(world, ctx, history, options.quietBoundMs, baseline, tmpRoot, options);
    sampling = false;
    await sampler;
    const convergedS = verdict.problems.length === 0 ? (Date.now() - quietFrom) / 1000 : undefined;

    const problems = [...verdict.problems];
    let duplicated = 0;
    for (const [key, count] of await starts(ctx.startsLog)) {
      if (count > 1) {
        duplicated++;
        problems.push(`${key} started ${count} times`);
      }
    }
    for (const key of concurrent) {
      duplicated++;
      problems.push(`${key} ran twice at once`);
    }
    const doubled = await doubledStatusCommits(world);
    duplicated += doubled.length;
    problems.push(...doubled.map((c) => `status commit ${c} changes nothing (doubled)`));
    const lost = verdict.lost;
    const line =
      convergedS !== undefined
        ? `chaos: ${kills} kills, ${commits} commits, ${lost} lost, ${duplicated} duplicated, converged in ${convergedS.toFixed(1)} s`
        : `chaos: ${kills} kills, ${commits} commits, ${lost} lost, ${duplicated} duplicated, not converged at ${lastValid(history).sha.slice(0, 8)}: ${verdict.problems.slice(0, 5).join("; ")}`;
    return { kills, commits, lost, duplicated, convergedS, problems, line };
  } finally {
    world.stopSupervising();
  }
}

function lastValid(history: Revision[]): Revision {
  for (let i = history.length - 1; i >= 0; i--) if (history[i]!.valid) return history[i]!;
  throw new Error("no valid revision");
}

/**
 * `base` (the revision a force-push goes back to) with a fresh gen for every object the dropped
 * revision had otherwise, and its name counter: what the dropped revision started or stopped
 * starts again under a new key, never under one already used.
 */
export function rebased(base: Desired, dropped: Desired): Desired {
  const out = structuredClone(base);
  out.counter = Math.max(base.counter, dropped.counter);
  for (const job of Object.values(out.jobs)) {
    const other = dropped.jobs[job.name];
    if (!other || other.gen !== job.gen || other.stopped !== job.stopped)
      job.gen = Math.max(job.gen, other?.gen ?? 0) + 1;
  }
  for (const wf of Object.values(out.workflows)) {
    const other = dropped.workflows[wf.name];
    if (!other || other.gen !== wf.gen || other.stopped !== wf.stopped)
      wf.gen = Math.max(wf.gen, other?.gen ?? 0) + 1;
  }
  return out;
}

interface Verdict {
  problems: string[];
  lost: number;
}

/** Polls `check` until it finds nothing wrong or `boundMs` passes; the last findings. */
async function waitQuiet(
  world: World,
  ctx: RenderContext,
  history: Revision[],
  boundMs: number,
  baseline: Counts | undefined,
  tmpRoot: string,
  options: SoakOptions,
): Promise<Verdict> {
  const until = Date.now() + boundMs;
  let verdict: Verdict = { problems: ["not checked"], lost: 0 };
  let nextReport = Date.now() + 30_000;
  while (Date.now() < until) {
    verdict = await check(world, ctx, lastValid(history), baseline, tmpRoot, options).catch(
      (error: Error) => ({
        problems: [`check failed: ${error.message}`],
        lost: 0,
      }),
    );
    if (verdict.problems.length === 0) return verdict;
    if (Date.now() >= nextReport) {
      nextReport = Date.now() + 30_000;
      options.log(`chaos: waiting for quiet: ${verdict.problems.slice(0, 3).join("; ")}`);
    }
    await sleep(2000);
  }
  return verdict;
}

interface Item {
  metadata: { name: string; namespace?: string };
  status?: { phase?: string; run?: number };
}

async function check(
  world: World,
  ctx: RenderContext,
  valid: Revision,
  baseline: Counts | undefined,
  tmpRoot: string,
  options: SoakOptions,
): Promise<Verdict> {
  const problems: string[] = [];
  let lost = 0;
  /** What the last valid revision wants and is not there: lost, unless it comes later. */
  const missing = (problem: string) => {
    lost++;
    problems.push(problem);
  };
  const rev = valid.sha.slice(0, 8);
  const { hubs } = world;
  const hub = await leader(world);
  if (!hub) return { problems: ["no hub leads"], lost: 0 };
  for (const h of world.hub)
    if (h.child?.exitCode !== null || h.child.signalCode !== null) problems.push(`hub ${h.name} is down`);
  for (const [name, agent] of Object.entries(world.agents))
    if (agent.child.exitCode !== null || agent.child.signalCode !== null)
      problems.push(`agent ${name} is down`);
  // Each nodeserver (restarted after its kill) serves again, on the peers state it read anew.
  for (const [name, nodeserver] of Object.entries(world.nodeservers)) {
    const stats = await readNodeserverStats(join(nodeserver.socketDir, "nodeserver.sock"), 15_000).catch(
      (error: Error) => error,
    );
    if (stats instanceof Error) problems.push(`nodeserver ${name} does not answer /stats: ${stats.message}`);
  }
  const source = (await hubs.api(hub, "/api/v1/source")) as { lastAppliedRevision?: string } | undefined;
  if (source?.lastAppliedRevision !== valid.sha)
    problems.push(
      `hub ${hub.name} applied ${source?.lastAppliedRevision?.slice(0, 8)}, git's last valid is ${rev}`,
    );
  const list = async (plural: string) =>
    ((await hubs.api(hub, `/api/v1/rlinf.io/v1alpha1/${plural}`))?.items ?? []) as Item[];
  const jobs = await list("jobs");
  const tasks = await list("tasks");
  const workflows = await list("workflows");
  const domains = await list("domains");
  const d = valid.desired;
  // Jobs of git (the Workflows' Jobs are the Workflows' check).
  const gitJobs = jobs.filter((j) => /^j\d+$/.test(j.metadata.name)).map((j) => j.metadata.name);
  for (const name of Object.keys(d.jobs))
    if (!gitJobs.includes(name)) missing(`Job ${name} of ${rev} missing`);
  for (const name of gitJobs) if (!d.jobs[name]) problems.push(`Job ${name} not in ${rev} but still there`);
  const domainNames = domains.map((x) => x.metadata.name);
  for (const name of Object.keys(d.domains))
    if (!domainNames.includes(name)) missing(`Domain ${name} of ${rev} missing`);
  for (const name of domainNames)
    if (!d.domains[name]) problems.push(`Domain ${name} not in ${rev} but still there`);

  const live = await liveTasks(ctx.marker);
  const deployments = await Promise.all(world.kwok.map((c) => kwokDeployments(c, ctx.namespace)));
  for (const job of Object.values(d.jobs)) {
    const taskThere = tasks.some((x) => x.metadata.name === `${job.name}-main`);
    if (!job.stopped && !taskThere) missing(`Task of Job ${job.name} (${rev}) missing`);
    if (job.stopped && taskThere) problems.push(`Task of stopped Job ${job.name} (${rev}) still there`);
    if (job.place === "local") {
      const key = `job:${job.name}:g${job.gen}`;
      const pids = live.get(key) ?? [];
      if (!job.stopped && pids.length === 0) missing(`${key} (${rev}) not running`);
      if (job.stopped && pids.length > 0) problems.push(`${key} of a stopped Job still running`);
    } else {
      const index = job.place === "kwok-1" ? 0 : 1;
      const gens = deployments[index]!.get(job.name) ?? [];
      const want = job.stopped ? [] : [String(job.gen)];
      if (gens.join() !== want.join()) {
        if (gens.length < want.length) lost++;
        problems.push(`Job ${job.name} on ${job.place}: Deployments of gen [${gens}], ${rev} says [${want}]`);
      }
      const elsewhere = deployments[1 - index]!.get(job.name) ?? [];
      if (elsewhere.length > 0) problems.push(`Job ${job.name} has a Deployment on the wrong cluster`);
    }
  }
  // Task processes no desired Job or Workflow step accounts for.
  for (const [key] of live) {
    const [kind, name, gen] = key.split(":");
    if (kind === "job") {
      const job = d.jobs[name!];
      if (!job || job.stopped || `g${job.gen}` !== gen) problems.push(`${key} runs, ${rev} does not want it`);
    }
  }
  for (let i = 0; i < 2; i++) {
    for (const job of deployments[i]!.keys()) {
      if (!d.jobs[job]) problems.push(`Deployment of Job ${job} on kwok-${i + 1}, ${rev} has no such Job`);
    }
  }
  const started = await starts(ctx.startsLog);
  for (const wf of Object.values(d.workflows)) {
    const got = workflows.find((x) => x.metadata.name === wf.name);
    if (!got) {
      lost++;
      problems.push(`Workflow ${wf.name} of ${rev} missing`);
      continue;
    }
    const want = wf.stopped ? "Stopped" : "Succeeded";
    if (got.status?.phase !== want)
      problems.push(`Workflow ${wf.name}: ${got.status?.phase}, ${rev} wants ${want}`);
    // A changed template does not rerun a finished Workflow, and whether git's intermediate
    // revisions were seen is not git's to say: each step ran once at least, under any gen.
    if (!wf.stopped) {
      for (const step of ["first", "second"]) {
        const prefix = `step:${wf.name}.${step}:`;
        if (![...started.keys()].some((key) => key.startsWith(prefix))) {
          lost++;
          problems.push(`${prefix} never ran`);
        }
      }
    }
  }
  for (const x of workflows)
    if (!d.workflows[x.metadata.name]) problems.push(`Workflow ${x.metadata.name} not in ${rev}`);
  // The status branch: a file for every Job git has.
  const statusFiles = (
    await world.hubs.git.gitBare("ls-tree", "-r", "--name-only", "rlark/status").catch(() => "")
  )
    .split("\n")
    .map(documentPathOnBranch);
  for (const job of Object.keys(d.jobs))
    if (!statusFiles.includes(`status/job/${job}.yaml`))
      problems.push(`no status/job/${job}.yaml on rlark/status`);

  if (baseline) {
    const now = await counts(ctx.marker, tmpRoot, options.fleetPids());
    for (const key of ["processes", "netns", "iptables", "tempDirs"] as const) {
      if (now[key] !== baseline[key]) problems.push(`${key}: ${now[key]} now, ${baseline[key]} at start`);
    }
    const pods = [...live.values()].reduce((sum, pids) => sum + pids.length, 0);
    if (now.logWriters !== pods) problems.push(`${now.logWriters} log writers for ${pods} running pods`);
    if (now.processes !== baseline.processes)
      problems.push(`processes now: ${difference(now.programs, baseline.programs)}`);
    // fds move with open watches and connections: a leak is growth past that noise.
    if (now.fds > baseline.fds + 64) problems.push(`fds: ${now.fds} now, ${baseline.fds} at start`);
  }
  return { problems, lost };
}

/** What `now` has more or less of than `before` (+x, -y). */
function difference(now: string[], before: string[]): string {
  const count = (list: string[]) =>
    list.reduce((m, x) => m.set(x, (m.get(x) ?? 0) + 1), new Map<string, number>());
  const a = count(now);
  const b = count(before);
  const out: string[] = [];
  for (const key of new Set([...a.keys(), ...b.keys()])) {
    const delta = (a.get(key) ?? 0) - (b.get(key) ?? 0);
    if (delta !== 0) out.push(`${delta > 0 ? "+" : ""}${delta} ${key}`);
  }
  return out.join(", ");
}

/** Status commits that change nothing (a status written twice). */
async function doubledStatusCommits(world: World): Promise<string[]> {
  const git = world.hubs.git;
  const out = await git.gitBare("rev-list", "--parents", "rlark/status").catch(() => "");
  const doubled: string[] = [];
  for (const line of out.trim().split("\n")) {
    const [commit, parent] = line.split(" ");
    if (!commit || !parent) continue;
    const changed = (await git.gitBare("diff", "--name-only", parent, commit)).trim();
    if (changed === "") doubled.push(commit.slice(0, 8));
  }
  return doubled;
}
