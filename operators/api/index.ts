// The public face of the API: the kind registry, schema validation and the generated types.

export { bundleSchema } from "./bundle.ts";
export { checkSchema } from "./check-schema.ts";
export * from "./generated/index.ts";
export { API_VERSION, type KindInfo, kindByPlural, kindInfo, kinds } from "./kinds.ts";
export type { SchemaViolation } from "./violations.ts";
export * from "./well-known.ts";
