import fc from "fast-check";
import t, { type Test } from "tap";
import type { JobPhase } from "../../../operators/api/index.ts";
import {
  type DagNode,
  decide,
  type FailurePolicy,
  type NodeObservation,
} from "../../../operators/controllers/workflow/dag.ts";

const phases: JobPhase[] = ["Pending", "Running", "Succeeded", "Failed", "Stopping", "Stopped"];
const policies: FailurePolicy[] = ["StopAll", "ContinueIndependent"];

/** A random DAG: node i depends only on nodes before it, so it is cycle-free by construction. */
const dagArb = fc
  .integer({ min: 1, max: 9 })
  .chain((n) =>
    fc
      .tuple(...Array.from({ length: n }, (_, i) => fc.subarray(Array.from({ length: i }, (_, j) => j))))
      .map((deps) => deps.map((d, i): DagNode => ({ name: `n${i}`, dependsOn: d.map((j) => `n${j}`) }))),
  );

const stateArb = dagArb.chain((nodes) =>
  fc.record({
    nodes: fc.constant(nodes),
    observed: fc
      .tuple(
        ...nodes.map(() =>
          fc.option(
            fc.record({
              phase: fc.option(fc.constantFrom(...phases), { nil: undefined }),
              stopRequested: fc.boolean(),
            }),
            { nil: undefined },
          ),
        ),
      )
      .map((obs) => {
        const m = new Map<string, NodeObservation>();
        obs.forEach((o, i) => {
          if (o) m.set(`n${i}`, o);
        });
        return m;
      }),
    failurePolicy: fc.constantFrom(...policies),
  }),
);

/** fc.assert throws on a counterexample; the pass records that the property was checked. */
function holds(t: Test, property: fc.IProperty<unknown>): void {
  fc.assert(property, { numRuns: 500 });
  t.pass("holds on 500 random cases");
}

function dependants(nodes: readonly DagNode[], of: ReadonlySet<string>): Set<string> {
  const out = new Set<string>();
  let grew = true;
  while (grew) {
    grew = false;
    for (const n of nodes) {
      if (out.has(n.name)) continue;
      if ((n.dependsOn ?? []).some((d) => of.has(d) || out.has(d))) {
        out.add(n.name);
        grew = true;
      }
    }
  }
  return out;
}

const chain: DagNode[] = [
  { name: "collect" },
  { name: "train", dependsOn: ["collect"] },
  { name: "deploy", dependsOn: ["train"] },
];

t.test(
  "collect → train → deploy: only the root starts, then each after its dependency succeeded",
  async (t) => {
    const first = decide({ nodes: chain, observed: new Map(), failurePolicy: "StopAll" });
    t.same(first.start, ["collect"]);
    t.equal(first.phase, "Pending");
    const running = decide({
      nodes: chain,
      observed: new Map([["collect", { phase: "Running" }]]),
      failurePolicy: "StopAll",
    });
    t.same(running.start, [], "train waits while collect runs");
    t.equal(running.phase, "Running");
    const collected = decide({
      nodes: chain,
      observed: new Map([["collect", { phase: "Succeeded" }]]),
      failurePolicy: "StopAll",
    });
    t.same(collected.start, ["train"]);
    const done = decide({
      nodes: chain,
      observed: new Map<string, NodeObservation>(chain.map((n) => [n.name, { phase: "Succeeded" }])),
      failurePolicy: "StopAll",
    });
    t.same(done.start, []);
    t.equal(done.phase, "Succeeded");
  },
);

t.test("a diamond starts the join only when both branches succeeded", async (t) => {
  const diamond: DagNode[] = [
    { name: "a" },
    { name: "b", dependsOn: ["a"] },
    { name: "c", dependsOn: ["a"] },
    { name: "d", dependsOn: ["b", "c"] },
  ];
  const afterA = decide({
    nodes: diamond,
    observed: new Map([["a", { phase: "Succeeded" }]]),
    failurePolicy: "StopAll",
  });
  t.same(afterA.start, ["b", "c"]);
  const oneBranch = decide({
    nodes: diamond,
    observed: new Map<string, NodeObservation>([
      ["a", { phase: "Succeeded" }],
      ["b", { phase: "Succeeded" }],
      ["c", { phase: "Running" }],
    ]),
    failurePolicy: "StopAll",
  });
  t.same(oneBranch.start, []);
});

t.test("StopAll: a failure stops the running Jobs and skips the rest", async (t) => {
  const nodes: DagNode[] = [{ name: "a" }, { name: "b" }, { name: "c", dependsOn: ["b"] }, { name: "d" }];
  const d = decide({
    nodes,
    observed: new Map<string, NodeObservation>([
      ["a", { phase: "Failed" }],
      ["b", { phase: "Succeeded" }],
      ["d", { phase: "Running" }],
    ]),
    failurePolicy: "StopAll",
  });
  t.same(d.start, [], "c is never created although b succeeded");
  t.same(d.stop, ["d"]);
  t.equal(d.phases.get("c"), "Skipped");
  t.equal(d.phase, "Running", "still winding down");
  const after = decide({
    nodes,
    observed: new Map<string, NodeObservation>([
      ["a", { phase: "Failed" }],
      ["b", { phase: "Succeeded" }],
      ["d", { phase: "Stopped", stopRequested: true }],
    ]),
    failurePolicy: "StopAll",
  });
  t.equal(after.phase, "Failed");
  t.same(after.stop, []);
});

t.test("ContinueIndependent: what does not depend on the failure keeps running", async (t) => {
  const nodes: DagNode[] = [
    { name: "a" },
    { name: "b", dependsOn: ["a"] },
    { name: "c", dependsOn: ["b"] },
    { name: "x" },
    { name: "y", dependsOn: ["x"] },
  ];
  const d = decide({
    nodes,
    observed: new Map<string, NodeObservation>([
      ["a", { phase: "Failed" }],
      ["x", { phase: "Succeeded" }],
    ]),
    failurePolicy: "ContinueIndependent",
  });
  t.same(d.start, ["y"]);
  t.same(d.stop, []);
  t.equal(d.phases.get("b"), "Skipped");
  t.equal(d.phases.get("c"), "Skipped", "transitive dependants are skipped too");
  const end = decide({
    nodes,
    observed: new Map<string, NodeObservation>([
      ["a", { phase: "Failed" }],
      ["x", { phase: "Succeeded" }],
      ["y", { phase: "Succeeded" }],
    ]),
    failurePolicy: "ContinueIndependent",
  });
  t.equal(end.phase, "Failed");
});

t.test("property: a node starts only when it has no Job and every dependency succeeded", async (t) => {
  holds(
    t,
    fc.property(stateArb, ({ nodes, observed, failurePolicy }) => {
      const d = decide({ nodes, observed, failurePolicy });
      for (const name of d.start) {
        if (observed.has(name)) return false;
        const node = nodes.find((n) => n.name === name);
        if (!(node?.dependsOn ?? []).every((dep) => observed.get(dep)?.phase === "Succeeded")) return false;
      }
      return true;
    }),
  );
});

t.test("property: every ready node is started unless StopAll saw a failure", async (t) => {
  holds(
    t,
    fc.property(stateArb, ({ nodes, observed, failurePolicy }) => {
      const d = decide({ nodes, observed, failurePolicy });
      const anyBroken = d.broken.length > 0;
      for (const n of nodes) {
        if (observed.has(n.name)) continue;
        const ready = (n.dependsOn ?? []).every((dep) => observed.get(dep)?.phase === "Succeeded");
        const expected = ready && !(failurePolicy === "StopAll" && anyBroken);
        if (d.start.includes(n.name) !== expected) return false;
      }
      return true;
    }),
  );
});

t.test("property: stops only happen under StopAll after a failure, to live unstopped Jobs", async (t) => {
  holds(
    t,
    fc.property(stateArb, ({ nodes, observed, failurePolicy }) => {
      const d = decide({ nodes, observed, failurePolicy });
      if (d.stop.length === 0) return true;
      if (failurePolicy !== "StopAll" || d.broken.length === 0) return false;
      return d.stop.every((name) => {
        const o = observed.get(name);
        const p = o?.phase ?? "Pending";
        return o !== undefined && !o.stopRequested && (p === "Pending" || p === "Running");
      });
    }),
  );
});

/**
 * Runs a DAG to the end: each step applies the decision (creates Jobs as Pending, stops as
 * Stopped) and then finishes one active Job with the outcome fast-check chose.
 */
function simulate(
  nodes: readonly DagNode[],
  failurePolicy: FailurePolicy,
  outcomes: readonly boolean[],
): { order: string[]; observed: Map<string, NodeObservation>; phase: string; startedAfterFailure: boolean } {
  const observed = new Map<string, NodeObservation>();
  const order: string[] = [];
  let failedOnce = false;
  let startedAfterFailure = false;
  for (let step = 0; step < 200; step++) {
    const d = decide({ nodes, observed, failurePolicy });
    for (const name of d.start) {
      observed.set(name, { phase: "Running" });
      order.push(name);
      if (failedOnce) startedAfterFailure = true;
    }
    for (const name of d.stop) observed.set(name, { phase: "Stopped", stopRequested: true });
    const active = [...observed].find(([, o]) => o.phase === "Running");
    if (!active) {
      const final = decide({ nodes, observed, failurePolicy });
      return { order, observed, phase: final.phase, startedAfterFailure };
    }
    const ok = outcomes[order.indexOf(active[0]) % Math.max(1, outcomes.length)] ?? true;
    observed.set(active[0], { phase: ok ? "Succeeded" : "Failed" });
    if (!ok) failedOnce = true;
  }
  throw new Error("the DAG did not finish in 200 steps");
}

t.test(
  "property: a DAG runs in dependency order to a terminal phase that matches the outcomes",
  async (t) => {
    holds(
      t,
      fc.property(
        dagArb,
        fc.constantFrom(...policies),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 9 }),
        (nodes, failurePolicy, outcomes) => {
          const { order, observed, phase, startedAfterFailure } = simulate(nodes, failurePolicy, outcomes);
          // Dependency order: every dependency was started (and so finished) before its dependant.
          for (const n of nodes) {
            const at = order.indexOf(n.name);
            if (at < 0) continue;
            for (const dep of n.dependsOn ?? []) {
              const depAt = order.indexOf(dep);
              if (depAt < 0 || depAt > at) return false;
              if (observed.get(dep)?.phase !== "Succeeded") return false;
            }
          }
          const failed = new Set([...observed].filter(([, o]) => o.phase === "Failed").map(([n]) => n));
          if (failed.size === 0) return phase === "Succeeded" && order.length === nodes.length;
          if (phase !== "Failed") return false;
          if (failurePolicy === "StopAll") return !startedAfterFailure;
          // ContinueIndependent: exactly the nodes downstream of a failure never ran.
          const downstream = dependants(nodes, failed);
          return nodes.every((n) => observed.has(n.name) === !downstream.has(n.name));
        },
      ),
    );
  },
);

t.test("a node whose dependencies all succeeded starts, whatever happened further up", async (t) => {
  // Found by the liveness property: b succeeded although a, above it, is being stopped.
  const d = decide({
    nodes: [{ name: "a" }, { name: "b", dependsOn: ["a"] }, { name: "c", dependsOn: ["b"] }],
    observed: new Map<string, NodeObservation>([
      ["a", { phase: "Stopping" }],
      ["b", { phase: "Succeeded" }],
    ]),
    failurePolicy: "ContinueIndependent",
  });
  t.same(d.start, ["c"]);
});
