// CustomResourceDefinitions (apiextensions.k8s.io/v1) for every kind, converted from the same
// schemas. A CRD schema must be structural: every node typed, no $ref, no if/then, no
// additionalProperties beside properties, no uniqueItems. What the conversion drops (cross-field
// rules, key patterns) is still enforced by checkSchema at the hub's boundary.
import { stringify } from "yaml";
import { API_VERSION, type KindInfo, kinds } from "./kinds.ts";

type Schema = Record<string, unknown>;

const GROUP = API_VERSION.split("/")[0]!;
const VERSION = API_VERSION.split("/")[1]!;

/** Keywords a structural schema may carry through unchanged. */
const KEPT = new Set([
  "description",
  "pattern",
  "format",
  "minLength",
  "maxLength",
  "minimum",
  "maximum",
  "minItems",
  "maxItems",
]);
// `default` is left out on purpose: the apiserver would fill defaults in on write, so an object
// stored in the Kubernetes backend would differ from the same object in SQLite or in git.

interface PrinterColumn {
  name: string;
  type: "string" | "integer" | "boolean" | "date";
  jsonPath: string;
}

const age: PrinterColumn = { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" };
const phase: PrinterColumn = { name: "Phase", type: "string", jsonPath: ".status.phase" };

const printerColumns: Record<string, PrinterColumn[]> = {
  Job: [phase, { name: "Domain", type: "string", jsonPath: ".spec.domain" }, age],
  Workflow: [phase, age],
  Domain: [{ name: "CIDR", type: "string", jsonPath: ".spec.cidr" }, age],
  Addon: [
    { name: "Addon", type: "string", jsonPath: ".spec.addonName" },
    { name: "Version", type: "string", jsonPath: ".spec.version" },
    phase,
    age,
  ],
  Bundle: [{ name: "Namespace", type: "string", jsonPath: ".spec.namespace" }, phase, age],
  BundleRelease: [{ name: "Revision", type: "string", jsonPath: ".status.revision" }, phase, age],
  Cluster: [{ name: "Runtime", type: "string", jsonPath: ".spec.runtime" }, phase, age],
  Node: [phase, { name: "Unschedulable", type: "boolean", jsonPath: ".spec.unschedulable" }, age],
  User: [age],
  Team: [{ name: "Cohort", type: "string", jsonPath: ".spec.cohort" }, age],
  Task: [phase, { name: "Job", type: "string", jsonPath: ".spec.job" }, age],
  DomainPeer: [{ name: "Prefix", type: "integer", jsonPath: ".spec.prefixLen" }, age],
  Pod: [
    phase,
    { name: "Node", type: "string", jsonPath: ".spec.node" },
    { name: "IP", type: "string", jsonPath: ".status.podIP" },
    age,
  ],
};

function jsonType(value: unknown): string {
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

function isObject(value: unknown): value is Schema {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

class Converter {
  readonly #defs: Record<string, Schema>;

  constructor(root: Schema) {
    this.#defs = (root.$defs ?? {}) as Record<string, Schema>;
  }

  convert(node: Schema): Schema {
    const ref = node.$ref;
    if (typeof ref === "string") {
      const target = this.#defs[ref.replace("#/$defs/", "")];
      if (!target) throw new Error(`unresolved $ref ${ref}`);
      const { $ref: _, ...siblings } = node;
      const resolved = this.convert(target);
      // Siblings of a $ref refine it: a description, or properties (metadata overlays).
      const overlay: Schema = isObject(siblings.properties)
        ? this.convert({ ...siblings, type: "object" })
        : Object.fromEntries(Object.entries(siblings).filter(([key]) => KEPT.has(key)));
      const merged: Schema = { ...resolved, ...overlay };
      if (isObject(resolved.properties) && isObject(overlay.properties)) {
        merged.properties = { ...resolved.properties, ...overlay.properties };
      }
      if (resolved.type !== undefined) merged.type = resolved.type;
      return merged;
    }
    const out: Schema = {};
    for (const [key, value] of Object.entries(node)) if (KEPT.has(key)) out[key] = value;
    if (node["x-rlark-free-form"] === true || typeof node["x-rlark-kubernetes-type"] === "string") {
      // Checked by checkSchema (the Kubernetes schema, the catalog's values schema), not here.
      return { ...out, type: "object", "x-kubernetes-preserve-unknown-fields": true };
    }
    if (node.const !== undefined) {
      out.enum = [node.const];
      out.type = jsonType(node.const);
    }
    if (Array.isArray(node.enum)) {
      out.enum = node.enum;
      out.type = jsonType(node.enum[0]);
    }
    if (typeof node.type === "string") out.type = node.type;
    if (out.type === "object" || isObject(node.properties)) {
      out.type = "object";
      const additional = node.additionalProperties;
      if (isObject(additional)) {
        // A map: known keys (Ray annotations, node categories) stay documented in checkSchema.
        out.additionalProperties = this.convert(additional);
      } else if (isObject(node.properties)) {
        out.properties = Object.fromEntries(
          Object.entries(node.properties)
            .filter((entry): entry is [string, Schema] => isObject(entry[1]))
            .map(([name, schema]) => [name, this.convert(schema)]),
        );
        if (Array.isArray(node.required) && node.required.length > 0) out.required = node.required;
      }
    }
    if (out.type === "array") {
      const items = isObject(node.items) ? this.convert(node.items) : { type: "string" };
      out.items = items;
      if (node.uniqueItems === true && items.type !== "object" && items.type !== "array") {
        out["x-kubernetes-list-type"] = "set";
      }
    }
    if (out.type === undefined)
      throw new Error(`schema node without a type: ${JSON.stringify(node).slice(0, 200)}`);
    return out;
  }
}

/** The structural OpenAPI v3 schema of one kind. */
export function structuralSchema(info: KindInfo): Schema {
  const converter = new Converter(info.schema);
  const properties = info.schema.properties as Record<string, Schema>;
  const out: Schema = {
    type: "object",
    description: info.schema.description,
    properties: {
      apiVersion: { type: "string", description: properties.apiVersion?.description },
      kind: { type: "string", description: properties.kind?.description },
      // The apiserver validates metadata itself; a CRD may not constrain it further.
      metadata: { type: "object" },
    },
  };
  for (const [name, schema] of Object.entries(properties)) {
    if (name === "apiVersion" || name === "kind" || name === "metadata") continue;
    (out.properties as Schema)[name] = converter.convert(schema);
  }
  const required = ((info.schema.required ?? []) as string[]).filter(
    (name) => name !== "apiVersion" && name !== "kind" && name !== "metadata",
  );
  if (required.length > 0) out.required = required;
  return out;
}

export function customResourceDefinition(info: KindInfo): Schema {
  const hasStatus = Object.hasOwn(info.schema.properties as Schema, "status");
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${info.plural}.${GROUP}` },
    spec: {
      group: GROUP,
      names: { kind: info.kind, listKind: `${info.kind}List`, plural: info.plural, singular: info.singular },
      scope: info.namespaced ? "Namespaced" : "Cluster",
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          schema: { openAPIV3Schema: structuralSchema(info) },
          ...(hasStatus ? { subresources: { status: {} } } : {}),
          additionalPrinterColumns: printerColumns[info.kind] ?? [age],
        },
      ],
    },
  };
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (!isObject(value)) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .filter((key) => value[key] !== undefined)
      .map((key) => [key, sortKeys(value[key])]),
  );
}

/** Every CRD (or those of `only`), deterministic: kinds in registry order, keys sorted. */
export function customResourceDefinitions(only?: readonly KindInfo[]): Schema[] {
  return (only ?? kinds).map((info) => sortKeys(customResourceDefinition(info)) as Schema);
}

export function renderCrdsYaml(only?: readonly KindInfo[]): string {
  return customResourceDefinitions(only)
    .map((crd) => `---\n${stringify(crd, { lineWidth: 0 })}`)
    .join("");
}

export function renderCrdsJson(only?: readonly KindInfo[]): string {
  return `${JSON.stringify({ apiVersion: "v1", kind: "List", items: customResourceDefinitions(only) }, null, 2)}\n`;
}
