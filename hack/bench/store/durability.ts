// Write throughput and event-loop delay by durability mode and writers in flight:
// `node hack/bench/store/durability.ts`. Numbers only; run on a quiet machine.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { openSqliteStore } from "../../../operators/lib/store/index.ts";

for (const durability of ["inline", "pipelined"] as const) {
  for (const writers of [1, 4, 16, 64]) {
    const dir = mkdtempSync(join(tmpdir(), "rlark-bench-durability-"));
    const store = openSqliteStore({ dataDir: dir, durability });
    const total = writers === 1 ? 500 : 4000;
    let next = 0;
    const delay = monitorEventLoopDelay({ resolution: 1 });
    delay.enable();
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: writers }, async () => {
        for (let i = next++; i < total; i = next++) {
          await store.create({
            apiVersion: "v1",
            kind: "Task",
            metadata: { name: `t${i}`, namespace: "ns", labels: { "rlinf.io/job": `j${i % 100}` } },
            spec: { replicas: 1 },
          });
        }
      }),
    );
    delay.disable();
    const rate = Math.round(total / ((performance.now() - t0) / 1000));
    console.log(
      `${durability.padEnd(9)} ${String(writers).padStart(3)} writers ${String(rate).padStart(7)} writes/s   event-loop delay p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms`,
    );
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
