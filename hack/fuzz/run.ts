// hack/fuzz/run [--inputs N] [--seed S] [--target NAME]... [--timeout-ms T] [--list]
// Runs every fuzz target (hack/fuzz/targets/) on N generated inputs each, two targets at a time,
// each in a worker thread with a bounded heap. A crash is an input whose parser threw by accident
// (hack/fuzz/target.ts); a hang an input that did not finish within --timeout-ms; memory counts
// as a crash when the heap grew past the bound or the worker ran out of it. The seed is printed
// first and with every failure; the same seed replays the same inputs. Last line:
// `fuzz: <n> inputs, <crashes> crashes, <hangs> hangs`; exit status 1 when either is not 0.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Worker } from "node:worker_threads";
import { TARGETS } from "./targets/index.ts";
import type { WorkerReport } from "./worker.ts";

const { values } = parseArgs({
  options: {
    inputs: { type: "string", default: "5000" },
    seed: { type: "string" },
    target: { type: "string", multiple: true },
    "timeout-ms": { type: "string", default: "5000" },
    list: { type: "boolean", default: false },
  },
});
/** Go's own fuzzer on what rlark-net's sidecar reads from the network (rlark-net/fuzz_test.go). */
const GO_TARGETS = [
  { name: "go-proxy-line", fuzz: "FuzzProxyPort", about: "the PROXY line on :5700: rlark-net proxyPort" },
  {
    name: "go-inbound-ticket",
    fuzz: "FuzzInboundCheck",
    about: "the RLARK-AUTH ticket on :5700: rlark-net inboundAuth.check",
  },
];
if (values.list) {
  for (const t of [...TARGETS, ...GO_TARGETS]) console.log(`${t.name.padEnd(22)} ${t.about}`);
  process.exit(0);
}
const inputs = Number(values.inputs);
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
const timeoutMs = Number(values["timeout-ms"]);
if (!Number.isSafeInteger(inputs) || inputs < 1)
  throw new Error(`--inputs: a positive integer, not ${values.inputs}`);
if (!Number.isSafeInteger(seed)) throw new Error(`--seed: an integer, not ${values.seed}`);
const unknown = (values.target ?? []).filter((n) => ![...TARGETS, ...GO_TARGETS].some((t) => t.name === n));
if (unknown.length > 0) throw new Error(`--target: no target ${unknown.join(", ")} (see --list)`);
const chosen = values.target ? TARGETS.filter((t) => values.target?.includes(t.name)) : TARGETS;
// The self-test replaces the product's targets, Go's included.
const chosenGo =
  process.env.RLARK_FUZZ_SELF_TEST === "1"
    ? []
    : values.target
      ? GO_TARGETS.filter((t) => values.target?.includes(t.name))
      : GO_TARGETS;

/** Heap a worker may use; past it V8 ends the worker, which counts as a crash. */
const HEAP_LIMIT_MB = 512;
/** Heap a whole run may keep once its inputs are dropped: more is a leak. */
const HEAP_GROWTH_BOUND = 64 * 1024 * 1024;

interface Result {
  name: string;
  crashes: number;
  hangs: number;
  ms: number;
  heapGrowthMb?: number;
}

console.log(`fuzz: seed ${seed}, ${inputs} inputs per target, ${chosen.length + chosenGo.length} targets`);
// Files targets make (the relay's store and CA) go here, removed at the end; workers inherit it.
const scratch = mkdtempSync(join(tmpdir(), "rlark-fuzz-"));
process.env.RLARK_FUZZ_SCRATCH = scratch;

const results = new Map<string, Result>(
  chosen.map((t) => [t.name, { name: t.name, crashes: 0, hangs: 0, ms: 0 }]),
);

function failure(name: string, kind: "crash" | "hang", index: number, detail: string): void {
  const result = results.get(name) as Result;
  if (kind === "crash") result.crashes++;
  else result.hangs++;
  console.log(
    index < 0
      ? `fuzz: ${name}: ${kind} (go test -fuzz: the failing input is saved under operators/network/rlark-net/testdata/fuzz/ and replays with go test)\n  ${detail.replace(/\n/g, "\n  ")}`
      : `fuzz: ${name}: ${kind} at input ${index} (replay: hack/fuzz/run --seed ${seed} --inputs ${inputs} --target ${name})\n  ${detail.replace(/\n/g, "\n  ")}`,
  );
}

/**
 * Runs `targets` in one worker from input `from` of the first; resolves when all are done, or
 * with where to go on after a hang or the worker's death.
 */
function runWorker(
  targets: string[],
  from: number,
): Promise<{ targets: string[]; from: number } | undefined> {
  const progress = new SharedArrayBuffer(12);
  const counter = new Int32Array(progress);
  const worker = new Worker(new URL("./worker.ts", import.meta.url), {
    workerData: { targets, from, seed, count: inputs, progress },
    resourceLimits: { maxOldGenerationSizeMb: HEAP_LIMIT_MB },
    // parsers warn about what they refuse (the yaml library's YAMLWarning): the refusal is the point
    execArgv: ["--no-warnings"],
  });
  const where = () => ({
    t: Atomics.load(counter, 0),
    i: Atomics.load(counter, 1),
    busy: Atomics.load(counter, 2),
  });
  const rest = (t: number, i: number) => {
    const left = targets.slice(t);
    if (i + 1 < inputs) return { targets: left, from: i + 1 };
    return left.length > 1 ? { targets: left.slice(1), from: 0 } : undefined;
  };
  return new Promise((resolve) => {
    let seen = "";
    let since = Date.now();
    let settled = false;
    const settle = (value: { targets: string[]; from: number } | undefined) => {
      if (settled) return;
      settled = true;
      clearInterval(watch);
      resolve(value);
    };
    const watch = setInterval(() => {
      const { t, i, busy } = where();
      const now = `${t}/${i}/${busy}`;
      if (now !== seen || busy === 0) {
        seen = now;
        since = Date.now();
      } else if (Date.now() - since > timeoutMs) {
        failure(targets[t] as string, "hang", i, `no answer within ${timeoutMs} ms`);
        void worker.terminate();
        settle(rest(t, i));
      }
    }, 100);
    worker.on("message", (report: WorkerReport) => {
      if (report.type === "crash") {
        failure(report.target, "crash", report.index, `${report.error}\n  input: ${report.input}`);
        return;
      }
      const result = results.get(report.target) as Result;
      result.heapGrowthMb = Math.round(report.heapGrowthBytes / 1024 / 1024);
      // generation and inputs, in this worker (a restart after a hang starts the clock again)
      result.ms = report.ms;
      if (report.heapGrowthBytes > HEAP_GROWTH_BOUND)
        failure(report.target, "crash", inputs, `the heap grew by ${result.heapGrowthMb} MB over the run`);
      // The last target done: end the worker, whatever a target left listening (the relay).
      if (report.target === targets.at(-1)) {
        void worker.terminate();
        settle(undefined);
      }
      console.log(
        `fuzz: ${result.name}: ${inputs} inputs, ${result.crashes} crashes, ${result.hangs} hangs, heap ${result.heapGrowthMb >= 0 ? "+" : ""}${result.heapGrowthMb} MB, ${(result.ms / 1000).toFixed(1)} s`,
      );
    });
    worker.on("error", (error) => {
      const { t, i } = where();
      failure(targets[t] as string, "crash", i, `the worker died: ${error.stack ?? error.message}`);
      settle(rest(t, i));
    });
    worker.on("exit", () => settle(undefined));
  });
}

// Two workers (the CI machine has two cores), each taking every other target.
const lanes = Math.min(2, availableParallelism(), chosen.length);
await Promise.all(
  Array.from({ length: lanes }, async (_, lane) => {
    let next: { targets: string[]; from: number } | undefined = {
      targets: chosen.filter((_, k) => k % lanes === lane).map((t) => t.name),
      from: 0,
    };
    while (next) next = await runWorker(next.targets, next.from);
  }),
);
/**
 * One Go fuzz target for `inputs` executions. Go's fuzzer picks its own inputs (coverage-guided,
 * not from --seed); a failing input is saved under rlark-net/testdata/fuzz/ and replays with
 * `go test -run <Fuzz>/<file>`. A panic or failed check is a crash, a hung input a hang.
 */
function runGo(target: (typeof GO_TARGETS)[number]): Promise<Result> {
  const started = Date.now();
  const dir = new URL("../../operators/network/rlark-net/", import.meta.url).pathname;
  const args = [
    "test",
    "-run",
    "^$",
    "-fuzz",
    `^${target.fuzz}$`,
    "-fuzztime",
    `${inputs}x`,
    "-parallel",
    "1",
    ".",
  ];
  const child = spawn("go", args, {
    cwd: dir,
    env: { ...process.env, GOPROXY: "off" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const keep = (chunk: Buffer) => {
    out = `${out}${chunk.toString("utf8")}`.slice(-20_000);
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  return new Promise((resolve) => {
    const finish = (code: number | null, spawnError?: Error) => {
      const result: Result = { name: target.name, crashes: 0, hangs: 0, ms: Date.now() - started };
      results.set(target.name, result);
      if (code !== 0) {
        const kind = /hung|deadline exceeded|timed out/.test(out) ? "hang" : "crash";
        failure(
          target.name,
          kind,
          -1,
          spawnError ? `go: ${spawnError.message}` : out.trim().split("\n").slice(-25).join("\n"),
        );
      }
      console.log(
        `fuzz: ${target.name}: ${inputs} inputs (go test -fuzz), ${result.crashes} crashes, ${result.hangs} hangs, ${(result.ms / 1000).toFixed(1)} s`,
      );
      resolve(result);
    };
    child.once("error", (error) => finish(127, error));
    child.once("close", (code) => finish(code));
  });
}
for (const target of chosenGo) await runGo(target);

rmSync(scratch, { recursive: true, force: true });

const all = [...results.values()];
const crashes = all.reduce((n, r) => n + r.crashes, 0);
const hangs = all.reduce((n, r) => n + r.hangs, 0);
if (crashes + hangs > 0)
  console.log(`fuzz: seed ${seed}: replay with hack/fuzz/run --seed ${seed} --inputs ${inputs}`);
console.log(`fuzz: ${inputs * all.length} inputs, ${crashes} crashes, ${hangs} hangs`);
process.exitCode = crashes + hangs > 0 ? 1 : 0;
