import fc from "fast-check";
import t from "tap";
import {
  compileLabelSelector,
  formatSelector,
  type LabelSelector,
  matches,
  parseSelector,
} from "../../../operators/lib/store/index.ts";

const labels = { app: "train", tier: "gpu", "rlinf.io/job": "j1", empty: "" };

t.test("the string syntax selects as Kubernetes does", async (t) => {
  const cases: [string, boolean][] = [
    ["", true],
    ["app=train", true],
    ["app==train", true],
    ["app=serve", false],
    ["app!=serve", true],
    ["missing!=x", true], // != also selects objects without the label
    ["app in (serve, train)", true],
    ["app notin (serve,train)", false],
    ["missing notin (a)", true],
    ["app", true],
    ["missing", false],
    ["!missing", true],
    ["!app", false],
    ["app=train,tier=gpu,rlinf.io/job=j1", true],
    ["app=train,tier=cpu", false],
    ["empty=", true],
    [" app = train , !missing ", true],
  ];
  for (const [selector, want] of cases) t.equal(matches(parseSelector(selector), labels), want, selector);
});

t.test("malformed selectors are Invalid and name the term", async (t) => {
  for (const bad of ["app=", "a b", "app in (x", "app=x,,b=c", "-bad=x", "app=no spaces", "app in x"]) {
    if (bad === "app=") continue; // empty value is legal
    t.throws(() => parseSelector(bad), { code: "Invalid", message: /label selector/ }, bad);
  }
});

t.test("matchExpressions with a bad operator or missing values is Invalid", async (t) => {
  t.throws(() => compileLabelSelector({ matchExpressions: [{ key: "a", operator: "In" }] }), {
    code: "Invalid",
  });
  t.throws(
    () => compileLabelSelector({ matchExpressions: [{ key: "a", operator: "Exists", values: ["x"] }] }),
    { code: "Invalid" },
  );
  t.throws(
    () => compileLabelSelector({ matchExpressions: [{ key: "a", operator: "Gt" as "In", values: ["1"] }] }),
    { code: "Invalid" },
  );
});

// Generators over a small alphabet so that generated labels and selectors actually overlap.
const key = fc.constantFrom("a", "b", "c", "rlinf.io/job", "x.y/z");
const value = fc.constantFrom("", "v1", "v2", "v3");
const labelSet = fc.dictionary(key, value, { maxKeys: 5 });
const expression = fc.oneof(
  fc.record({
    key,
    operator: fc.constantFrom("In" as const, "NotIn" as const),
    values: fc.array(value, { minLength: 1, maxLength: 3 }),
  }),
  fc.record({ key, operator: fc.constantFrom("Exists" as const, "DoesNotExist" as const) }),
);
const objectSelector: fc.Arbitrary<LabelSelector> = fc.record(
  {
    matchLabels: fc.dictionary(key, value, { maxKeys: 3 }),
    matchExpressions: fc.array(expression, { maxLength: 4 }),
  },
  { requiredKeys: [] },
);

function reference(selector: LabelSelector, l: Record<string, string>): boolean {
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (l[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(l, e.key);
    const inValues = has && (e.values ?? []).includes(l[e.key]!);
    const ok =
      e.operator === "In"
        ? inValues
        : e.operator === "NotIn"
          ? !inValues
          : e.operator === "Exists"
            ? has
            : !has;
    if (!ok) return false;
  }
  return true;
}

t.test("the object form agrees with a direct reading of the Kubernetes rules", async (t) => {
  fc.assert(
    fc.property(
      objectSelector,
      labelSet,
      (selector, l) => matches(compileLabelSelector(selector), l) === reference(selector, l),
    ),
  );
  t.pass();
});

t.test("formatting and parsing again selects exactly the same label sets", async (t) => {
  fc.assert(
    fc.property(objectSelector, labelSet, (selector, l) => {
      const compiled = compileLabelSelector(selector);
      const text = formatSelector(compiled);
      const reparsed = parseSelector(text);
      return matches(reparsed, l) === matches(compiled, l) && formatSelector(reparsed) === text;
    }),
  );
  t.pass();
});

t.test("a selector made of a set's own labels always selects that set", async (t) => {
  fc.assert(
    fc.property(labelSet, (l) => {
      const text = Object.entries(l)
        .map(([k, v]) => `${k}=${v}`)
        .join(",");
      return matches(parseSelector(text), l);
    }),
  );
  t.pass();
});
