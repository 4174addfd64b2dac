import { CustomResourceDefinition } from "kubernetes-models/apiextensions.k8s.io/v1/CustomResourceDefinition";
import t from "tap";
import { parse, parseAllDocuments } from "yaml";
import { customResourceDefinitions, renderCrdsJson, renderCrdsYaml } from "../../operators/api/crd.ts";
import { kinds } from "../../operators/api/index.ts";

type Node = Record<string, unknown>;

/** Keywords the apiserver rejects in a structural CRD schema (or that we must never emit). */
const FORBIDDEN = [
  "$ref",
  "$defs",
  "$id",
  "$schema",
  "if",
  "then",
  "else",
  "const",
  "propertyNames",
  "patternProperties",
  "dependentRequired",
  "dependentSchemas",
  "unevaluatedProperties",
  "prefixItems",
  "allOf",
  "anyOf",
  "oneOf",
  "not",
  // The apiserver would fill defaults in, and the Kubernetes store backend would then hold
  // objects that differ from the same objects in git and in SQLite.
  "default",
];

/** Checks the structural-schema rules we can check offline; returns the problems found. */
function structuralProblems(schema: Node, path: string, depth = 0): string[] {
  const problems: string[] = [];
  for (const key of Object.keys(schema)) {
    if (FORBIDDEN.includes(key) || key.startsWith("x-rlark"))
      problems.push(`${path}: forbidden keyword ${key}`);
  }
  const preserve = schema["x-kubernetes-preserve-unknown-fields"] === true;
  const intOrString = schema["x-kubernetes-int-or-string"] === true;
  if (typeof schema.type !== "string" && !preserve && !intOrString) problems.push(`${path}: no type`);
  if (Array.isArray(schema.type)) problems.push(`${path}: type list`);
  if (schema.uniqueItems === true) problems.push(`${path}: uniqueItems`);
  if (schema.additionalProperties !== undefined) {
    if (schema.additionalProperties === false) problems.push(`${path}: additionalProperties false`);
    if (schema.properties !== undefined) problems.push(`${path}: properties and additionalProperties`);
  }
  if (schema.type === "array" && (schema.items === null || typeof schema.items !== "object")) {
    problems.push(`${path}: array without items schema`);
  }
  // The apiserver owns metadata; a CRD leaves it as a bare object.
  const topLevelMetadata = depth === 1 && path.endsWith(".metadata");
  if (
    schema.type === "object" &&
    !preserve &&
    !schema.properties &&
    !schema.additionalProperties &&
    !topLevelMetadata
  ) {
    problems.push(`${path}: object with no fields would be pruned empty`);
  }
  if (
    Array.isArray(schema.enum) &&
    schema.enum.some((v) => typeof v !== schema.type && schema.type !== "integer")
  ) {
    problems.push(`${path}: enum values do not match the type`);
  }
  for (const [name, child] of Object.entries((schema.properties ?? {}) as Record<string, Node>)) {
    problems.push(...structuralProblems(child, `${path}.${name}`, depth + 1));
  }
  if (schema.items) problems.push(...structuralProblems(schema.items as Node, `${path}[]`, depth + 1));
  if (schema.additionalProperties && typeof schema.additionalProperties === "object") {
    problems.push(...structuralProblems(schema.additionalProperties as Node, `${path}{}`, depth + 1));
  }
  return problems;
}

t.test("every CRD schema is structural", async (t) => {
  for (const crd of customResourceDefinitions()) {
    const version = ((crd.spec as Node).versions as Node[])[0]!;
    const schema = (version.schema as Node).openAPIV3Schema as Node;
    t.same(structuralProblems(schema, (crd.metadata as Node).name as string), []);
    t.same((schema.properties as Node).metadata, { type: "object" }, "metadata is left to the apiserver");
  }
});

t.test("one CRD per kind, named <plural>.rlinf.io, with the registry's scope and names", async (t) => {
  const crds = customResourceDefinitions();
  t.equal(crds.length, kinds.length);
  for (const [i, info] of kinds.entries()) {
    const crd = crds[i]!;
    const spec = crd.spec as Node;
    t.equal(crd.apiVersion, "apiextensions.k8s.io/v1");
    t.equal((crd.metadata as Node).name, `${info.plural}.rlinf.io`);
    t.equal(spec.group, "rlinf.io");
    t.equal(spec.scope, info.namespaced ? "Namespaced" : "Cluster");
    t.same(spec.names, {
      kind: info.kind,
      listKind: `${info.kind}List`,
      plural: info.plural,
      singular: info.singular,
    });
    const version = (spec.versions as Node[])[0]!;
    t.match(version, { name: "v1alpha1", served: true, storage: true });
  }
});

t.test(
  "kinds with a status get the status subresource; User, Team, AccessPolicy and SealedSecret, which have none, do not",
  async (t) => {
    for (const crd of customResourceDefinitions()) {
      const version = ((crd.spec as Node).versions as Node[])[0]!;
      const kind = ((crd.spec as Node).names as Node).kind;
      if (kind === "User" || kind === "Team" || kind === "AccessPolicy" || kind === "SealedSecret")
        t.equal(version.subresources, undefined, String(kind));
      else t.same(version.subresources, { status: {} }, String(kind));
    }
  },
);

t.test("printer columns show what kubectl get users need", async (t) => {
  const columns = (kind: string): string[] => {
    const crd = customResourceDefinitions().find((c) => ((c.spec as Node).names as Node).kind === kind)!;
    const version = ((crd.spec as Node).versions as Node[])[0]!;
    return (version.additionalPrinterColumns as Node[]).map((c) => `${c.name}=${c.jsonPath}`);
  };
  t.same(columns("Job"), ["Phase=.status.phase", "Domain=.spec.domain", "Age=.metadata.creationTimestamp"]);
  t.same(columns("Task"), ["Phase=.status.phase", "Job=.spec.job", "Age=.metadata.creationTimestamp"]);
  t.same(columns("Cluster"), [
    "Runtime=.spec.runtime",
    "Phase=.status.phase",
    "Age=.metadata.creationTimestamp",
  ]);
  t.same(columns("Node"), [
    "Phase=.status.phase",
    "Unschedulable=.spec.unschedulable",
    "Age=.metadata.creationTimestamp",
  ]);
});

t.test("free-form parts keep unknown fields: pod templates and Addon values", async (t) => {
  const schemaOf = (kind: string): Node => {
    const crd = customResourceDefinitions().find((c) => ((c.spec as Node).names as Node).kind === kind)!;
    return (((crd.spec as Node).versions as Node[])[0]!.schema as Node).openAPIV3Schema as Node;
  };
  const job = schemaOf("Job") as { properties: { spec: Node } };
  const task = ((job.properties.spec.properties as Node).tasks as Node).items as Node;
  const template = (((task.properties as Node).kubernetes as Node).properties as Node).workload as Node;
  const templateSpec = ((template.properties as Node).template as Node).properties as Node;
  t.match(templateSpec.spec, { type: "object", "x-kubernetes-preserve-unknown-fields": true });
  t.match(templateSpec.metadata, { type: "object", "x-kubernetes-preserve-unknown-fields": true });
  const addon = schemaOf("Addon") as { properties: { spec: { properties: Node } } };
  t.match(addon.properties.spec.properties.values, {
    type: "object",
    "x-kubernetes-preserve-unknown-fields": true,
  });
});

t.test("the YAML output is deterministic, sorted, and parses back to the same CRDs", async (t) => {
  const first = renderCrdsYaml();
  t.equal(renderCrdsYaml(), first);
  const parsed = parseAllDocuments(first).map((d) => d.toJS());
  t.same(parsed, customResourceDefinitions());
  const keysSorted = (node: unknown): boolean => {
    if (Array.isArray(node)) return node.every(keysSorted);
    if (node === null || typeof node !== "object") return true;
    const keys = Object.keys(node);
    return keys.every((k, i) => i === 0 || keys[i - 1]! < k) && Object.values(node).every(keysSorted);
  };
  t.ok(keysSorted(parsed), "every map's keys are sorted");
  t.same(parse(renderCrdsJson()).items, parsed, "JSON output holds the same CRDs in a List");
});

t.test("every CRD passes the Kubernetes apiextensions.k8s.io/v1 schema", async (t) => {
  for (const crd of customResourceDefinitions()) {
    t.doesNotThrow(
      () => new CustomResourceDefinition(crd as never).validate(),
      String((crd.metadata as Node).name),
    );
  }
});
