// The agent's AgentGroup member (lib/swim): on a process or docker agent's machine the agent itself
// gossips with the cluster's other node agents over UDP, and each report carries its view of the
// group to the hub. The key is derived from the agent's private key, the cluster's credential: only
// what holds that key (the agent, and members it hands the derived key to) is admitted, and the
// private key itself never leaves the agent.
import type { Clock } from "../lib/clock.ts";
import type { Logger } from "../lib/logger.ts";
import { groupKey, parseGroupAddress, SwimMember, type SwimParams, UdpTransport } from "../lib/swim/index.ts";
import { type AgentGroupReport, type Capability, MAX_GROUP_MEMBERS } from "../lib/tunnel/index.ts";

export interface AgentGroupOptions {
  /** The member's id: its node's name. */
  id: string;
  cluster: string;
  /** The cluster's credential the group key is derived from (the agent's private key, PEM). */
  secret: string;
  /** ipv4:port to bind the UDP socket to. */
  listen: string;
  /** ipv4:port others reach it at, when not the bound address (0.0.0.0). */
  advertise?: string;
  /** Members to join through. */
  join: readonly string[];
  params?: Partial<SwimParams>;
  clock: Clock;
  logger: Logger;
  /** Called when another member's state changes: a report is due. */
  onChange?: () => void;
}

export interface AgentGroup {
  report(): AgentGroupReport;
  /** The network-probe capability while the member runs. */
  capability(): Capability;
  stop(): Promise<void>;
}

export async function startAgentGroup(options: AgentGroupOptions): Promise<AgentGroup> {
  const listen = parseGroupAddress(options.listen, "--group-listen");
  if (options.advertise) parseGroupAddress(options.advertise, "--group-advertise");
  for (const seed of options.join) parseGroupAddress(seed, "--group-join");
  if (listen.host === "0.0.0.0" && !options.advertise)
    throw new Error(
      "--group-listen 0.0.0.0 needs --group-advertise: the address the other members reach this one at",
    );
  const transport = await UdpTransport.open({
    host: listen.host,
    port: listen.port,
    ...(options.advertise ? { advertise: options.advertise } : {}),
  });
  const member = new SwimMember({
    id: options.id,
    key: groupKey(options.secret, options.cluster),
    transport,
    clock: options.clock,
    seeds: options.join,
    ...(options.params ? { params: options.params } : {}),
    onChange: (m) => {
      if (m.id === options.id) return;
      options.logger.info("group member changed", {
        member: m.id,
        state: m.state,
        incarnation: m.incarnation,
      });
      options.onChange?.();
    },
  });
  member.start();
  options.logger.info("group member started", { id: options.id, address: transport.address });
  return {
    report: () => ({
      member: options.id,
      ...member.summary(),
      members: member
        .members()
        .slice(0, MAX_GROUP_MEMBERS)
        .map(({ id, address, state, incarnation }) => ({ id, address, state, incarnation })),
    }),
    capability: () => {
      const { suspect, dead } = member.summary();
      return {
        name: "network-probe",
        process: "RUNNING",
        health: "READY",
        message: `AgentGroup member on ${transport.address}${suspect + dead > 0 ? `: ${suspect} suspect, ${dead} dead` : ""}`,
      };
    },
    stop: () => member.leave(),
  };
}
