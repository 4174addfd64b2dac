// Schema validation of one document, on the hot path of `rlark validate`: the validators are
// compiled ahead of time by hack/codegen (generated/validators.js), so nothing compiles here.
import type { ValidateFunction } from "ajv";
import * as precompiled from "./generated/validators.js";
import { describeValue } from "./json-pointer.ts";
import { kindInfo, kinds } from "./kinds.ts";
import { checkKubernetesParts } from "./kubernetes-templates.ts";
import { type SchemaViolation, sortViolations, toViolations } from "./violations.ts";

const validators: ReadonlyMap<string, ValidateFunction> = new Map(Object.entries(precompiled));

/**
 * Checks one document against its kind's schema. Returns [] when valid. Never throws on bad
 * input: a non-object or an unknown kind is itself a violation.
 */
export function checkSchema(doc: unknown): SchemaViolation[] {
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) {
    const got = doc === null ? "null" : Array.isArray(doc) ? "a list" : typeof doc;
    return [{ path: "", rule: "schema/type", message: `must be object (got ${got})` }];
  }
  const record = doc as Record<string, unknown>;
  const kind = record.kind;
  const info = typeof kind === "string" ? kindInfo(kind) : undefined;
  const validate = info ? validators.get(info.kind) : undefined;
  if (!info || !validate) {
    if (kind === undefined)
      return [{ path: "", rule: "schema/required", message: 'missing required field "kind"' }];
    const known = kinds.map((k) => k.kind).join(", ");
    return [
      {
        path: "/kind",
        rule: "schema/unknown-kind",
        message: `must be one of ${known} (got ${describeValue(kind)})`,
      },
    ];
  }
  const valid = validate(record);
  const kubernetes = checkKubernetesParts(info, record);
  if (valid && kubernetes.length === 0) return [];
  return sortViolations([...(valid ? [] : toViolations(validate.errors ?? [], record)), ...kubernetes]);
}
