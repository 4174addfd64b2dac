// The SSH tunnel between hub and agents: transport, framing, protocol and enrollment.

export * from "./agent-group-report.ts";
export { AgentSession, type AgentSessionEvents } from "./agent-session.ts";
export * from "./browse.ts";
export {
  createTunnelClient,
  TunnelClient,
  type TunnelClientEvents,
  type TunnelClientOptions,
} from "./client.ts";
export { coalesceWrites } from "./coalesce-writes.ts";
export { dialNoDelay } from "./connect.ts";
export {
  type AgentCredentials,
  type CredentialStore,
  fileCredentialStore,
  parseCredentials,
} from "./credentials.ts";
export {
  BUNDLE_DRY_RUN_KINDS,
  type BundleDryRunObjects,
  clipDryRunMessage,
  DRY_RUN_KINDS,
  DRY_RUN_PURPOSE,
  type DryRunAnswer,
  type DryRunObject,
  type DryRunRequest,
  MAX_BUNDLE_DIFF_BYTES,
  MAX_DRY_RUN_ANSWER_BYTES,
  MAX_DRY_RUN_MESSAGE,
  parseDryRunAnswer,
  parseDryRunRequest,
} from "./dry-run.ts";
export { type EnrollOptions, enrollAgent } from "./enroll-client.ts";
export { checkHubIdentity, parseHubAddress, parseHubAddresses } from "./hub-identity.ts";
export { DEFAULT_MAX_STARTUPS, type MaxStartups, parseMaxStartups } from "./max-startups.ts";
export { MessageChannel, type MessageChannelOptions } from "./message-channel.ts";
export { encodeLine, LineSplitter, LineTooLongError } from "./ndjson.ts";
export * from "./protocol.ts";
export { type BackoffOptions, backoffDelay } from "./reconnect-delay.ts";
export {
  DEFAULT_MAX_REQUEST_BYTES,
  DEFAULT_MAX_RESPONSE_BYTES,
  type RequestHandlerOptions,
  type RequestOptions,
  requestHandler,
  requestOverStream,
} from "./request-stream.ts";
export {
  type ClusterState,
  createTunnelServer,
  type EnrollmentHandler,
  type OpenStreamOptions,
  TunnelServer,
  type TunnelServerOptions,
  type UserLogins,
} from "./server.ts";
export { AGENT_SUBSYSTEM, AGENT_USER_PREFIX, DEFAULT_HEARTBEAT_MS, ENROLL_USER } from "./ssh-options.ts";
export { STREAM_ANSWER, type StreamHandler, StreamRefused, serveStream, streamAnswer } from "./streams.ts";
