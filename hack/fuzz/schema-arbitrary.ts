// fast-check arbitraries built from the JSON Schemas in schemas/: values that follow a kind's
// schema (so a fuzz input reaches the code behind validation), and the same values broken in one
// random place (a field dropped, replaced by anything, or added), so the refusals are exercised.
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import fc from "fast-check";

type Schema = Record<string, unknown>;

const schemasDir = resolve(import.meta.dirname, "../../schemas");

/** `#/...` references made `<file>#/...`, so a merged schema's references resolve wherever they came from. */
function absoluteRefs(node: unknown, file: string): unknown {
  if (Array.isArray(node)) return node.map((n) => absoluteRefs(n, file));
  if (!node || typeof node !== "object") return node;
  return Object.fromEntries(
    Object.entries(node).map(([k, v]) => [
      k,
      k === "$ref" && typeof v === "string" && v.startsWith("#") ? `${file}${v}` : absoluteRefs(v, file),
    ]),
  );
}

/** Every schemas/*.schema.json by file name. */
export const SCHEMAS: ReadonlyMap<string, Schema> = new Map(
  readdirSync(schemasDir)
    .filter((f) => f.endsWith(".schema.json"))
    .map((f) => [f, absoluteRefs(JSON.parse(readFileSync(join(schemasDir, f), "utf8")), f) as Schema]),
);

/** Past this depth an object-valued field is left out or made minimal: the schemas are recursive. */
const MAX_DEPTH = 7;

function resolveRef(ref: string, file: string): { schema: Schema; file: string } {
  const [target, pointer = ""] = ref.split("#");
  const at = target ? target : file;
  let node: unknown = SCHEMAS.get(at);
  for (const part of pointer.split("/").filter(Boolean)) node = (node as Schema)[part.replace(/~1/g, "/")];
  if (!node || typeof node !== "object") throw new Error(`unresolved $ref ${ref} in ${file}`);
  return { schema: node as Schema, file: at };
}

/** The schema with its $ref, allOf members and sibling keywords merged (a reference with local
 * `properties` narrows the referenced object, as the schemas here use it). */
function flatten(schema: Schema, file: string): { schema: Schema; file: string } {
  let merged: Schema = { ...schema };
  const at = file;
  if (typeof schema.$ref === "string") {
    const target = resolveRef(schema.$ref, file);
    const { $ref: _, ...local } = schema;
    merged = mergeSchemas(flatten(target.schema, target.file).schema, local);
  }
  if (Array.isArray(merged.allOf)) {
    for (const member of merged.allOf as Schema[]) merged = mergeSchemas(merged, flatten(member, at).schema);
    delete merged.allOf;
  }
  return { schema: merged, file: at };
}

function mergeSchemas(a: Schema, b: Schema): Schema {
  const out: Schema = { ...a, ...b };
  if (a.properties || b.properties) {
    const props: Schema = { ...(a.properties as Schema) };
    for (const [k, v] of Object.entries((b.properties as Schema) ?? {})) {
      props[k] = props[k] ? { allOf: [props[k], v] } : v;
    }
    out.properties = props;
  }
  if (a.required || b.required) {
    out.required = [...new Set([...((a.required as string[]) ?? []), ...((b.required as string[]) ?? [])])];
  }
  return out;
}

function stringArbitrary(schema: Schema): fc.Arbitrary<string> {
  const max = typeof schema.maxLength === "number" ? schema.maxLength : 40;
  const min = typeof schema.minLength === "number" ? schema.minLength : 0;
  if (schema.format === "date-time") {
    return fc
      .date({ min: new Date(0), max: new Date(4102444800000), noInvalidDate: true })
      .map((d) => d.toISOString().replace(/\.\d{3}Z$/, "Z"));
  }
  if (schema.format === "ipv4") return fc.ipV4();
  if (schema.format === "email") return fc.emailAddress();
  if (typeof schema.pattern === "string") {
    return fc
      .stringMatching(new RegExp(schema.pattern, "u"))
      .filter((s) => s.length >= min)
      .map((s) => s.slice(0, max));
  }
  return fc.string({ minLength: min, maxLength: Math.min(max, min + 40) });
}

/** An arbitrary of values that follow `schema` (as far as this generator understands it). */
export function schemaArbitrary(schema: Schema, file: string, depth = 0): fc.Arbitrary<unknown> {
  const { schema: s, file: at } = flatten(schema, file);
  if ("const" in s) return fc.constant(s.const);
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
  const alternatives = (s.oneOf ?? s.anyOf) as Schema[] | undefined;
  if (Array.isArray(alternatives)) {
    const { oneOf: _o, anyOf: _a, ...rest } = s;
    return fc.oneof(...alternatives.map((alt) => schemaArbitrary(mergeSchemas(rest, alt), at, depth + 1)));
  }
  const type = Array.isArray(s.type) ? (s.type as string[]) : s.type ? [s.type as string] : undefined;
  if (type && type.length > 1) {
    return fc.oneof(...type.map((t) => schemaArbitrary({ ...s, type: t }, at, depth)));
  }
  const t = type?.[0] ?? (s.properties ? "object" : s.items ? "array" : undefined);
  switch (t) {
    case "string":
      return stringArbitrary(s);
    case "integer":
      return fc.integer({
        min: typeof s.minimum === "number" ? s.minimum : -1000,
        max: typeof s.maximum === "number" ? s.maximum : 100000,
      });
    case "number":
      return fc.double({
        min: typeof s.minimum === "number" ? s.minimum : -1e6,
        max: typeof s.maximum === "number" ? s.maximum : 1e6,
        noNaN: true,
      });
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    case "array": {
      if (depth >= MAX_DEPTH) return fc.constant([]);
      const items = s.items
        ? schemaArbitrary(s.items as Schema, at, depth + 1)
        : fc.jsonValue({ maxDepth: 1 });
      const min = typeof s.minItems === "number" ? s.minItems : 0;
      const max = Math.max(min, Math.min(typeof s.maxItems === "number" ? s.maxItems : 3, 3));
      return fc.array(items, { minLength: min, maxLength: max });
    }
    case "object": {
      const props = (s.properties ?? {}) as Record<string, Schema>;
      const required = (s.required as string[] | undefined) ?? [];
      if (depth >= MAX_DEPTH) return fc.constant({});
      const record = fc.record(
        Object.fromEntries(Object.entries(props).map(([k, v]) => [k, schemaArbitrary(v, at, depth + 1)])),
        { requiredKeys: required.filter((k) => k in props) },
      );
      const extra = s.additionalProperties;
      if (extra && typeof extra === "object" && Object.keys(props).length === 0) {
        const keys = s.propertyNames
          ? stringArbitrary(flatten(s.propertyNames as Schema, at).schema)
          : fc.string({ maxLength: 20 });
        return fc.dictionary(keys, schemaArbitrary(extra as Schema, at, depth + 1), { maxKeys: 3 });
      }
      return record;
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** The kind's schema from `schemas/<file>`. */
export function kindArbitrary(file: string): fc.Arbitrary<unknown> {
  const schema = SCHEMAS.get(file);
  if (!schema) throw new Error(`no schema ${file}`);
  return schemaArbitrary(schema, file);
}

/** Breaks `value` in one place chosen by `pick`: a key deleted, a value replaced, a key added. */
function breakAt(value: unknown, pick: number, replacement: unknown, mode: number): unknown {
  const copy = structuredClone(value);
  const containers: (Record<string, unknown> | unknown[])[] = [];
  const walk = (v: unknown): void => {
    if (v && typeof v === "object") {
      containers.push(v as Record<string, unknown>);
      for (const child of Object.values(v)) walk(child);
    }
  };
  walk(copy);
  if (containers.length === 0) return replacement;
  const target = containers[pick % containers.length] as Record<string, unknown>;
  const keys = Object.keys(target);
  const key = keys.length > 0 ? (keys[pick % keys.length] as string) : "x";
  if (mode === 0) delete target[key];
  else if (mode === 1) target[key] = replacement;
  else target[`fuzz${pick % 7}`] = replacement;
  return copy;
}

/** Mostly valid values, and one in two broken in one place. */
export function validAndBroken(valid: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  return fc.oneof(
    valid,
    fc
      .tuple(valid, fc.nat(), fc.anything({ maxDepth: 2 }), fc.integer({ min: 0, max: 2 }))
      .map(([v, pick, replacement, mode]) => breakAt(v, pick, replacement, mode)),
  );
}
