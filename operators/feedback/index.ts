export type {
  StatusBranchWriter,
  StatusBranchWriterOptions,
  StatusCommitResult,
  StatusDocument,
  StatusRemote,
} from "./status-branch.ts";
export { createStatusBranchWriter, DEFAULT_STATUS_BRANCH } from "./status-branch.ts";
export type { RenderStatusOptions } from "./status-yaml.ts";
export { renderStatusYaml, statusDocumentPath } from "./status-yaml.ts";
