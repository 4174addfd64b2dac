// `node hack/bench/validate/run.ts [count]`: wall time and peak memory of `rlark validate` over a
// generated repository, side by side with kubeconform over the same files and our schemas
// exported as plain JSON Schema. Prints a table; asserts nothing.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import path from "node:path";
import { kinds } from "../../../operators/api/index.ts";
import { generateRepository } from "./generate.ts";

const KUBECONFORM_VERSION = "v0.7.0";
const count = Number(process.argv[2] ?? 10_000);
const runs = 3;
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

/** Runs a command under GNU time; returns wall seconds and peak RSS in MiB. */
function measure(command: string[]): { seconds: number; peakMiB: number; status: number | null } {
  const run = spawnSync("/usr/bin/time", ["-f", "%e %M", ...command], {
    encoding: "utf8",
    maxBuffer: 1 << 30,
  });
  const lastLine = run.stderr.trim().split("\n").at(-1) ?? "";
  const [seconds, kib] = lastLine.split(" ").map(Number);
  return { seconds: seconds ?? Number.NaN, peakMiB: (kib ?? Number.NaN) / 1024, status: run.status };
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

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
    "rlark validate": [node, path.join(root, "operators/cli/main.ts"), "validate", "--format", "json", repo],
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
  const results: Record<string, { seconds: number[]; peak: number[]; status: number | null }> = {};
  for (let i = 0; i < runs; i++) {
    for (const [name, command] of Object.entries(commands)) {
      const m = measure(command);
      results[name] ??= { seconds: [], peak: [], status: m.status };
      results[name].seconds.push(m.seconds);
      results[name].peak.push(m.peakMiB);
    }
  }
  const [ours, theirs] = Object.values(results) as [(typeof results)[string], (typeof results)[string]];
  console.log(`\n${count} manifests, median of ${runs} runs (this machine: 2 cores)\n`);
  console.log("tool                    wall s   peak MiB   exit");
  for (const [name, r] of Object.entries(results)) {
    console.log(
      `${name.padEnd(22)} ${median(r.seconds).toFixed(2).padStart(7)} ${median(r.peak).toFixed(0).padStart(10)} ${String(r.status).padStart(6)}`,
    );
  }
  console.log(
    `\nwall-time ratio rlark / kubeconform: ${(median(ours.seconds) / median(theirs.seconds)).toFixed(2)}x`,
  );
  console.log(`peak memory rlark: ${median(ours.peak).toFixed(0)} MiB (target < 300 MiB)`);
  console.log("note: kubeconform checks the exported schemas only; rlark also checks pod templates against");
  console.log("Kubernetes' schemas and every cross-object rule.");
} finally {
  await rm(work, { recursive: true, force: true });
}
