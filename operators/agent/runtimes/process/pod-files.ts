// What survives an agent restart, per pod, under `<stateDir>/pods/<namespace>_<name>/`:
// pod.json (identity, pid and start time, restart counters, terminal outcome), exit-code
// (written by the wrapper shell as the process ends, so it is known even with no agent
// watching), and output.log with its rotations.
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { RuntimeTask } from "../types.ts";
import type { RestartKind } from "./spec.ts";

export interface ExitInfo {
  exitCode?: number;
  signal?: string;
  reason: string;
  message?: string;
  /** Milliseconds since the epoch. */
  at: number;
}

export interface PodRecord {
  version: 1;
  namespace: string;
  name: string;
  index: number;
  kind: RestartKind;
  revision: string;
  /** Kept so a pod can be restarted, and reported, before the first desired set arrives. */
  task: RuntimeTask;
  /** Process group leader (the wrapper shell) of the current run. */
  pid?: number;
  /** Its start time in clock ticks after boot: with pid, one process for the life of the machine. */
  processStart?: number;
  startedAt?: number;
  finishedAt?: number;
  restarts: number;
  /** Consecutive crashes, for the backoff. */
  streak: number;
  lastExit?: ExitInfo;
  /** Set when the pod will never run again (a Job's end, a bad artifact). */
  terminal?: { phase: "Succeeded" | "Failed"; reason: string; message?: string };
  /** Set once a stop has begun, so an agent restart mid-stop finishes it. */
  terminating?: boolean;
}

export class PodFiles {
  readonly dir: string;
  readonly record: string;
  readonly exitCode: string;
  readonly log: string;

  constructor(podsDir: string, namespace: string, name: string) {
    // DNS names contain no "_", so the pair maps back unambiguously.
    this.dir = join(podsDir, `${namespace}_${name}`);
    this.record = join(this.dir, "pod.json");
    this.exitCode = join(this.dir, "exit-code");
    this.log = join(this.dir, "output.log");
  }

  write(record: PodRecord): void {
    mkdirSync(this.dir, { recursive: true });
    const partial = `${this.record}.tmp`;
    writeFileSync(partial, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
    renameSync(partial, this.record);
  }

  /** The code the wrapper recorded for the last run, if it got to record one. */
  readExitCode(): number | undefined {
    try {
      const code = Number.parseInt(readFileSync(this.exitCode, "utf8").trim(), 10);
      return Number.isInteger(code) ? code : undefined;
    } catch {
      return undefined;
    }
  }

  clearExitCode(): void {
    rmSync(this.exitCode, { force: true });
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function isPodRecord(value: unknown): value is PodRecord {
  if (typeof value !== "object" || value === null) return false;
  const r = value as Record<string, unknown>;
  return (
    r.version === 1 &&
    typeof r.namespace === "string" &&
    typeof r.name === "string" &&
    typeof r.revision === "string" &&
    typeof r.index === "number" &&
    typeof r.restarts === "number" &&
    typeof r.task === "object" &&
    r.task !== null
  );
}

/** Every pod record under `podsDir`, and the directories whose record is unreadable. */
export function loadPodRecords(podsDir: string): { records: PodRecord[]; unreadable: string[] } {
  const records: PodRecord[] = [];
  const unreadable: string[] = [];
  let entries: string[];
  try {
    entries = readdirSync(podsDir);
  } catch {
    return { records, unreadable };
  }
  for (const entry of entries.sort()) {
    const path = join(podsDir, entry, "pod.json");
    try {
      const parsed: unknown = JSON.parse(readFileSync(path, "utf8"));
      if (isPodRecord(parsed)) records.push(parsed);
      else unreadable.push(join(podsDir, entry));
    } catch {
      unreadable.push(join(podsDir, entry));
    }
  }
  return { records, unreadable };
}
