// What the dashboard benchmarks start from: a hub data dir whose SQLite store holds N Jobs (the
// example's task templates, a phase and two running tasks each, spread over `clusters` clusters),
// written by a hub without controllers that is then stopped, so the benchmark's own hub starts on
// them with the dashboard's cache loading them. `--data-dir DIR` (both benchmarks) keeps the data
// dir: the first run writes the Jobs there, later runs start on them (100,000 take minutes to write).
import { access, mkdir, mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { parse } from "yaml";
import { type HubOptions, startHub } from "../../../operators/hub/index.ts";
import { silentLogger } from "../../../operators/lib/logger.ts";
import type { BatchOp, KubeObject } from "../../../operators/lib/store/index.ts";

const PHASES = ["Pending", "Running", "Succeeded", "Failed", "Stopped"];

export interface SeededJobs {
  dataDir: string;
  /** Options for a hub on that data dir (add `dashboard: true`). */
  hubOptions: HubOptions;
  /** Whether the data dir was given (--data-dir) and so is kept. */
  kept: boolean;
}

/** Job names are `job-<n>` padded to `digits`; written `batch` at a time. */
export async function seedJobs(
  count: number,
  options: { clusters: number; batch: number; digits: number; dirPrefix: string; dataDir?: string },
): Promise<SeededJobs> {
  const root = path.join(import.meta.dirname, "..", "..", "..");
  const example = parse(
    await readFile(path.join(root, "examples/jobs/ppo-cartpole-v1.yaml"), "utf8"),
  ) as KubeObject;
  const kept = options.dataDir !== undefined;
  const dataDir = options.dataDir ?? (await mkdtemp(path.join(tmpdir(), options.dirPrefix)));
  const seeded = path.join(dataDir, `seeded-${count}`);
  const hubOptions: HubOptions = {
    dataDir,
    http: "127.0.0.1:0",
    ssh: "127.0.0.1:0",
    logger: silentLogger,
    controllers: () => [],
  };
  if (
    kept &&
    (await access(seeded).then(
      () => true,
      () => false,
    ))
  ) {
    console.log(`store: ${count} Jobs written before, in ${dataDir}`);
    return { dataDir, hubOptions, kept };
  }
  await mkdir(dataDir, { recursive: true });
  const filling = await startHub(hubOptions);
  const t0 = performance.now();
  for (let start = 0; start < count; start += options.batch) {
    const ops: BatchOp[] = [];
    for (let i = start; i < Math.min(count, start + options.batch); i++) {
      const name = `job-${String(i).padStart(options.digits, "0")}`;
      const cluster = `cluster-${i % options.clusters}`;
      ops.push({
        op: "create",
        object: {
          ...example,
          metadata: { name, labels: { ...example.metadata.labels, shard: String(i % 10) } },
          status: {
            phase: PHASES[i % PHASES.length],
            run: 1,
            tasks: [
              { name: "actor-head", taskName: `${name}-actor-head`, cluster, phase: "Running" },
              { name: "rollout", taskName: `${name}-rollout`, cluster, phase: "Running" },
            ],
          },
        },
      });
    }
    await filling.store.applyBatch(ops);
  }
  await filling.stop();
  // The mark a later run with the same --data-dir starts from.
  if (kept) await mkdir(seeded);
  console.log(`store: ${count} Jobs written in ${Math.round(performance.now() - t0)} ms`);
  return { dataDir, hubOptions, kept };
}
