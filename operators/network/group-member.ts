// The nodeserver's AgentGroup member (kubernetes runtime; docs/diagnosis.md#agentgroup): each node's
// nodeserver gossips with the others over UDP (lib/swim), keyed by what the agent hands over in the
// peers state (`group.key`, derived from the agent's credentials; `group.seeds`, the nodes'
// addresses). Until a state carries a group, no member runs; a new key restarts the member (the
// old one says goodbye); new seeds only widen whom it asks to join while it knows nobody alive.
// The key is never logged.
import type { PeersGroup } from "../api/index.ts";
import type { Clock } from "../lib/clock.ts";
import type { Logger } from "../lib/logger.ts";
import { parseGroupAddress, SwimMember, type SwimParams, UdpTransport } from "../lib/swim/index.ts";
import { type AgentGroupReport, MAX_GROUP_MEMBERS } from "../lib/tunnel/index.ts";

export interface NodeserverGroupOptions {
  /** The member's id: the node's name. */
  id: string;
  /** ipv4:port to bind the UDP socket to. */
  listen: string;
  /** ipv4:port the other nodes reach this one at (needed with 0.0.0.0). */
  advertise?: string;
  params?: Partial<SwimParams>;
  clock: Clock;
  logger: Logger;
}

export class NodeserverGroup {
  readonly #options: NodeserverGroupOptions;
  #member: SwimMember | undefined;
  #key = "";
  #seeds = "";
  /** The last change's work: states apply one after the other. */
  #chain: Promise<void> = Promise.resolve();

  constructor(options: NodeserverGroupOptions) {
    const listen = parseGroupAddress(options.listen, "--group-listen");
    if (options.advertise) parseGroupAddress(options.advertise, "--group-advertise");
    if (listen.host === "0.0.0.0" && !options.advertise)
      throw new Error(
        "--group-listen 0.0.0.0 needs --group-advertise: the address the other nodes reach this one at",
      );
    this.#options = options;
  }

  /** Follows the peers state's group: starts, restarts (new key or seeds) or stops the member. */
  apply(group: PeersGroup | undefined): Promise<void> {
    this.#chain = this.#chain.then(() => this.#apply(group));
    return this.#chain;
  }

  async #apply(group: PeersGroup | undefined): Promise<void> {
    const seeds = JSON.stringify(group?.seeds ?? []);
    if ((group?.key ?? "") === this.#key && seeds === this.#seeds) return;
    // A seed list that changed while the member knows others alive changes nothing: SWIM spreads
    // the newcomers by itself. Only a member alone (or a new key) starts over with the new seeds.
    if (group && group.key === this.#key && this.#member && this.#member.summary().alive > 1) {
      this.#seeds = seeds;
      return;
    }
    await this.#member?.leave();
    this.#member = undefined;
    this.#key = group?.key ?? "";
    this.#seeds = seeds;
    if (!group) return;
    const options = this.#options;
    const listen = parseGroupAddress(options.listen, "--group-listen");
    const transport = await UdpTransport.open({
      host: listen.host,
      port: listen.port,
      ...(options.advertise ? { advertise: options.advertise } : {}),
    });
    const member = new SwimMember({
      id: options.id,
      key: Buffer.from(group.key, "hex"),
      transport,
      clock: options.clock,
      seeds: group.seeds,
      ...(options.params ? { params: options.params } : {}),
      onChange: (m) => {
        if (m.id !== options.id)
          options.logger.info("group member changed", {
            member: m.id,
            state: m.state,
            incarnation: m.incarnation,
          });
      },
    });
    member.start();
    this.#member = member;
    options.logger.info("group member started", {
      id: options.id,
      address: transport.address,
      seeds: group.seeds.length,
    });
  }

  /** This member's view of the group (what GET /group serves), or undefined while none runs. */
  report(): AgentGroupReport | undefined {
    const member = this.#member;
    if (!member) return undefined;
    return {
      member: this.#options.id,
      ...member.summary(),
      members: member
        .members()
        .slice(0, MAX_GROUP_MEMBERS)
        .map(({ id, address, state, incarnation }) => ({ id, address, state, incarnation })),
    };
  }

  /** Leaves the group (a goodbye, not a death) and closes the socket. */
  async close(): Promise<void> {
    await this.apply(undefined);
  }
}
