import { Ajv2020 } from "ajv/dist/2020.js";
import t from "tap";
import { closest, toViolations } from "../../operators/api/violations.ts";

const ajv = new Ajv2020({ allErrors: true, verbose: true, strict: false });

function violations(schema: object, data: unknown) {
  const validate = ajv.compile(schema);
  validate(data);
  return toViolations(validate.errors ?? [], data);
}

t.test("a oneOf of scalar types fails as one type error naming every allowed type", async (t) => {
  const schema = {
    type: "object",
    properties: { port: { oneOf: [{ type: "integer" }, { type: "string" }] } },
  };
  t.same(violations(schema, { port: true }), [
    { path: "/port", rule: "schema/type", message: "must be integer or string (got true)" },
  ]);
});

t.test("an anyOf of objects reports the branch that got furthest, not every branch", async (t) => {
  const schema = {
    anyOf: [
      { type: "object", required: ["url"], properties: { url: { type: "string" } } },
      {
        type: "object",
        required: ["image"],
        properties: { image: { type: "string" }, env: { type: "array", items: { type: "string" } } },
      },
    ],
  };
  t.same(violations(schema, { image: "x", env: ["a", 3] }), [
    { path: "/env/1", rule: "schema/type", message: "must be string (got 3)" },
  ]);
});

t.test("an if/then without a rule of its own reports the failed then-branch only", async (t) => {
  const schema = {
    type: "object",
    if: { properties: { mode: { const: "tls" } }, required: ["mode"] },
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then keyword, not a thenable.
    then: { required: ["cert"] },
  };
  t.same(violations(schema, { mode: "tls" }), [
    { path: "", rule: "schema/required", message: 'missing required field "cert"' },
  ]);
});

t.test("generic messages for keywords without a message of their own", async (t) => {
  const schema = {
    type: "object",
    properties: {
      count: { type: "integer", minimum: 1, maximum: 3 },
      code: { type: "string", pattern: "^[A-Z]+$" },
      tags: { type: "array", minItems: 2, maxItems: 3, uniqueItems: true },
      note: { type: "string", minLength: 3 },
    },
  };
  t.same(violations(schema, { count: 0, code: "ab", tags: ["a"], note: "x" }), [
    { path: "/code", rule: "schema/pattern", message: 'must match ^[A-Z]+$ (got "ab")' },
    { path: "/count", rule: "schema/minimum", message: "must be at least 1 (got 0)" },
    { path: "/note", rule: "schema/min-length", message: "must be at least 3 characters" },
    { path: "/tags", rule: "schema/min-items", message: "must have at least 2 items" },
  ]);
  t.same(
    violations(schema, { count: 9, tags: ["a", "a", "b", "c"] }).map((v) => v.message),
    [
      "must be at most 3 (got 9)",
      "must have at most 3 items",
      "must not repeat items (items 0 and 1 are equal)",
    ],
  );
});

t.test("suggestions are offered for likely typos only", async (t) => {
  t.equal(closest("replica", ["replicas", "template", "kind"]), "replicas");
  t.equal(
    closest("nodeselector", ["nodeSelector", "annotations"]),
    "nodeSelector",
    "case differences are cheap",
  );
  t.equal(closest("colour", ["cidr"]), undefined);
  t.equal(closest("x", []), undefined);
});
