// `node hack/bench/hub/quota.ts [jobs...] [--teams 20] [--clusters 50]`: quota admission and
// placement on a real hub (sqlite store, one git revision) for each Job count given (default
// 1000 and 10000), each in a process of its own so its peak RSS is its own. 20 Teams in 4
// cohorts of 5, weights 1-3, an equal nominal GPU quota each, half the Jobs' GPUs in all; in each
// cohort two teams ask for less than their quota (lenders) and three for far more, so the idle
// quota is shared by weight. Prints per size: the time from hub start until every Job is either
// admitted with its Tasks placed and created or waiting with QuotaReserved=False, the hub's peak
// RSS, the growth against the first size, and the fairness achieved: per cohort, the GPUs each
// team holds against its ideal (max-min fair by weight over demand, each team first given
// min(demand, nominal)), summed as the share of the quota held away from the ideal. Asserts
// nothing (docs/teams.md quotes the figures).
import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { stringify } from "yaml";
import { startHub } from "../../../operators/hub/index.ts";
import { silentLogger } from "../../../operators/lib/logger.ts";
import { openSqliteStore } from "../../../operators/lib/store/index.ts";
import { seedClusters } from "./seed-nodes.ts";

const API = "rlinf.io/v1alpha1";
const COHORT_SIZE = 5;
const LENDERS_PER_COHORT = 2;
/** A lender team asks this fraction of a team's nominal quota. */
const LENDER_DEMAND = 0.3;
const NODES_PER_CLUSTER = 20;

const { values: flags, positionals } = parseArgs({
  options: {
    teams: { type: "string", default: "20" },
    clusters: { type: "string", default: "50" },
    /** Internal: run one size in this process and print one JSON line. */
    child: { type: "boolean" },
    "timeout-s": { type: "string", default: "1800" },
  },
  allowPositionals: true,
});
const teams = Number(flags.teams);
const clusters = Number(flags.clusters);
const sizes = (positionals.length > 0 ? positionals : ["1000", "10000"]).map(Number);

interface Plan {
  team: string;
  cohort: string;
  weight: number;
  nominal: number;
  jobs: number;
}

/** Teams, their quota and how many Jobs (1 GPU each) each asks for; GPU quota is half the demand. */
function plan(jobs: number): Plan[] {
  const cohorts = Math.ceil(teams / COHORT_SIZE);
  const nominal = Math.max(1, Math.floor(jobs / 2 / teams));
  const out: Plan[] = [];
  for (let t = 0; t < teams; t++) {
    const c = Math.floor(t / COHORT_SIZE);
    const lender = t % COHORT_SIZE < LENDERS_PER_COHORT;
    out.push({ team: `team-${t}`, cohort: `cohort-${c}`, weight: 1 + (t % 3), nominal, jobs: 0 });
    out[t]!.jobs = lender ? Math.floor(nominal * LENDER_DEMAND) : 0;
  }
  // The rest of each cohort's share of the Jobs goes to its hungry teams, evenly.
  for (let c = 0; c < cohorts; c++) {
    const members = out.filter((p) => p.cohort === `cohort-${c}`);
    const cohortJobs = Math.floor(jobs / cohorts);
    const hungry = members.filter((_, i) => i >= LENDERS_PER_COHORT);
    let rest = cohortJobs - members.reduce((sum, p) => sum + p.jobs, 0);
    for (const [i, p] of hungry.entries()) {
      p.jobs = Math.floor(rest / (hungry.length - i));
      rest -= p.jobs;
    }
  }
  return out;
}

/** Max-min fair by weight: each team gets min(demand, nominal), then the idle rest is filled by weight. */
function ideal(members: readonly Plan[]): Map<string, number> {
  const capacity = members.reduce((sum, p) => sum + p.nominal, 0);
  const floor = (p: Plan) => Math.min(p.jobs, p.nominal);
  // Find the level L at which sum(min(demand, max(floor, L * weight))) = capacity.
  const held = (level: number) =>
    members.reduce((sum, p) => sum + Math.min(p.jobs, Math.max(floor(p), level * p.weight)), 0);
  let low = 0;
  let high = capacity;
  for (let i = 0; i < 100; i++) {
    const mid = (low + high) / 2;
    if (held(mid) > capacity) high = mid;
    else low = mid;
  }
  return new Map(members.map((p) => [p.team, Math.min(p.jobs, Math.max(floor(p), low * p.weight))]));
}

function task(name: string, role: string, gpu: boolean, cpu: string, replicas: number) {
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
                resources: { requests: { cpu, memory: "2Gi", ...(gpu ? { "nvidia.com/gpu": "1" } : {}) } },
              },
            ],
          },
        },
      },
    },
  };
}

async function writeRepo(repo: string, jobs: number, teamPlan: readonly Plan[]): Promise<void> {
  for (const dir of ["jobs", "clusters", "teams"]) await mkdir(path.join(repo, dir), { recursive: true });
  for (let c = 0; c < clusters; c++)
    await writeFile(
      path.join(repo, "clusters", `c${c}.yaml`),
      stringify({
        apiVersion: API,
        kind: "Cluster",
        metadata: { name: `c${c}` },
        spec: { runtime: "kubernetes" },
      }),
    );
  for (const p of teamPlan)
    await writeFile(
      path.join(repo, "teams", `${p.team}.yaml`),
      stringify({
        apiVersion: API,
        kind: "Team",
        metadata: { name: p.team },
        spec: {
          cohort: p.cohort,
          weight: p.weight,
          quota: [{ resource: "nvidia.com/gpu", nominal: String(p.nominal) }],
        },
      }),
    );
  // Jobs interleaved over the teams (as they would arrive), 100 per file.
  const owners: string[] = [];
  const left = new Map(teamPlan.map((p) => [p.team, p.jobs]));
  while (owners.length < jobs && [...left.values()].some((n) => n > 0))
    for (const p of teamPlan) {
      const n = left.get(p.team) ?? 0;
      if (n > 0) {
        owners.push(p.team);
        left.set(p.team, n - 1);
      }
    }
  for (let f = 0; f * 100 < owners.length; f++) {
    const docs = owners.slice(f * 100, (f + 1) * 100).map((team, i) =>
      stringify({
        apiVersion: API,
        kind: "Job",
        metadata: { name: `job-${f * 100 + i}` },
        spec: {
          team,
          tasks: [
            task("learner", "Actor", true, "4", 1),
            task("rollout", "Rollout", false, "2", 2),
            task("env", "Env", false, "1", 1),
          ],
        },
      }),
    );
    await writeFile(path.join(repo, "jobs", `batch-${f}.yaml`), docs.join("---\n"));
  }
  const git = (...args: string[]) => execFileSync("git", args, { cwd: repo, stdio: "ignore" });
  git("init", "-q", "-b", "main");
  git("add", "-A");
  git("-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-qm", "bench");
}

/** The agents' node reports, as the tunnel glue writes them, before the hub starts. */
async function seedNodes(dataDir: string): Promise<void> {
  const seed = openSqliteStore({ dataDir });
  await seedClusters(seed, clusters, NODES_PER_CLUSTER);
  await seed.close();
}

interface JobView {
  spec: { team?: string };
  status?: { quota?: unknown; conditions?: { type: string; status: string; reason?: string }[] };
}

interface Figures {
  jobs: number;
  settledMs: number;
  peakMiB: number;
  admitted: number;
  waiting: number;
  /** Share of the cohorts' quota held away from the ideal, in %. */
  offIdealPct: number;
  /** The team furthest from its ideal: held / ideal, in %. */
  worstPct: number;
  worstTeam: string;
  /** CPU seconds of the hub's process from its start until settled (load moves it less than time). */
  cpuS: number;
  /** Reconciles of the Job controller until settled: the work, whatever the machine's load. */
  reconciles: number;
}

/** The Job controller's reconciles so far, from the hub's metrics. */
async function jobReconciles(text: string): Promise<number> {
  let total = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith("rlark_reconcile_total{") && line.includes('controller="job"'))
      total += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return total;
}

async function runOne(jobs: number): Promise<Figures> {
  const work = await mkdtemp(path.join(tmpdir(), "rlark-bench-quota-"));
  try {
    const teamPlan = plan(jobs);
    const repo = path.join(work, "repo");
    await writeRepo(repo, jobs, teamPlan);
    const total = teamPlan.reduce((sum, p) => sum + p.jobs, 0);
    const dataDir = path.join(work, "data");
    await mkdir(dataDir, { recursive: true });
    await seedNodes(dataDir);
    const started = performance.now();
    const cpuBefore = process.cpuUsage();
    const hub = await startHub({
      dataDir,
      http: "127.0.0.1:0",
      ssh: "127.0.0.1:0",
      repo,
      branch: "main",
      intervalMs: 3_600_000,
      logger: silentLogger,
      store: { backend: "sqlite" },
      leaderElection: {
        leaseName: `bench-${randomBytes(3).toString("hex")}`,
        leaseMs: 120_000,
        renewDeadlineMs: 90_000,
        retryMs: 5_000,
      },
    });
    try {
      const deadline = started + Number(flags["timeout-s"]) * 1000;
      // The Jobs as they are now and the Tasks' count, kept from watch events: a list of every
      // Job each second would be a cost of the bench, inside the process it measures, that grows
      // with the Jobs and with the time they take.
      const jobsNow = new Map<string, JobView>();
      let tasks = 0;
      const watches = [
        await hub.store.watch("Job", {}, (event) => {
          if (event.type === "DELETED") jobsNow.delete(event.object.metadata.name);
          else jobsNow.set(event.object.metadata.name, event.object as unknown as JobView);
        }),
        await hub.store.watch("Task", {}, (event) => {
          if (event.type === "ADDED") tasks++;
          else if (event.type === "DELETED") tasks--;
        }),
      ];
      for (;;) {
        if (jobsNow.size >= total) {
          const items = [...jobsNow.values()];
          const admitted = items.filter((j) => j.status?.quota !== undefined);
          const waiting = items.filter((j) =>
            j.status?.conditions?.some((c) => c.type === "QuotaReserved" && c.status === "False"),
          );
          // Settled: every Job decided for good (a Job held back for fair share or a preemption is
          // tried again: only "does not fit" is final), every admitted Job's three Tasks created.
          const final = waiting.every((j) =>
            j.status?.conditions?.some((c) => c.type === "QuotaReserved" && c.reason === "QuotaExceeded"),
          );
          if (final && admitted.length + waiting.length === total && tasks >= admitted.length * 3) {
            for (const watch of watches) watch.stop();
            const settledMs = performance.now() - started;
            const cpu = process.cpuUsage(cpuBefore);
            const reconciles = await jobReconciles(await hub.registry.text());
            const held = new Map<string, number>();
            for (const j of admitted) held.set(j.spec.team ?? "", (held.get(j.spec.team ?? "") ?? 0) + 1);
            let off = 0;
            let capacity = 0;
            let worst = { team: "", ratio: 1 };
            for (const cohort of new Set(teamPlan.map((p) => p.cohort))) {
              const members = teamPlan.filter((p) => p.cohort === cohort);
              const fair = ideal(members);
              capacity += members.reduce((sum, p) => sum + p.nominal, 0);
              for (const p of members) {
                const want = fair.get(p.team) ?? 0;
                const got = held.get(p.team) ?? 0;
                off += Math.abs(got - want);
                const ratio = want > 0 ? got / want : 1;
                if (Math.abs(ratio - 1) > Math.abs(worst.ratio - 1)) worst = { team: p.team, ratio };
              }
            }
            return {
              jobs: total,
              settledMs,
              peakMiB: process.resourceUsage().maxRSS / 1024,
              admitted: admitted.length,
              waiting: waiting.length,
              // Each unit held away from the ideal is counted twice (one team over, one under).
              offIdealPct: (100 * off) / 2 / capacity,
              worstPct: 100 * worst.ratio,
              worstTeam: worst.team,
              cpuS: (cpu.user + cpu.system) / 1e6,
              reconciles,
            };
          }
        }
        if (performance.now() > deadline) throw new Error(`not settled after ${flags["timeout-s"]} s`);
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    } finally {
      await hub.stop();
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

function child(jobs: number): Promise<Figures> {
  return new Promise((resolve, reject) => {
    const run = spawn(
      process.execPath,
      [
        process.argv[1] as string,
        "--child",
        "--teams",
        String(teams),
        "--clusters",
        String(clusters),
        String(jobs),
      ],
      {
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    let out = "";
    run.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    run.on("exit", (code) => {
      const line = out.trim().split("\n").at(-1) ?? "";
      if (code === 0) resolve(JSON.parse(line) as Figures);
      else reject(new Error(`the ${jobs}-Job run exited ${code}: ${out.slice(-2000)}`));
    });
  });
}

if (flags.child) {
  console.log(JSON.stringify(await runOne(sizes[0] as number)));
} else {
  console.log(
    `${teams} Teams (cohorts of ${COHORT_SIZE}), ${clusters} clusters x ${NODES_PER_CLUSTER} nodes, 3 tasks per Job, sqlite store, this machine: 2 cores`,
  );
  const header =
    "  Jobs    settled    per Job   CPU      reconciles   peak RSS   admitted/waiting   off ideal   furthest team";
  let base: Figures | undefined;
  for (const size of sizes) {
    console.log(`running ${size} Jobs ...`);
    const r = await child(size);
    base ??= r;
    const growth =
      r === base
        ? ""
        : ` (${(r.settledMs / base.settledMs).toFixed(1)}x time, ${(r.cpuS / base.cpuS).toFixed(1)}x CPU, ${(r.reconciles / base.reconciles).toFixed(1)}x reconciles, ${(r.peakMiB / base.peakMiB).toFixed(2)}x RSS for ${(r.jobs / base.jobs).toFixed(0)}x Jobs)`;
    console.log(header);
    console.log(
      `  ${String(r.jobs).padStart(6)}  ${(r.settledMs / 1000).toFixed(1).padStart(7)} s  ${(r.settledMs / r.jobs).toFixed(2).padStart(6)} ms  ${r.cpuS.toFixed(1).padStart(6)} s  ${String(r.reconciles).padStart(9)}   ${r.peakMiB.toFixed(0).padStart(6)} MiB   ${String(r.admitted).padStart(6)}/${String(r.waiting).padEnd(6)}     ${r.offIdealPct.toFixed(1).padStart(5)} %    ${r.worstTeam ? `${r.worstTeam} at ${r.worstPct.toFixed(0)} %` : "every team at 100 %"}${growth}`,
    );
  }
}
