// The SWIM protocol's parameters (Das, Gupta, Motivala 2002; names as in the paper and memberlist),
// with defaults for a cluster's node agents on one network. docs/diagnosis.md#agentgroup explains
// how they combine into detection times.

export interface SwimParams {
  /** T': each member probes one other member every this often (the paper's protocol period). */
  probeIntervalMs: number;
  /** How long a direct ping waits for its ack before k members are asked to ping indirectly. */
  probeTimeoutMs: number;
  /**
   * A suspect is declared dead after suspicionMultiplier × max(1, log10(members)) probe intervals
   * unless it refutes (a higher incarnation): the paper's suspicion sub-protocol.
   */
  suspicionMultiplier: number;
  /** k: members asked to ping a target that did not answer directly (ping-req). */
  indirectK: number;
  /** Each update is piggybacked on retransmitMultiplier × ceil(log10(members + 1)) messages (λ log n). */
  retransmitMultiplier: number;
  /** Members beyond this are not admitted: the table and the sync answers stay bounded. */
  maxMembers: number;
}

export const DEFAULT_SWIM_PARAMS: SwimParams = {
  probeIntervalMs: 1000,
  probeTimeoutMs: 500,
  suspicionMultiplier: 4,
  indirectK: 3,
  retransmitMultiplier: 4,
  maxMembers: 1024,
};

/** The parameters with `given` over the defaults, or an error naming the one that is wrong. */
export function swimParams(given: Partial<SwimParams> = {}): SwimParams {
  const params = { ...DEFAULT_SWIM_PARAMS, ...given };
  const positive = (key: keyof SwimParams, max: number) => {
    const value = params[key];
    if (!Number.isInteger(value) || value < 1 || value > max)
      throw new Error(`swim parameter ${key}: ${value} is not an integer from 1 to ${max}`);
  };
  positive("probeIntervalMs", 600_000);
  positive("probeTimeoutMs", 600_000);
  positive("suspicionMultiplier", 100);
  positive("indirectK", 16);
  positive("retransmitMultiplier", 100);
  positive("maxMembers", 65_536);
  if (params.probeTimeoutMs >= params.probeIntervalMs)
    throw new Error(
      `swim parameter probeTimeoutMs: ${params.probeTimeoutMs} must be below probeIntervalMs (${params.probeIntervalMs}), leaving time for indirect probes`,
    );
  return params;
}

/** How long a member stays suspect before it is declared dead, for a group of `members`. */
export function suspicionTimeoutMs(params: SwimParams, members: number): number {
  return Math.round(
    params.suspicionMultiplier * Math.max(1, Math.log10(Math.max(1, members))) * params.probeIntervalMs,
  );
}

/** How many messages carry each update, for a group of `members`. */
export function retransmitLimit(params: SwimParams, members: number): number {
  return params.retransmitMultiplier * Math.max(1, Math.ceil(Math.log10(members + 1)));
}
