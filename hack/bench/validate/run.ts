// `node hack/bench/validate/run.ts [count...] [--runs N]`: wall time and peak memory of `rlark
// validate` over a generated repository, side by side with kubeconform over the same files and
// our schemas exported as plain JSON Schema. With two counts (`10000 100000`) it also prints how
// memory and time grow from the first to the last: the check streams the repository, so peak
// memory should stay nearly flat. It measures the sources (what a checkout runs) and the
// JavaScript build it makes first (what `npm install` users run). Prints tables; asserts nothing.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import path from "node:path";
import { kinds } from "../../../operators/api/index.ts";
import { generateRepository } from "./generate.ts";

const KUBECONFORM_VERSION = "v0.7.0";
const args = process.argv.slice(2);
const runsAt = args.indexOf("--runs");
const runs = runsAt === -1 ? 3 : Number(args.splice(runsAt, 2)[1]);
const counts = args.length > 0 ? args.map(Number) : [10_000];
if (counts.some((n) => !Number.isInteger(n) || n < 1) || !(runs >= 1)) {
  console.error("usage: run.ts [count...] [--runs N]");
  process.exit(2);
}
const root = path.resolve(import.meta.dirname, "../../..");

function kubeconformBinary(): string {
  const gobin =
    spawnSync("go", ["env", "GOPATH"], { encoding: "utf8" }).stdout.trim() || path.join(homedir(), "go");
  const binary = path.join(gobin, "bin", "kubeconform");
  if (!existsSync(binary)) {
    console.log(`installing kubeconform ${KUBECONFORM_VERSION} with go install ...`);
    const install = spawnSync(
      "go",
      ["install", `github.com/yannh/kubeconform/cmd/kubeconform@${KUBECONFORM_VERSION}`],
      {
        stdio: "inherit",
      },
    );
    if (install.status !== 0) throw new Error("go install kubeconform failed");
  }
  return binary;
}

/**
 * Runs a command under GNU time; returns wall seconds, CPU seconds (user + system, every thread)
 * and peak RSS in MiB. CPU time says more than wall time on a machine shared with other work.
 */
function measure(command: string[]): {
  seconds: number;
  cpu: number;
  peakMiB: number;
  status: number | null;
} {
  const run = spawnSync("/usr/bin/time", ["-f", "%e %M %U %S", ...command], {
    encoding: "utf8",
    maxBuffer: 1 << 30,
  });
  const lastLine = run.stderr.trim().split("\n").at(-1) ?? "";
  const [seconds, kib, user, system] = lastLine.split(" ").map(Number);
  return {
    seconds: seconds ?? Number.NaN,
    cpu: (user ?? Number.NaN) + (system ?? Number.NaN),
    peakMiB: (kib ?? Number.NaN) / 1024,
    status: run.status,
  };
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

interface Figures {
  count: number;
  ours: { seconds: number; cpu: number; peak: number };
  built: { seconds: number; cpu: number; peak: number };
  theirs: { seconds: number; cpu: number; peak: number };
}

async function benchmark(count: number): Promise<Figures> {
  const work = await mkdtemp(path.join(tmpdir(), "rlark-bench-validate-"));
  try {
    const repo = path.join(work, "repo");
    console.log(`generating ${count} manifests in ${repo} ...`);
    const { invalid } = await generateRepository(repo, count);
    console.log(`${invalid} of them invalid`);
    const schemas = path.join(work, "schemas");
    await mkdir(path.join(schemas, "rlinf.io"), { recursive: true });
    for (const info of kinds) {
      await writeFile(
        path.join(schemas, "rlinf.io", `${info.kind.toLowerCase()}_v1alpha1.json`),
        JSON.stringify(info.schema),
      );
    }
    const kubeconform = kubeconformBinary();
    const node = process.execPath;
    const commands: Record<string, string[]> = {
      "rlark validate": [
        node,
        path.join(root, "operators/cli/main.ts"),
        "validate",
        "--format",
        "json",
        repo,
      ],
      // What `npm install` users run: the JavaScript build, without the sources' type stripping.
      "rlark (installed build)": [
        node,
        path.join(root, "dist/cli/main.js"),
        "validate",
        "--format",
        "json",
        repo,
      ],
      [`kubeconform ${KUBECONFORM_VERSION}`]: [
        kubeconform,
        "-summary",
        "-output",
        "json",
        "-schema-location",
        `${schemas}/{{ .Group }}/{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json`,
        repo,
      ],
    };
    const results: Record<
      string,
      { seconds: number[]; cpu: number[]; peak: number[]; status: number | null }
    > = {};
    for (let i = 0; i < runs; i++) {
      // Alternating, so load that comes and goes on this shared machine falls on both.
      for (const [name, command] of Object.entries(commands)) {
        const m = measure(command);
        results[name] ??= { seconds: [], cpu: [], peak: [], status: m.status };
        results[name].seconds.push(m.seconds);
        results[name].cpu.push(m.cpu);
        results[name].peak.push(m.peakMiB);
      }
    }
    const [ours, built, theirs] = Object.values(results) as (typeof results)[string][] as [
      (typeof results)[string],
      (typeof results)[string],
      (typeof results)[string],
    ];
    console.log(`\n${count} manifests, median of ${runs} runs (this machine: 2 cores)\n`);
    console.log("tool                    wall s    CPU s   peak MiB   exit");
    for (const [name, r] of Object.entries(results)) {
      console.log(
        `${name.padEnd(22)} ${median(r.seconds).toFixed(2).padStart(7)} ${median(r.cpu).toFixed(2).padStart(8)} ${median(r.peak).toFixed(0).padStart(10)} ${String(r.status).padStart(6)}`,
      );
    }
    console.log(
      `\nwall-time ratio rlark / kubeconform: ${(median(ours.seconds) / median(theirs.seconds)).toFixed(2)}x (target <= 0.5x); CPU-time ratio: ${(median(ours.cpu) / median(theirs.cpu)).toFixed(2)}x`,
    );
    console.log(
      `peak memory rlark: ${median(ours.peak).toFixed(0)} MiB from the sources, ${median(built.peak).toFixed(0)} MiB installed (target < 150 MiB at 10,000)`,
    );
    console.log(
      "note: kubeconform checks the exported schemas only; rlark also checks pod templates against",
    );
    console.log("Kubernetes' schemas and every cross-object rule.\n");
    return {
      count,
      ours: { seconds: median(ours.seconds), cpu: median(ours.cpu), peak: median(ours.peak) },
      built: { seconds: median(built.seconds), cpu: median(built.cpu), peak: median(built.peak) },
      theirs: { seconds: median(theirs.seconds), cpu: median(theirs.cpu), peak: median(theirs.peak) },
    };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

console.log("building the installed form (npm run build) ...");
const build = spawnSync(process.execPath, [path.join(root, "hack/build/build.ts")], { stdio: "inherit" });
if (build.status !== 0) throw new Error("npm run build failed");

const figures: Figures[] = [];
for (const count of counts) figures.push(await benchmark(count));
if (figures.length > 1) {
  const first = figures[0] as Figures;
  const last = figures.at(-1) as Figures;
  const factor = last.count / first.count;
  console.log(`growth from ${first.count} to ${last.count} manifests (x${factor}):`);
  console.log("tool                    wall s x    CPU s x   peak MiB +   peak MiB x");
  for (const [name, a, b] of [
    ["rlark validate", first.ours, last.ours],
    ["rlark (installed build)", first.built, last.built],
    [`kubeconform ${KUBECONFORM_VERSION}`, first.theirs, last.theirs],
  ] as const) {
    console.log(
      `${name.padEnd(22)} ${(b.seconds / a.seconds).toFixed(2).padStart(9)} ${(b.cpu / a.cpu).toFixed(2).padStart(10)} ${(b.peak - a.peak).toFixed(0).padStart(12)} ${(b.peak / a.peak).toFixed(2).padStart(12)}`,
    );
  }
}
