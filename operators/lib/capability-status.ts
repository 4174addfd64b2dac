// How a component on a machine tells its local agent its capability state (ARCHITECTURE.md, "Rules
// of the house"): one JSON file per component, `<dir>/<component>.json`, replaced atomically and
// rewritten every REFRESH_MS while the component lives. The agent reads the directory at each
// report; a file not rewritten for STALE_MS is a component that died without saying so, reported
// as health UNKNOWN rather than its last word. A component that never wrote a file is absent,
// never FAILED.
import { mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { type Capability, parseCapability } from "./tunnel/index.ts";

/** The host directory the embodied runtime's components and the agent share by default. */
export const CAPABILITY_DIR = "/var/run/rlark/capabilities";
export const REFRESH_MS = 10_000;
export const STALE_MS = 3 * REFRESH_MS;
/** Bounds on what the agent reads: a directory full of junk must not grow its heartbeat. */
const MAX_FILES = 32;
const MAX_FILE_BYTES = 8 * 1024;
const COMPONENT = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

interface StatusFile extends Capability {
  /** Milliseconds since the epoch of the last write. */
  updatedAt: number;
}

/** Writes `capability` as its component's status file (write to a temporary name, then rename). */
export function writeCapabilityStatus(dir: string, capability: Capability, now = Date.now()): void {
  if (!COMPONENT.test(capability.name))
    throw new Error(`capability name "${capability.name}" is not a DNS label`);
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  const file = path.join(dir, `${capability.name}.json`);
  const body: StatusFile = { ...capability, updatedAt: now };
  writeFileSync(`${file}.tmp`, `${JSON.stringify(body)}\n`, { mode: 0o644 });
  renameSync(`${file}.tmp`, file);
}

/**
 * The capabilities reported in `dir`, sorted by name. A missing directory is no reports; a file
 * that is too large or malformed is reported as UNKNOWN with the reason, so a broken component
 * shows up instead of vanishing.
 */
export function readCapabilityStatuses(dir: string, now = Date.now()): Capability[] {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith(".json"));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
  const out: Capability[] = [];
  for (const fileName of names.sort().slice(0, MAX_FILES)) {
    const name = fileName.slice(0, -".json".length);
    if (!COMPONENT.test(name)) continue;
    const capability = readOne(path.join(dir, fileName), name, now);
    if (capability) out.push(capability);
  }
  return out;
}

/** Undefined when the file went away between listing and reading: its component removed it. */
function readOne(file: string, name: string, now: number): Capability | undefined {
  const unknown = (message: string): Capability => ({ name, health: "UNKNOWN", message });
  try {
    if (statSync(file).size > MAX_FILE_BYTES) return unknown(`${file}: larger than ${MAX_FILE_BYTES} bytes`);
    const value: unknown = JSON.parse(readFileSync(file, "utf8"));
    const capability = parseCapability(value, file);
    if (capability.name !== name) return unknown(`${file}: names "${capability.name}"`);
    const updatedAt = (value as { updatedAt?: unknown }).updatedAt;
    if (typeof updatedAt !== "number") return unknown(`${file}: no updatedAt`);
    if (now - updatedAt > STALE_MS)
      return unknown(
        `no report for ${Math.round((now - updatedAt) / 1000)}s (last: ${capability.process ?? "?"}/${capability.health ?? "?"})`,
      );
    return capability;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    return unknown(error instanceof Error ? error.message : String(error));
  }
}
