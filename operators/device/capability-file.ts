// Where a device controller leaves its capability state for the device plugin's reporting to read
// (seed 002: a process state and a health per capability). One JSON file per capability, replaced
// atomically (write a temporary file, rename it over), so a reader never sees half an object.
// The writer rewrites its file periodically: updatedAt doubles as a heartbeat, so a reader can
// tell a controller that died from one whose state simply did not change.
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";

export type ProcessState = "STOPPED" | "STARTING" | "RUNNING" | "BACKOFF" | "FAILED";
export type Health = "STARTING" | "READY" | "DEGRADED" | "STOPPED" | "UNKNOWN";

export interface CapabilityState {
  process: ProcessState;
  health: Health;
  message: string;
}

/** The file format: {name, process, health, message, updatedAt}. */
export interface CapabilityFile extends CapabilityState {
  name: string;
  /** RFC 3339 time of the write. */
  updatedAt: string;
}

export const CAPABILITY_DIR_ENV = "RLARK_CAPABILITY_DIR";
export const DEFAULT_CAPABILITY_DIR = "/var/run/rlark/capabilities";

/** The directory of capability files: $RLARK_CAPABILITY_DIR, else /var/run/rlark/capabilities. */
export function capabilityDir(env: NodeJS.ProcessEnv = process.env): string {
  return env[CAPABILITY_DIR_ENV] || DEFAULT_CAPABILITY_DIR;
}

// A name becomes a file name: nothing that could leave the directory or hide the file.
const NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** Writes `<dir>/<name>.json` atomically. `name` is a DNS-1123 label (camera-front, ros-controller). */
export function reportCapability(
  name: string,
  state: CapabilityState,
  options: { dir?: string; now?: Date } = {},
): CapabilityFile {
  if (!NAME.test(name)) throw new Error(`capability name "${name}" is not a DNS-1123 label`);
  const dir = options.dir ?? capabilityDir();
  const file: CapabilityFile = {
    name,
    process: state.process,
    health: state.health,
    message: state.message.slice(0, 1024),
    updatedAt: (options.now ?? new Date()).toISOString(),
  };
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  const target = path.join(dir, `${name}.json`);
  const temporary = path.join(dir, `.${name}.json.${process.pid}.tmp`);
  writeFileSync(temporary, `${JSON.stringify(file)}\n`, { mode: 0o644 });
  renameSync(temporary, target);
  return file;
}
