// What survives an agent restart, per pod, under `<stateDir>/pods/<namespace>_<name>/`:
// pod.json (identity, pid and start time, restart counters, terminal outcome), exit-code
// (written by the wrapper shell as the command starts and as it ends, so both are known even
// with no agent watching), and output.log with the one before it, output.log.1.
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import type { RuntimeTask } from "../types.ts";
import type { PodNetwork } from "./pod-network.ts";
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
  /**
   * Written (and fsync'd) just before a run is spawned, cleared with the pid it got: a runtime
   * that finds it knows a process may have started unrecorded, and looks for it by this token.
   */
  launching?: { token: string; at: number };
  /** Process group leader (the wrapper shell) of the current run. */
  pid?: number;
  /** Its start time in clock ticks after boot: with pid, one process for the life of the machine. */
  processStart?: number;
  /** The current run's log writer; its output is complete only once it has exited. */
  logWriter?: { pid: number; startTime?: number };
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
  /** A Domain pod's own network namespace (pod-network.ts), kept across its restarts. */
  network?: PodNetwork;
  /** The uid its programs run as (pod-users.ts); absent: the agent's. */
  uid?: number;
}

export class PodFiles {
  readonly dir: string;
  readonly record: string;
  readonly exitCode: string;
  readonly log: string;
  /** Where the output pipe is made, for the moment it takes to open both ends. */
  readonly pipe: string;

  constructor(podsDir: string, namespace: string, name: string) {
    // DNS names contain no "_", so the pair maps back unambiguously.
    this.dir = join(podsDir, `${namespace}_${name}`);
    this.record = join(this.dir, "pod.json");
    this.exitCode = join(this.dir, "exit-code");
    this.log = join(this.dir, "output.log");
    this.pipe = join(this.dir, "output.pipe");
  }

  /** Replaces pod.json atomically and durably: a launch must not be forgotten by a crash after it. */
  write(record: PodRecord): void {
    mkdirSync(this.dir, { recursive: true });
    const partial = `${this.record}.tmp`;
    const fd = openSync(partial, "w", 0o600);
    try {
      writeSync(fd, `${JSON.stringify(record, null, 2)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(partial, this.record);
    const dir = openSync(this.dir, "r");
    try {
      fsyncSync(dir);
    } finally {
      closeSync(dir);
    }
  }

  /** The code the wrapper recorded for the last run, if it got to record one ("running" is none). */
  readExitCode(): number | undefined {
    try {
      const code = Number.parseInt(readFileSync(this.exitCode, "utf8").trim(), 10);
      return Number.isInteger(code) ? code : undefined;
    } catch {
      return undefined;
    }
  }

  /** Whether the wrapper of the last run got as far as starting the command (or further). */
  commandStarted(): boolean {
    return existsSync(this.exitCode);
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
