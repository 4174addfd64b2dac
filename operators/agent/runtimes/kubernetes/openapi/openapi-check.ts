// An object checked against its kind's schema in a cluster's own OpenAPI v3 document (the
// components.schemas of one group-version, as the API server serves them at /openapi/v3/...):
// unknown fields, wrong types, missing required fields, values outside an enum. Pure and bounded
// (at most `limit` findings, nesting at most MAX_DEPTH), so an odd schema or object costs little.
// Lenient where the API server is: a Quantity or an int-or-string takes a number or a string, a
// field that preserves unknown fields takes anything, null means "not set".

export type OpenApiSchema = {
  $ref?: string;
  allOf?: OpenApiSchema[];
  type?: string;
  format?: string;
  properties?: Record<string, OpenApiSchema>;
  additionalProperties?: OpenApiSchema | boolean;
  items?: OpenApiSchema;
  required?: string[];
  enum?: unknown[];
  "x-kubernetes-preserve-unknown-fields"?: boolean;
  "x-kubernetes-int-or-string"?: boolean;
  "x-kubernetes-group-version-kind"?: { group: string; version: string; kind: string }[];
};

export type Schemas = Readonly<Record<string, OpenApiSchema>>;

const MAX_DEPTH = 64;
const REF_PREFIX = "#/components/schemas/";

const pointerPart = (key: string) => key.replaceAll("~", "~0").replaceAll("/", "~1");

function typeOf(value: unknown): string {
  if (Array.isArray(value)) return "array";
  if (Number.isInteger(value)) return "integer";
  return typeof value;
}

/** The schema a `$ref` or a one-element `allOf` stands for, with its own name when it has one. */
function resolve(schema: OpenApiSchema, schemas: Schemas): { schema: OpenApiSchema; name?: string } {
  let current = schema;
  let name: string | undefined;
  for (let hops = 0; hops < 8; hops++) {
    const ref = current.$ref ?? (current.allOf?.length === 1 ? current.allOf[0]?.$ref : undefined);
    if (!ref?.startsWith(REF_PREFIX)) break;
    name = ref.slice(REF_PREFIX.length);
    const next = schemas[name];
    if (!next) break;
    current = next;
  }
  return name === undefined ? { schema: current } : { schema: current, name };
}

/** `/pointer: message` for each way `object` breaks the schema named `root`, at most `limit`. */
export function checkAgainstOpenApi(object: unknown, root: string, schemas: Schemas, limit = 16): string[] {
  const out: string[] = [];
  const walk = (value: unknown, raw: OpenApiSchema, pointer: string, depth: number): void => {
    if (out.length >= limit || depth > MAX_DEPTH || value === null || value === undefined) return;
    const { schema, name } = resolve(raw, schemas);
    const where = pointer || "/";
    const lenient =
      schema.format === "int-or-string" ||
      schema["x-kubernetes-int-or-string"] === true ||
      name?.endsWith(".resource.Quantity") === true ||
      name?.endsWith(".intstr.IntOrString") === true;
    const actual = typeOf(value);
    if (lenient) {
      if (actual !== "string" && actual !== "integer" && actual !== "number")
        out.push(`${where}: must be a number or a string, not ${actual}`);
      return;
    }
    if (schema.enum && !schema.enum.includes(value)) {
      const shown = schema.enum.slice(0, 8).map((e) => JSON.stringify(e));
      out.push(`${where}: must be one of ${shown.join(", ")}${schema.enum.length > 8 ? ", …" : ""}`);
      return;
    }
    const expected = schema.type;
    if (expected) {
      const fits =
        expected === actual ||
        (expected === "number" && actual === "integer") ||
        (expected === "object" && actual === "object");
      if (!fits) {
        out.push(`${where}: must be ${expected === "object" ? "an object" : expected}, not ${actual}`);
        return;
      }
    }
    if (actual === "array" && schema.items) {
      (value as unknown[]).forEach((item, i) => {
        walk(item, schema.items as OpenApiSchema, `${pointer}/${i}`, depth + 1);
      });
      return;
    }
    if (actual !== "object") return;
    const record = value as Record<string, unknown>;
    for (const key of schema.required ?? [])
      if (record[key] === undefined && out.length < limit)
        out.push(`${pointer}/${pointerPart(key)}: required`);
    const preserve = schema["x-kubernetes-preserve-unknown-fields"] === true;
    for (const [key, child] of Object.entries(record)) {
      if (out.length >= limit) return;
      const at = `${pointer}/${pointerPart(key)}`;
      const property = schema.properties?.[key];
      if (property) walk(child, property, at, depth + 1);
      else if (typeof schema.additionalProperties === "object")
        walk(child, schema.additionalProperties, at, depth + 1);
      else if (schema.properties && schema.additionalProperties !== true && !preserve)
        out.push(`${at}: unknown field`);
    }
  };
  const top = schemas[root];
  if (top) walk(object, top, "", 0);
  return out;
}

/** The schema name of a kind in one group-version's document, by x-kubernetes-group-version-kind. */
export function schemaNameOf(
  schemas: Schemas,
  group: string,
  version: string,
  kind: string,
): string | undefined {
  for (const [name, schema] of Object.entries(schemas)) {
    const gvks = schema["x-kubernetes-group-version-kind"] ?? [];
    if (gvks.some((g) => g.group === group && g.version === version && g.kind === kind)) return name;
  }
  return undefined;
}

/** Only the schemas `roots` reach: what is kept of a document (a group's has hundreds). */
export function reachableSchemas(roots: readonly string[], schemas: Schemas): Record<string, OpenApiSchema> {
  const kept: Record<string, OpenApiSchema> = {};
  const queue = [...roots];
  for (let name = queue.shift(); name !== undefined; name = queue.shift()) {
    const schema = schemas[name];
    if (!schema || name in kept) continue;
    kept[name] = schema;
    const visit = (node: unknown): void => {
      if (Array.isArray(node)) for (const item of node) visit(item);
      else if (node && typeof node === "object")
        for (const [key, child] of Object.entries(node)) {
          if (key === "$ref" && typeof child === "string" && child.startsWith(REF_PREFIX))
            queue.push(child.slice(REF_PREFIX.length));
          else visit(child);
        }
    };
    visit(schema);
  }
  return kept;
}
