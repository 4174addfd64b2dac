// The agent checks each nodeserver's GET /pingmesh before its pairs go into a report: a body that
// breaks the shape is refused with the field named, whatever a node (or whoever holds its port)
// sends.
import t from "tap";
import { parseNodePingMesh } from "../../operators/agent/nodeserver-pingmesh.ts";

const where = "GET /pingmesh of node-a";
const good = {
  source: "node-a",
  budget: 16,
  intervalMs: 10_000,
  probesSent: 9,
  pairs: [{ target: "node-b", figures: { samples: 3, loss: 0, p50Ms: 0.2, p99Ms: 0.4, jitterMs: 0.1 } }],
};

t.test("a good body gives node pairs from its source", async (t) => {
  t.same(parseNodePingMesh(good, where), [
    {
      source: "node-a",
      target: "node-b",
      figures: { samples: 3, loss: 0, p50Ms: 0.2, p99Ms: 0.4, jitterMs: 0.1 },
    },
  ]);
});

t.test("bad bodies are refused, the field named", async (t) => {
  const pair = (figures: unknown, target: unknown = "node-b") => ({ ...good, pairs: [{ target, figures }] });
  const cases: [unknown, RegExp][] = [
    [null, /needs source/],
    [{ ...good, source: "Node A" }, /needs source/],
    [{ ...good, pairs: "x" }, /pairs must be a list/],
    [{ ...good, pairs: Array.from({ length: 1025 }, () => good.pairs[0]) }, /at most 1024/],
    [pair({ samples: 1, loss: 0 }, "../etc"), /pairs\[0\]\.target/],
    [pair({ samples: -1, loss: 0 }), /pairs\[0\]\.figures needs samples/],
    [pair({ samples: 1, loss: 2 }), /loss \(0 to 1\)/],
    [pair({ samples: 1, loss: 0, p50Ms: -3 }), /figures\.p50Ms/],
    [pair({ samples: 1, loss: 0, jitterMs: "1" }), /figures\.jitterMs/],
  ];
  for (const [body, message] of cases)
    t.throws(() => parseNodePingMesh(body, where), { message }, `refused: ${String(message)}`);
});
