// The one ajv configuration of our schemas. hack/codegen compiles it ahead of time into
// generated/validators.js (standalone code), so `rlark validate` starts without compiling;
// tests compile it at runtime to compare.
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { SCHEMA_ID_BASE, sourceSchemas } from "./source-schemas.ts";

// ajv-formats is CommonJS; Node hands its module.exports over as the default import.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

/**
 * Annotation keywords of our schemas: messages and rule ids for violations.ts, hints for
 * codegen and the CRD converter, and the places checked against Kubernetes schemas.
 */
export const ANNOTATION_KEYWORDS = [
  "x-rlark-message",
  "x-rlark-rule",
  "x-rlark-free-form",
  "x-rlark-kubernetes",
  "x-rlark-kubernetes-type",
  "x-rlark-sensitive",
] as const;

export function createAjv(options: { standalone?: boolean } = {}): Ajv2020 {
  const ajv = new Ajv2020({
    allErrors: true,
    // parentSchema on each error carries our x-rlark-message / x-rlark-rule annotations.
    verbose: true,
    strict: true,
    // `then` branches name properties without repeating `type: object`; that is intended.
    strictTypes: false,
    strictRequired: false,
    useDefaults: false,
    // Shared definitions compile once as functions instead of being inlined into every user.
    inlineRefs: false,
    validateFormats: true,
    ...(options.standalone ? { code: { source: true, esm: true, lines: true } } : {}),
  });
  addFormats(ajv);
  ajv.addVocabulary([...ANNOTATION_KEYWORDS]);
  for (const [file, schema] of sourceSchemas) {
    if (schema.$id !== SCHEMA_ID_BASE + file)
      throw new Error(`schemas/${file}: $id must be ${SCHEMA_ID_BASE}${file}`);
    ajv.addSchema(schema);
  }
  return ajv;
}
