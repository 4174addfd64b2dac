// AgentGroup's membership: SWIM with authenticated, bounded datagrams (docs/diagnosis.md#agentgroup).
export { parseGroupAddress } from "./address.ts";
export {
  decode,
  encode,
  groupKey,
  MAX_MESSAGE_BYTES,
  type MemberState,
  type Message,
  type Update,
} from "./codec.ts";
export {
  type GroupSummary,
  type MemberInfo,
  SwimMember,
  type SwimMemberOptions,
  type Transport,
} from "./member.ts";
export { DEFAULT_SWIM_PARAMS, type SwimParams, suspicionTimeoutMs, swimParams } from "./params.ts";
export { UdpTransport, type UdpTransportOptions } from "./udp-transport.ts";
