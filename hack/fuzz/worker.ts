// Runs fuzz targets' inputs in a worker thread, target after target, from where the parent says.
// Progress goes through shared counters the parent watches (a hang is an input that does not
// finish in time: the parent ends this thread and starts another after it); a crash is posted
// with the input's index and the error, and the run goes on.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { parentPort, workerData } from "node:worker_threads";
import fc from "fast-check";
import { TARGETS } from "./targets/index.ts";

export interface WorkerJob {
  /** Targets to run in order; the first from input `from`, the others from 0. */
  targets: string[];
  from: number;
  seed: number;
  count: number;
  /** Int32 [target index in `targets`, input index, 1 while an input runs]. */
  progress: SharedArrayBuffer;
}

export type WorkerReport =
  | { type: "crash"; target: string; index: number; error: string; input: string }
  | { type: "done"; target: string; heapGrowthBytes: number; ms: number };

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/** An input as text for the failure report, bounded. */
function show(input: unknown): string {
  const text = JSON.stringify(input, (_k, v) => {
    if (typeof v === "bigint") return `${v}n`;
    if (v && typeof v === "object" && (v as { type?: string }).type === "Buffer")
      return `<Buffer ${Buffer.from((v as { data: number[] }).data).toString("hex")}>`;
    return v;
  });
  return (text ?? String(input)).slice(0, 600);
}

const job = workerData as WorkerJob;
const progress = new Int32Array(job.progress);
for (const [t, name] of job.targets.entries()) {
  const target = TARGETS.find((x) => x.name === name);
  if (!target) throw new Error(`no fuzz target ${name}`);
  const started = Date.now();
  const inputs = fc.sample(target.input, { seed: job.seed, numRuns: job.count });
  gc();
  const heapBefore = process.memoryUsage().heapUsed;
  for (let i = t === 0 ? job.from : 0; i < inputs.length; i++) {
    Atomics.store(progress, 0, t);
    Atomics.store(progress, 1, i);
    Atomics.store(progress, 2, 1);
    try {
      await target.run(inputs[i], i);
    } catch (error) {
      parentPort?.postMessage({
        type: "crash",
        target: name,
        index: i,
        error: error instanceof Error ? (error.stack ?? error.message) : String(error),
        input: show(inputs[i]),
      } satisfies WorkerReport);
    }
    Atomics.store(progress, 2, 0);
  }
  inputs.length = 0;
  // A WeakRef's target stays alive until the task that made or read it ends (the parser holds its
  // position tables weakly), and a target whose inputs all settle in microtasks is one task: end
  // it before measuring, or the heap counts what the next task frees.
  await new Promise((resolve) => setTimeout(resolve, 0));
  gc();
  parentPort?.postMessage({
    type: "done",
    target: name,
    heapGrowthBytes: process.memoryUsage().heapUsed - heapBefore,
    ms: Date.now() - started,
  } satisfies WorkerReport);
}
