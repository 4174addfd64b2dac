// The AgentGroup summary a report carries (agent/group.ts makes it; Cluster status.agentGroup
// keeps it): the reporting member's view of the cluster's SWIM membership, checked field by
// field like the rest of the protocol, with the member list bounded.
import { ProtocolError } from "./protocol-error.ts";

export const GROUP_STATES = ["alive", "suspect", "dead", "left"] as const;
export type GroupState = (typeof GROUP_STATES)[number];
export const MAX_GROUP_MEMBERS = 256;

export interface AgentGroupMemberReport {
  id: string;
  address: string;
  state: GroupState;
  incarnation: number;
}

export interface AgentGroupReport {
  member: string;
  alive: number;
  suspect: number;
  dead: number;
  left: number;
  members?: AgentGroupMemberReport[];
}

function field(o: Record<string, unknown>, key: string, where: string, maxLength: number): string {
  const v = o[key];
  if (typeof v !== "string" || v.length === 0 || v.length > maxLength)
    throw new ProtocolError(`${where}: ${key} must be a string of 1 to ${maxLength} characters`);
  return v;
}

function count(o: Record<string, unknown>, key: string, where: string): number {
  const v = o[key];
  if (!Number.isSafeInteger(v) || (v as number) < 0)
    throw new ProtocolError(`${where}: ${key} must be a count`);
  return v as number;
}

function obj(v: unknown, where: string): Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v))
    throw new ProtocolError(`${where}: must be an object`);
  return v as Record<string, unknown>;
}

export function parseAgentGroupReport(v: unknown, where: string): AgentGroupReport {
  const o = obj(v, where);
  const report: AgentGroupReport = {
    member: field(o, "member", where, 63),
    alive: count(o, "alive", where),
    suspect: count(o, "suspect", where),
    dead: count(o, "dead", where),
    left: count(o, "left", where),
  };
  if (o.members !== undefined) {
    if (!Array.isArray(o.members) || o.members.length > MAX_GROUP_MEMBERS)
      throw new ProtocolError(`${where}: members must be a list of at most ${MAX_GROUP_MEMBERS}`);
    report.members = o.members.map((m, i) => {
      const at = `${where} members[${i}]`;
      const member = obj(m, at);
      if (!(GROUP_STATES as readonly unknown[]).includes(member.state))
        throw new ProtocolError(`${at}: state must be one of ${GROUP_STATES.join(", ")}`);
      return {
        id: field(member, "id", at, 63),
        address: field(member, "address", at, 86),
        state: member.state as GroupState,
        incarnation: count(member, "incarnation", at),
      };
    });
  }
  return report;
}
