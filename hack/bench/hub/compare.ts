// `node hack/bench/hub/compare.ts --kubeconfig FILE [--timeout-s 600] JOBS[xCLUSTERSxNODES] ...`:
// the hub bench (run.ts) on SQLite and on the kubernetes store for each size, each run in a
// process of its own (so peak RSS is its own), printed side by side with the ratio. A run that
// does not finish within --timeout-s is reported as such. Asserts nothing.
import { execFile } from "node:child_process";
import path from "node:path";
import { parseArgs } from "node:util";

const { values: flags, positionals } = parseArgs({
  options: { kubeconfig: { type: "string" }, "timeout-s": { type: "string" } },
  allowPositionals: true,
});
if (!flags.kubeconfig) {
  console.error("usage: compare.ts --kubeconfig FILE [--timeout-s 600] 100x5x4 1000x50x20 ...");
  process.exit(2);
}
const timeoutS = flags["timeout-s"] ?? "600";
const run = path.join(import.meta.dirname, "run.ts");

interface Figures {
  appliedMs: number;
  placedMs: number;
  peakMiB: number;
  requests?: Record<string, number>;
}

function bench(size: string[], store: "sqlite" | "kubernetes"): Promise<Figures | string> {
  const args = [run, ...size, "--json", "--timeout-s", timeoutS];
  if (store === "kubernetes") args.push("--kubeconfig", flags.kubeconfig!);
  return new Promise((resolve) => {
    execFile(process.execPath, args, { maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const line = stdout.trim().split("\n").at(-1) ?? "";
      if (!error && line.startsWith("{")) resolve(JSON.parse(line) as Figures);
      else
        resolve(/gave up/.exec(stderr) ? `did not finish in ${timeoutS} s` : `failed: ${stderr.slice(-300)}`);
    });
  });
}

const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const rows: string[] = [];
for (const spec of positionals.length > 0 ? positionals : ["100x5x4"]) {
  const [jobs = "100", clusters = "5", nodes = "4"] = spec.split("x");
  const size = [jobs, clusters, nodes];
  console.log(`${jobs} Jobs x 3 tasks over ${clusters} clusters x ${nodes} nodes ...`);
  const sqlite = await bench(size, "sqlite");
  const kube = await bench(size, "kubernetes");
  const cell = (f: Figures | string) =>
    typeof f === "string"
      ? f
      : `${s(f.placedMs)} placed (${(Number(jobs) / (f.placedMs / 1000)).toFixed(1)} Jobs/s), applied ${s(f.appliedMs)}, ${f.peakMiB.toFixed(0)} MiB`;
  const requests =
    typeof kube === "string" || !kube.requests
      ? ""
      : `${Object.values(kube.requests).reduce((a, b) => a + b, 0)} (${Object.entries(kube.requests)
          .map(([verb, n]) => `${verb} ${n}`)
          .join(", ")})`;
  const ratio =
    typeof sqlite === "string" || typeof kube === "string"
      ? ""
      : `${(kube.placedMs / sqlite.placedMs).toFixed(1)}x`;
  rows.push(
    `| ${jobs} × 3, ${clusters} × ${nodes} | ${cell(sqlite)} | ${cell(kube)} | ${ratio} | ${requests} |`,
  );
}
console.log(
  "\n| Jobs × 3 Tasks, clusters × nodes | SQLite | kubernetes store | kube/SQLite | apiserver requests by the hub |",
);
console.log("|---|---|---|---|---|");
for (const row of rows) console.log(row);
