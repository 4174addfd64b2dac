// Schema validation of one document. The validators are compiled once, on first use, and
// shared: `rlark validate` runs this on every manifest of a repository.
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { describeValue } from "./json-pointer.ts";
import { type KindInfo, kindInfo, kinds } from "./kinds.ts";
import { isKubernetesModel, KUBERNETES_KEYWORD, validateKubernetes } from "./kubernetes-keyword.ts";
import { SCHEMA_ID_BASE, sourceSchemas } from "./source-schemas.ts";
import { type SchemaViolation, toViolations } from "./violations.ts";

// ajv-formats is CommonJS; Node hands its module.exports over as the default import.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

/** Annotation keywords of our schemas: messages and rule ids for violations.ts, hints for codegen. */
export const ANNOTATION_KEYWORDS = [
  "x-rlark-message",
  "x-rlark-rule",
  "x-rlark-free-form",
  "x-rlark-kubernetes-type",
] as const;

function createAjv(): Ajv2020 {
  const ajv = new Ajv2020({
    allErrors: true,
    // parentSchema on each error carries our x-rlark-message / x-rlark-rule annotations.
    verbose: true,
    strict: true,
    // `then` branches name properties without repeating `type: object`; that is intended.
    strictTypes: false,
    strictRequired: false,
    useDefaults: false,
    inlineRefs: false,
    // The schemas are checked against the meta-schema by the tests; compiling it here costs startup.
    validateSchema: false,
    validateFormats: true,
  });
  addFormats(ajv);
  ajv.addVocabulary([...ANNOTATION_KEYWORDS]);
  ajv.addKeyword({
    keyword: KUBERNETES_KEYWORD,
    schemaType: "string",
    errors: true,
    metaSchema: { type: "string" },
    validate: validateKubernetes,
  });
  for (const [file, schema] of sourceSchemas) {
    if (typeof schema.$id !== "string" || schema.$id !== SCHEMA_ID_BASE + file) {
      throw new Error(`schemas/${file}: $id must be ${SCHEMA_ID_BASE}${file}`);
    }
    ajv.addSchema(schema);
  }
  return ajv;
}

let ajv: Ajv2020 | undefined;
const validators = new Map<string, ValidateFunction>();

function validatorFor(info: KindInfo): ValidateFunction {
  let validate = validators.get(info.kind);
  if (!validate) {
    ajv ??= createAjv();
    validate = ajv.getSchema(SCHEMA_ID_BASE + info.schemaFile);
    if (!validate) throw new Error(`no compiled schema for ${info.kind}`);
    validators.set(info.kind, validate);
  }
  return validate;
}

/** Compiles every kind's validator now rather than on first use (for servers and benchmarks). */
export function compileAll(): void {
  for (const info of kinds) validatorFor(info);
}

/**
 * Checks one document against its kind's schema. Returns [] when valid. Never throws on bad
 * input: a non-object or an unknown kind is itself a violation.
 */
export function checkSchema(doc: Record<string, unknown>): SchemaViolation[] {
  const value: unknown = doc;
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return [
      {
        path: "",
        rule: "schema/type",
        message: `must be object (got ${value === null ? "null" : Array.isArray(value) ? "a list" : typeof value})`,
      },
    ];
  }
  const kind = doc.kind;
  const info = typeof kind === "string" ? kindInfo(kind) : undefined;
  if (!info) {
    const known = kinds.map((k) => k.kind).join(", ");
    if (kind === undefined)
      return [{ path: "", rule: "schema/required", message: 'missing required field "kind"' }];
    return [
      {
        path: "/kind",
        rule: "schema/unknown-kind",
        message: `must be one of ${known} (got ${describeValue(kind)})`,
      },
    ];
  }
  const validate = validatorFor(info);
  if (validate(doc)) return [];
  return toViolations(validate.errors ?? [], doc);
}

export { isKubernetesModel };
