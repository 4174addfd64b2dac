// Capability states on a Kubernetes Node (docs/devices.md, "Capability status"): the embodied
// runtime's components run on every robot node, the kubernetes agent in one pod, so the node's
// device plugin publishes its node's capability files as Node conditions (node-problem-detector
// does the same for its problems) and the agent reads them from the Nodes it already watches.
// One condition per component: type capability.rlinf.io/<component>, status True when READY
// (Unknown when UNKNOWN, else False), reason <PROCESS>_<HEALTH>, message the component's, and
// lastHeartbeatTime at each publication, so a publisher that died shows as UNKNOWN, never failed.
import { STALE_MS } from "./capability-status.ts";
import {
  type Capability,
  HEALTH_STATES,
  type HealthState,
  PROCESS_STATES,
  type ProcessState,
} from "./tunnel/index.ts";

export const CAPABILITY_CONDITION_PREFIX = "capability.rlinf.io/";
/** Node condition messages are free text; a component's own message is cut here. */
const MAX_MESSAGE = 1024;
const NONE = "NONE";

export interface CapabilityCondition {
  type: string;
  status: "True" | "False" | "Unknown";
  reason: string;
  message: string;
  lastHeartbeatTime: string;
  lastTransitionTime: string;
}

/** The condition that says `capability` at `now`; `previous` keeps its transition time when its status holds. */
export function capabilityCondition(
  capability: Capability,
  now: number,
  previous?: Pick<CapabilityCondition, "status" | "lastTransitionTime">,
): CapabilityCondition {
  const status =
    capability.health === "READY"
      ? "True"
      : !capability.health || capability.health === "UNKNOWN"
        ? "Unknown"
        : "False";
  const at = new Date(now).toISOString();
  return {
    type: `${CAPABILITY_CONDITION_PREFIX}${capability.name}`,
    status,
    reason: `${capability.process ?? NONE}_${capability.health ?? NONE}`,
    message: (capability.message ?? "").slice(0, MAX_MESSAGE),
    lastHeartbeatTime: at,
    lastTransitionTime: previous?.status === status ? previous.lastTransitionTime : at,
  };
}

/**
 * The capability a Node condition carries, or undefined for a condition of another kind. One not
 * published for STALE_MS is UNKNOWN (its node or publisher is gone); one that does not parse is
 * UNKNOWN with the reason.
 */
export function capabilityFromCondition(
  condition: { type: string; reason?: string; message?: string; lastHeartbeatTime?: Date | string },
  now: number,
): Capability | undefined {
  if (!condition.type.startsWith(CAPABILITY_CONDITION_PREFIX)) return undefined;
  const name = condition.type.slice(CAPABILITY_CONDITION_PREFIX.length);
  const [process, health] = (condition.reason ?? "").split("_");
  const message = condition.message ? { message: condition.message } : {};
  if (!isState(PROCESS_STATES, process) || !isState(HEALTH_STATES, health))
    return {
      name,
      health: "UNKNOWN",
      message: `reason "${condition.reason ?? ""}" is not <PROCESS>_<HEALTH>`,
    };
  const heartbeat = condition.lastHeartbeatTime
    ? new Date(condition.lastHeartbeatTime).getTime()
    : Number.NaN;
  if (!Number.isFinite(heartbeat)) return { name, health: "UNKNOWN", message: "no lastHeartbeatTime" };
  if (now - heartbeat > STALE_MS)
    return {
      name,
      health: "UNKNOWN",
      message: `no report for ${Math.round((now - heartbeat) / 1000)}s (last: ${process ?? "?"}/${health ?? "?"})`,
    };
  return {
    name,
    ...(process === NONE ? {} : { process: process as ProcessState }),
    ...(health === NONE ? {} : { health: health as HealthState }),
    ...message,
  };
}

function isState(states: readonly string[], value: string | undefined): value is string {
  return value === NONE || (value !== undefined && states.includes(value));
}
