// Child process for the durability test: writes Jobs as fast as it can, several in flight at
// once (so group commit is exercised), and prints "ack <name>" only after a write resolved.
import { openSqliteStore } from "../../../operators/lib/store/index.ts";

const dir = process.argv[2];
const durability = process.argv[3] === "inline" ? "inline" : "pipelined";
if (!dir) throw new Error("usage: crash-writer.ts <dataDir> [pipelined|inline]");
const store = openSqliteStore({ dataDir: dir, durability });
let n = 0;

async function writer(lane: number): Promise<void> {
  for (;;) {
    const name = `j-${lane}-${n++}`;
    if (n % 5 === 0) {
      await store.applyBatch([
        { op: "create", object: { apiVersion: "v1", kind: "Job", metadata: { name }, spec: { n } } },
        { op: "create", object: { apiVersion: "v1", kind: "Task", metadata: { name, namespace: "ns" } } },
      ]);
    } else {
      await store.create({ apiVersion: "v1", kind: "Job", metadata: { name }, spec: { n } });
    }
    process.stdout.write(`ack ${name}\n`);
  }
}

for (let lane = 0; lane < 8; lane++) void writer(lane);
