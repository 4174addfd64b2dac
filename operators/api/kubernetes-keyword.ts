// The `x-rlark-kubernetes` schema keyword: checks a node against the real Kubernetes OpenAPI
// schema (kubernetes-models' precompiled validators) instead of a hand-written copy of PodSpec.
// Its errors come back with paths into the whole document and finished messages, because the
// generic translation in violations.ts cannot see the Kubernetes schema behind them.
import type { ErrorObject, SchemaValidateFunction } from "ajv";
import { validate as validatePodTemplateSpec } from "kubernetes-models/_schemas/IoK8sApiCoreV1PodTemplateSpec";
import { describeValue, valueAt } from "./json-pointer.ts";

export const KUBERNETES_KEYWORD = "x-rlark-kubernetes";
export const KUBERNETES_RULE = "kubernetes/pod-template";

interface StandaloneValidate {
  (data: unknown, options: { instancePath: string; rootData?: unknown }): boolean;
  errors?: ErrorObject[] | null;
}

interface Model {
  validate: StandaloneValidate;
  /** The fields of our node that belong to the Kubernetes object (ours may add siblings). */
  fields: readonly string[];
}

const models: Record<string, Model> = {
  PodTemplateSpec: {
    validate: validatePodTemplateSpec as unknown as StandaloneValidate,
    fields: ["metadata", "spec"],
  },
};

export function isKubernetesModel(name: string): boolean {
  return Object.hasOwn(models, name);
}

/** A violation already translated, carried through ajv's error list. */
export interface KubernetesError extends Partial<ErrorObject> {
  instancePath: string;
  keyword: string;
  message: string;
  rlarkRule: string;
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

/** Groups the Kubernetes validator's errors per field and turns each group into one message. */
function translate(errors: ErrorObject[], root: unknown): KubernetesError[] {
  const groups = new Map<string, ErrorObject[]>();
  for (const error of errors) {
    const path = error.instancePath;
    const group = groups.get(path);
    if (group) group.push(error);
    else groups.set(path, [error]);
  }
  const out: KubernetesError[] = [];
  for (const [path, group] of groups) {
    // `required` errors of one object are separate problems; the rest of a group is one field.
    const required = group.filter((e) => e.keyword === "required");
    const rest = group.filter((e) => e.keyword !== "required");
    for (const error of required) {
      out.push({
        instancePath: path,
        keyword: "required",
        rlarkRule: KUBERNETES_RULE,
        message: messageFor([error], root, path),
      });
    }
    if (rest.length > 0) {
      out.push({
        instancePath: path,
        keyword: rest[0]!.keyword,
        rlarkRule: KUBERNETES_RULE,
        message: messageFor(rest, root, path),
      });
    }
  }
  return out;
}

export const validateKubernetes: SchemaValidateFunction = (model: string, data, _parentSchema, dataCxt) => {
  const entry = models[model];
  // Non-objects already fail the sibling `type: object`; one error per field is enough.
  if (!entry || data === null || typeof data !== "object" || Array.isArray(data)) return true;
  const record = data as Record<string, unknown>;
  const subject: Record<string, unknown> = {};
  for (const field of entry.fields) if (record[field] !== undefined) subject[field] = record[field];
  const instancePath = dataCxt?.instancePath ?? "";
  const { validate } = entry;
  if (validate(subject, { instancePath })) return true;
  // ajv reads a keyword's errors from the function object after each failing call.
  validateKubernetes.errors = translate(validate.errors ?? [], dataCxt?.rootData);
  return false;
};
