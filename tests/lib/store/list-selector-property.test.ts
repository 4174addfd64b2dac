import fc from "fast-check";
import t from "tap";
import {
  compileLabelSelector,
  type KubeObject,
  type LabelSelector,
  matches,
} from "../../../operators/lib/store/index.ts";
import { tempStore } from "./helpers.ts";

// Small alphabets so that selectors and labels overlap often.
const key = fc.constantFrom("app", "tier", "rlinf.io/job");
const value = fc.constantFrom("a", "b", "c");
const labels = fc.dictionary(key, value, { maxKeys: 3 });
const selector: fc.Arbitrary<LabelSelector> = fc.record(
  {
    matchLabels: fc.dictionary(key, value, { maxKeys: 2 }),
    matchExpressions: fc.array(
      fc.oneof(
        fc.record({
          key,
          operator: fc.constantFrom("In" as const, "NotIn" as const),
          values: fc.array(value, { minLength: 1, maxLength: 3 }),
        }),
        fc.record({ key, operator: fc.constantFrom("Exists" as const, "DoesNotExist" as const) }),
      ),
      { maxLength: 3 },
    ),
  },
  { requiredKeys: [] },
);

t.test("a label-selected list (through the label index) equals filtering everything", async (t) => {
  const { store } = tempStore(t);
  const objects: KubeObject[] = [];
  const sets = fc.sample(labels, { numRuns: 60, seed: 7 });
  for (const [i, l] of sets.entries()) {
    objects.push(
      await store.create({
        apiVersion: "v1",
        kind: "Task",
        metadata: { name: `t${i}`, namespace: `ns${i % 3}`, labels: l },
      }),
    );
  }
  await fc.assert(
    fc.asyncProperty(
      selector,
      fc.option(fc.constantFrom("ns0", "ns1", "ns2"), { nil: undefined }),
      async (sel, ns) => {
        const compiled = compileLabelSelector(sel);
        const want = objects
          .filter(
            (o) => (ns === undefined || o.metadata.namespace === ns) && matches(compiled, o.metadata.labels),
          )
          .map((o) => `${o.metadata.namespace}/${o.metadata.name}`)
          .sort();
        const got = (
          await store.list("Task", { labelSelector: sel, ...(ns ? { namespace: ns } : {}) })
        ).items.map((o) => `${o.metadata.namespace}/${o.metadata.name}`);
        return JSON.stringify(got) === JSON.stringify(want);
      },
    ),
    { numRuns: 200 },
  );
  t.pass();
});
