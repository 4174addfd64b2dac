// The AgentGroup of a kubernetes cluster (docs/diagnosis.md#agentgroup): its members are the
// nodeservers (one per node, `rlark nodeserver --group-listen`), keyed by what the agent hands them
// in the peers state. The agent is no member itself (it runs in a pod, not on every node): it asks
// the nodeservers for their view, GET /group on their stats port with the stats token, and reports
// the first view it gets, the nodes asked in address order, one at a time (one request per interval
// while the first node answers). The view is checked like a report's before it is kept.

import { MAX_GROUP_SEEDS, type PeersGroup } from "../api/index.ts";
import type { Clock } from "../lib/clock.ts";
import type { Logger } from "../lib/logger.ts";
import { groupKey } from "../lib/swim/index.ts";
import { type AgentGroupReport, type Capability, parseAgentGroupReport } from "../lib/tunnel/index.ts";
import { getNodeserverJson } from "./nodeserver-stats.ts";

/** The peers state's group: the key derived from the agent's credentials, the nodes as seeds. */
export function nodeserverGroup(
  secret: string,
  cluster: string,
  nodeIPs: readonly string[],
  port: number,
): PeersGroup {
  const seeds = [...new Set(nodeIPs)]
    .sort()
    .slice(0, MAX_GROUP_SEEDS)
    .map((ip) => `${ip}:${port}`);
  return { key: groupKey(secret, cluster).toString("hex"), seeds };
}

export interface GroupPollerOptions {
  /** The nodes' stats endpoints, in the order to ask them. */
  hosts(): readonly string[];
  port: number;
  token: string;
  intervalMs: number;
  timeoutMs?: number;
  clock: Clock;
  logger: Logger;
  /** After each poll that changed the view. */
  onChange(): void;
}

export class GroupPoller {
  readonly #options: GroupPollerOptions;
  #view: AgentGroupReport | undefined;
  #lastError: string | undefined;
  #everSeen = false;
  #timer: ReturnType<Clock["setTimeout"]> | undefined;
  #stopped = false;

  constructor(options: GroupPollerOptions) {
    this.#options = options;
  }

  /** The latest view a nodeserver gave, if any answers. */
  view(): AgentGroupReport | undefined {
    return this.#view;
  }

  /** network-probe: the nodeservers' group as the agent last saw it. */
  capability(): Capability {
    const view = this.#view;
    if (view)
      return {
        name: "network-probe",
        process: "RUNNING",
        health: "READY",
        message: `AgentGroup of the nodeservers, as ${view.member} sees it: ${view.alive} alive${
          view.suspect + view.dead > 0 ? `, ${view.suspect} suspect, ${view.dead} dead` : ""
        }`,
      };
    return {
      name: "network-probe",
      process: this.#everSeen ? "BACKOFF" : "STARTING",
      health: this.#everSeen ? "DEGRADED" : "STARTING",
      message: `no nodeserver answers GET /group${this.#lastError ? `: ${this.#lastError}` : " yet"}`,
    };
  }

  start(): void {
    void this.#poll();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer) this.#options.clock.clearTimeout(this.#timer);
  }

  async #poll(): Promise<void> {
    const { hosts, port, token, clock, logger } = this.#options;
    let view: AgentGroupReport | undefined;
    let error: string | undefined;
    for (const host of hosts()) {
      if (this.#stopped) return;
      try {
        const body = await getNodeserverJson(
          { host, port, token },
          "/group",
          this.#options.timeoutMs ?? 2_000,
        );
        view = parseAgentGroupReport(body, `GET /group of ${host}:${port}`);
        break;
      } catch (err) {
        error = (err as Error).message;
      }
    }
    if (!view && error !== this.#lastError && error)
      logger.warn("no nodeserver gave its AgentGroup view", { error });
    this.#lastError = view ? undefined : error;
    if (view) this.#everSeen = true;
    if (JSON.stringify(view) !== JSON.stringify(this.#view)) {
      this.#view = view;
      this.#options.onChange();
    }
    if (!this.#stopped) this.#timer = clock.setTimeout(() => void this.#poll(), this.#options.intervalMs);
  }
}
