// A cluster's own OpenAPI v3 schemas for Bundle objects (docs/bundles.md, "Validation").
export { ClusterOpenApi, type ClusterOpenApiOptions } from "./cluster-openapi.ts";
export {
  checkAgainstOpenApi,
  type OpenApiSchema,
  reachableSchemas,
  type Schemas,
  schemaNameOf,
} from "./openapi-check.ts";
