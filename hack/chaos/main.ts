// `hack/chaos/soak --duration D [--seed S] [...]`: the chaos soak from the command line (see
// README.md). A fleet of its own (`.cache/fleet-chaos`, 2 clusters × 2 kwok nodes) so that its
// API server and etcd faults disturb nobody else's tests; everything it started is stopped on the
// way out, on failure and on SIGINT/SIGTERM too. Exit 0 when the invariants hold.
import { spawnSync } from "node:child_process";
import { createWriteStream, readFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { Test } from "tap";
import { repoRoot } from "../kube/paths.ts";
import { FAULTS, type Fault } from "./faults.ts";
import { runSoak } from "./soak.ts";

const USAGE = `usage: hack/chaos/soak --duration D [--seed S] [--faults F,...] [--fault-every D]
                       [--commit-every D] [--quiet-bound D] [--fleet-dir DIR] [--lease D]

Runs two HA hubs, a kwok fleet of 2 clusters, a process-runtime cluster, their agents and
nodeservers under a stream of commits and faults for --duration, then checks that everything
converged to git's last valid revision with nothing lost, run twice or leaked. Durations:
300, 300s, 5m, 1h. Faults (default all): ${FAULTS.join(", ")}.
The last line: "chaos: <kills> kills, <commits> commits, <lost> lost, <dup> duplicated, ...".
Exit 0 when the invariants hold. See hack/chaos/README.md.
`;

function parseOptions() {
  try {
    return parseArgs({
      options: {
        help: { type: "boolean", short: "h" },
        duration: { type: "string", default: "300s" },
        seed: { type: "string" },
        faults: { type: "string", default: FAULTS.join(",") },
        "fault-every": { type: "string", default: "20s" },
        "commit-every": { type: "string", default: "3s" },
        "quiet-bound": { type: "string", default: "300s" },
        "fleet-dir": { type: "string", default: join(repoRoot, ".cache/fleet-chaos") },
        /** Leader election's Lease duration; the renew deadline and retry period follow (7/10, 1/10). */
        lease: { type: "string" },
      },
    });
  } catch (error) {
    process.stderr.write(`chaos: ${(error as Error).message}\n\n${USAGE}`);
    process.exit(2);
  }
}
const { values } = parseOptions();
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** "300" (seconds), "300s", "5m", "1h", "1h30m", "500ms" → milliseconds. */
function seconds(value: string): number {
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const parts = [...value.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join("") !== value)
    throw new Error(`"${value}" is not a duration (examples: 300, 300s, 5m, 1h)`);
  return parts.reduce((total, [, n, unit]) => total + Number(n) * UNITS[unit!]!, 0);
}
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
const faults = values.faults.split(",").filter(Boolean) as Fault[];
for (const fault of faults) {
  if (!FAULTS.includes(fault))
    throw new Error(`--faults: unknown fault ${fault} (known: ${FAULTS.join(", ")})`);
}
const fleetDir = values["fleet-dir"];
process.env.RLARK_FLEET_DIR = fleetDir;

// Teardowns as tap runs them for the helpers, last registered first.
const teardowns: (() => unknown)[] = [];
const t = { teardown: (fn: () => unknown) => teardowns.push(fn) } as unknown as Test;
let tornDown = false;
async function tearDown(): Promise<void> {
  if (tornDown) return;
  tornDown = true;
  for (const fn of teardowns.reverse()) {
    try {
      await fn();
    } catch (error) {
      console.error(`chaos: teardown: ${(error as Error).message}`);
    }
  }
  spawnSync("bash", [join(repoRoot, "hack/kube/down"), "--holder", String(process.pid)], {
    stdio: ["ignore", 2, 2],
  });
}
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    console.error(`chaos: ${signal}: stopping everything the soak started`);
    void tearDown().then(() => process.exit(130));
  });
}

function leaseFlags(leaseMs: number): string[] {
  const ms = (n: number) => `${Math.round(n)}ms`;
  return [
    ...["--leader-elect-lease-duration", ms(leaseMs)],
    ...["--leader-elect-renew-deadline", ms(leaseMs * 0.7)],
    ...["--leader-elect-retry-period", ms(leaseMs * 0.1)],
  ];
}

function fleetPids(): number[] {
  try {
    const state = JSON.parse(readFileSync(join(fleetDir, "state.json"), "utf8")) as {
      processes: { pid: number }[];
    };
    return state.processes.map((p) => p.pid);
  } catch {
    return [];
  }
}

async function main(): Promise<number> {
  const up = spawnSync(
    "bash",
    [join(repoRoot, "hack/kube/up"), "--clusters", "2", "--nodes", "2", "--holder", String(process.pid)],
    { stdio: ["ignore", 2, 2] },
  );
  if (up.status !== 0) throw new Error(`hack/kube/up failed (exit ${up.status ?? up.signal})`);
  const logDir = join(repoRoot, ".cache/chaos");
  await mkdir(logDir, { recursive: true });
  const logFile = join(logDir, `soak-${seed}.log`);
  const stream = createWriteStream(logFile);
  t.teardown(() => new Promise((resolve) => stream.end(resolve)));
  // The parts' log, bounded: a long soak stops writing it past 512 MiB.
  let written = 0;
  const echo = (line: string) => {
    written += line.length;
    if (written < 512 * 1024 * 1024) stream.write(`${new Date().toISOString()} ${line}`);
  };
  console.log(`chaos: the parts' log goes to ${logFile}`);
  const result = await runSoak(t, {
    durationMs: seconds(values.duration),
    seed,
    faults,
    faultEveryMs: seconds(values["fault-every"]),
    commitEveryMs: seconds(values["commit-every"]),
    quietBoundMs: seconds(values["quiet-bound"]),
    fleetDir,
    fleetPids,
    hubFlags: values.lease ? leaseFlags(seconds(values.lease)) : [],
    log: (line) => {
      console.log(line);
      echo(`${line}\n`);
    },
    echo,
  });
  for (const problem of result.problems) console.log(`chaos: problem: ${problem}`);
  console.log(`chaos: replay with --seed ${seed}`);
  console.log(result.line);
  return result.problems.length === 0 ? 0 : 1;
}

main()
  .then(async (code) => {
    await tearDown();
    process.exit(code);
  })
  .catch(async (error: Error) => {
    console.error(`chaos: ${error.stack ?? error.message}`);
    await tearDown();
    process.exit(2);
  });
