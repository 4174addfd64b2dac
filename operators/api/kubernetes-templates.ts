// Places in our kinds that hold Kubernetes objects (`x-rlark-kubernetes`), checked against the
// real Kubernetes OpenAPI schema (kubernetes-models' precompiled validators) instead of a
// hand-written copy of PodSpec. The places are found once by walking each kind's schema.
import type { ErrorObject } from "ajv";
import { validate as validatePodTemplateSpec } from "kubernetes-models/_schemas/IoK8sApiCoreV1PodTemplateSpec";
import kubernetesFields from "./generated/kubernetes-fields.json" with { type: "json" };
import { describeValue, escapePointerToken, valueAt } from "./json-pointer.ts";
import type { KindInfo } from "./kinds.ts";
import { closest, type SchemaViolation } from "./violations.ts";

/** Type name → field → the field's object type, or null for scalars and maps (hack/codegen). */
const fieldTable: Readonly<Record<string, Readonly<Record<string, string | null>>>> = kubernetesFields;

export const KUBERNETES_KEYWORD = "x-rlark-kubernetes";
export const KUBERNETES_RULE = "kubernetes/pod-template";

interface StandaloneValidate {
  (data: unknown, options: { instancePath: string }): boolean;
  errors?: ErrorObject[] | null;
}

interface Model {
  validate: StandaloneValidate;
  /** Type name in the field table, for unknown-field checks. */
  type: string;
  /** The fields of our node that belong to the Kubernetes object (ours may add siblings). */
  fields: readonly string[];
}

const models: Record<string, Model> = {
  PodTemplateSpec: {
    validate: validatePodTemplateSpec as unknown as StandaloneValidate,
    type: "PodTemplateSpec",
    fields: ["metadata", "spec"],
  },
};

/** A path pattern: property names, and "*" for every item of a list. */
interface Place {
  segments: readonly string[];
  model: Model;
}

type Schema = Record<string, unknown>;

function isObject(value: unknown): value is Schema {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Every place in a bundled kind schema that carries `x-rlark-kubernetes`. */
export function kubernetesPlaces(schema: Schema): Place[] {
  const defs = (schema.$defs ?? {}) as Record<string, Schema>;
  const places: Place[] = [];
  const visit = (node: unknown, segments: string[], depth: number): void => {
    if (!isObject(node) || depth > 64) return;
    if (typeof node.$ref === "string") visit(defs[node.$ref.replace("#/$defs/", "")], segments, depth + 1);
    const model = node[KUBERNETES_KEYWORD];
    if (typeof model === "string") {
      const known = models[model];
      if (!known) throw new Error(`no Kubernetes validator for ${model}`);
      places.push({ segments, model: known });
    }
    if (isObject(node.properties)) {
      for (const [name, child] of Object.entries(node.properties))
        visit(child, [...segments, name], depth + 1);
    }
    if (node.items !== undefined) visit(node.items, [...segments, "*"], depth + 1);
    if (Array.isArray(node.allOf)) for (const child of node.allOf) visit(child, segments, depth + 1);
  };
  visit(schema, [], 0);
  return places;
}

function messageFor(group: ErrorObject[], root: unknown, path: string): string {
  const got = describeValue(valueAt(root, path));
  if (group.some((e) => e.keyword === "format" && e.params.format === "quantity")) {
    return `must be a Kubernetes quantity such as 500m, 2Gi or 8 (got ${got})`;
  }
  const first = group.find((e) => e.keyword !== "oneOf" && e.keyword !== "anyOf") ?? group[0]!;
  if (group.length > 1 && group.every((e) => e.keyword === "type" || e.keyword === "oneOf")) {
    const types = group.filter((e) => e.keyword === "type").map((e) => String(e.params.type));
    return `must be ${[...new Set(types)].join(" or ")} (got ${got})`;
  }
  switch (first.keyword) {
    case "type":
      return `must be ${String(first.params.type)} (got ${got})`;
    case "enum":
      return `must be one of ${(first.params.allowedValues as unknown[]).map(String).join(", ")} (got ${got})`;
    case "required":
      return `missing required field ${JSON.stringify(first.params.missingProperty)}`;
    case "format":
      return `must be a valid ${String(first.params.format)} (got ${got})`;
    default:
      return `${first.message ?? `fails the Kubernetes schema (${first.keyword})`} (got ${got})`;
  }
}

/** Groups the Kubernetes validator's errors per field and turns each group into one violation. */
export function translate(errors: readonly ErrorObject[], root: unknown): SchemaViolation[] {
  const groups = new Map<string, ErrorObject[]>();
  for (const error of errors) {
    const group = groups.get(error.instancePath);
    if (group) group.push(error);
    else groups.set(error.instancePath, [error]);
  }
  const out: SchemaViolation[] = [];
  for (const [path, group] of groups) {
    // `required` errors of one object are separate problems; the rest of a group is one field.
    for (const error of group.filter((e) => e.keyword === "required")) {
      out.push({ path, rule: KUBERNETES_RULE, message: messageFor([error], root, path) });
    }
    const rest = group.filter((e) => e.keyword !== "required");
    if (rest.length > 0) out.push({ path, rule: KUBERNETES_RULE, message: messageFor(rest, root, path) });
  }
  return out;
}

/**
 * Fields the Kubernetes type does not have. Its OpenAPI schema admits them (the apiserver drops
 * them, or rejects them under strict field validation), so a typo would otherwise pass silently.
 */
function unknownFields(type: string, value: unknown, pointer: string, out: SchemaViolation[]): void {
  if (Array.isArray(value)) {
    value.forEach((item, i) => {
      unknownFields(type, item, `${pointer}/${i}`, out);
    });
    return;
  }
  const fields = fieldTable[type];
  if (!fields || !isObject(value)) return;
  for (const [key, child] of Object.entries(value)) {
    const path = `${pointer}/${escapePointerToken(key)}`;
    if (!Object.hasOwn(fields, key)) {
      const suggestion = closest(key, Object.keys(fields));
      const hint = suggestion ? ` (did you mean ${JSON.stringify(suggestion)}?)` : "";
      out.push({ path, rule: KUBERNETES_RULE, message: `unknown field ${JSON.stringify(key)}${hint}` });
      continue;
    }
    const childType = fields[key];
    if (childType) unknownFields(childType, child, path, out);
  }
}

function check(
  place: Place,
  node: unknown,
  index: number,
  pointer: string,
  root: unknown,
  out: SchemaViolation[],
): void {
  if (index === place.segments.length) {
    // Non-objects already fail our schema's `type: object`; one error per field is enough.
    if (!isObject(node)) return;
    const subject: Schema = {};
    for (const field of place.model.fields) if (node[field] !== undefined) subject[field] = node[field];
    const { validate } = place.model;
    if (!validate(subject, { instancePath: pointer })) out.push(...translate(validate.errors ?? [], root));
    unknownFields(place.model.type, subject, pointer, out);
    return;
  }
  const segment = place.segments[index]!;
  if (segment === "*") {
    if (!Array.isArray(node)) return;
    node.forEach((item, i) => {
      check(place, item, index + 1, `${pointer}/${i}`, root, out);
    });
  } else if (isObject(node) && Object.hasOwn(node, segment)) {
    check(place, node[segment], index + 1, `${pointer}/${escapePointerToken(segment)}`, root, out);
  }
}

const placesByKind = new WeakMap<KindInfo, Place[]>();

/** Violations of the Kubernetes schema inside `doc`, a document of kind `info`. */
export function checkKubernetesParts(info: KindInfo, doc: unknown): SchemaViolation[] {
  let places = placesByKind.get(info);
  if (!places) {
    places = kubernetesPlaces(info.schema);
    placesByKind.set(info, places);
  }
  const out: SchemaViolation[] = [];
  for (const place of places) check(place, doc, 0, "", doc, out);
  return out;
}
