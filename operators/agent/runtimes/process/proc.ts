// Process liveness read straight from /proc (Linux). The runtime outlives none of its knowledge:
// after an agent restart the processes are no longer its children, so `exit` events are gone and
// a bare pid may already belong to someone else. A pid plus its start time (in clock ticks since
// boot, field 22 of /proc/<pid>/stat) names one process for the life of the machine.
import { readdirSync, readFileSync } from "node:fs";

export interface ProcStat {
  pid: number;
  /** R, S, D, Z, T, ... Z is a zombie: exited, not yet reaped. */
  state: string;
  ppid: number;
  pgrp: number;
  /** Clock ticks after boot at which the process started. */
  startTime: number;
}

/** Parses /proc/<pid>/stat; undefined when the process does not exist. */
export function readProcStat(pid: number, procRoot = "/proc"): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`${procRoot}/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  return parseProcStat(text);
}

/** The command name (field 2) may contain spaces and parentheses, so fields are counted from the last ')'. */
export function parseProcStat(text: string): ProcStat | undefined {
  const close = text.lastIndexOf(")");
  if (close < 0) return undefined;
  const pid = Number.parseInt(text.slice(0, text.indexOf(" ")), 10);
  // After ")": state(3) ppid(4) pgrp(5) session(6) ... starttime(22).
  const rest = text
    .slice(close + 2)
    .trim()
    .split(" ");
  const state = rest[0];
  const ppid = Number(rest[1]);
  const pgrp = Number(rest[2]);
  const startTime = Number(rest[19]);
  if (!state || !Number.isFinite(pid) || !Number.isFinite(startTime)) return undefined;
  return { pid, state, ppid, pgrp, startTime };
}

/** True while the process that started at `startTime` still runs (a zombie counts as gone). */
export function isSameProcessAlive(pid: number, startTime: number | undefined, procRoot = "/proc"): boolean {
  const stat = readProcStat(pid, procRoot);
  if (!stat || stat.state === "Z" || stat.state === "X") return false;
  return startTime === undefined || stat.startTime === startTime;
}

/** Live (non-zombie) members of a process group. Scans /proc: zombies nobody reaps must not look alive. */
export function processGroupMembers(pgid: number, procRoot = "/proc"): number[] {
  const members: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync(procRoot);
  } catch {
    return members;
  }
  for (const entry of entries) {
    const c = entry.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    const stat = readProcStat(Number(entry), procRoot);
    if (stat && stat.pgrp === pgid && stat.state !== "Z" && stat.state !== "X") members.push(stat.pid);
  }
  return members;
}

/** Sends a signal to a whole process group; false when the group no longer exists. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ESRCH") return false;
    throw error;
  }
}

/**
 * Whether the group `pgid` can still be ours: false once its id names a different process (the
 * leader's pid was reused, and the newcomer leads a group of its own). While any member of our
 * group lives, Linux does not hand its id out again, so a missing leader with members left is ours.
 */
export function mayOwnGroup(pgid: number, leaderStart: number | undefined, procRoot = "/proc"): boolean {
  const leader = readProcStat(pgid, procRoot);
  return !leader || leaderStart === undefined || leader.startTime === leaderStart;
}

/** Live members of our group `pgid`; none once the id belongs to someone else. */
export function ownGroupMembers(pgid: number, leaderStart: number | undefined, procRoot = "/proc"): number[] {
  return mayOwnGroup(pgid, leaderStart, procRoot) ? processGroupMembers(pgid, procRoot) : [];
}
