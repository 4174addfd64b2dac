// The public face of the API: the kind registry, schema validation, manifest validation, CRDs,
// the addon catalog's shape, well-known names and the generated types.

export {
  type AddonCatalog,
  addonCatalog,
  type CatalogEntry,
  type CatalogManifest,
  compareVersions,
  type ValuesViolation,
} from "./addon-catalog.ts";
export {
  type AddonIdentity,
  AddonRenderError,
  DEFAULT_ADDON_NAMESPACE,
  RENDER_IF_ANNOTATION,
  renderAddon,
} from "./addon-render.ts";
export { type ArtifactSource, artifactSource } from "./artifact-url.ts";
export { bundleSchema } from "./bundle.ts";
export { checkSchema } from "./check-schema.ts";
export {
  customResourceDefinition,
  customResourceDefinitions,
  renderCrdsJson,
  renderCrdsYaml,
} from "./crd.ts";
export * from "./generated/index.ts";
export { unescapePointerToken } from "./json-pointer.ts";
export { API_VERSION, type KindInfo, kindByPlural, kindInfo, kinds } from "./kinds.ts";
export {
  type DomainPeersEntry,
  type DomainTasks,
  domainTasksFrom,
  isIpv4,
  MAX_GROUP_SEEDS,
  type PeersGroup,
  type PeersState,
  parsePeersState,
  peersStateFrom,
} from "./peers-state.ts";
export { sealedSecretContext, sealTargetOf } from "./seal-target.ts";
export { HIDDEN_VALUE, shownSealedSecretSpec } from "./sealed-secret-view.ts";
export { parseSshPublicKey, type SshPublicKey, sshFingerprint } from "./ssh-public-key.ts";
export {
  jobTeam,
  type ObjectFilter,
  type ScopeFacts,
  teamFilter,
  teamsGranted,
  teamsOfUser,
  type Viewer,
  viewerOf,
} from "./team-scope.ts";
export * from "./validate/index.ts";
export type { SchemaViolation } from "./violations.ts";
export * from "./well-known.ts";
