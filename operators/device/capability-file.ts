// Where a device controller leaves its capability state for its node's agent to read (seed 002: a
// process state and a health per capability): the one status-file format of
// lib/capability-status.ts, which the device plugin writes too. The writer rewrites its file
// periodically (capability-reporter.ts): updatedAt doubles as a heartbeat, so the agent can tell a
// controller that died from one whose state simply did not change.
import { CAPABILITY_DIR, writeCapabilityStatus } from "../lib/capability-status.ts";

export type ProcessState = "STOPPED" | "STARTING" | "RUNNING" | "BACKOFF" | "FAILED";
export type Health = "STARTING" | "READY" | "DEGRADED" | "STOPPED" | "UNKNOWN";

export interface CapabilityState {
  process: ProcessState;
  health: Health;
  message: string;
}

/** The file a reader finds: the state, its name and the write time in milliseconds since the epoch. */
export interface CapabilityFile extends CapabilityState {
  name: string;
  updatedAt: number;
}

export const CAPABILITY_DIR_ENV = "RLARK_CAPABILITY_DIR";

/** The directory of capability files: $RLARK_CAPABILITY_DIR, else /var/run/rlark/capabilities. */
export function capabilityDir(env: NodeJS.ProcessEnv = process.env): string {
  return env[CAPABILITY_DIR_ENV] || CAPABILITY_DIR;
}

/** Writes `<dir>/<name>.json` atomically. `name` is a DNS-1123 label (camera-front, ros-controller). */
export function reportCapability(
  name: string,
  state: CapabilityState,
  options: { dir?: string; now?: Date } = {},
): void {
  writeCapabilityStatus(
    options.dir ?? capabilityDir(),
    { name, process: state.process, health: state.health, message: state.message.slice(0, 1024) },
    (options.now ?? new Date()).getTime(),
  );
}
