// How a pod's process is started. Each run goes through a tiny POSIX shell wrapper that waits for
// the command and writes its exit status to a file: the agent may be restarted while the process
// runs, and a process that is not the agent's child cannot be waited for, but its file can be read.
// The wrapper traps (rather than ignores) TERM/INT/HUP, so it outlives the command to record how it
// ended while the command itself keeps default signal handling (an ignored signal would be inherited).
// Before the command, the wrapper writes "running" to the same file: a new agent that finds the
// file but not the process knows the command did start (see Replica's launching marker).
//
// Every run has a launch token, in the argv of its wrapper and of its log writer, so a runtime that
// was killed between spawning them and recording their pids can find them again.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { closeSync, constants as fsConstants, openSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { constants } from "node:os";
import { extname, isAbsolute, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { JOB_LABEL } from "../../../api/index.ts";
import type { RuntimeTask } from "../types.ts";
import { readProcStat } from "./proc.ts";
import type { DesiredPod } from "./spec.ts";

/** The Job a Task belongs to: spec.job, else the rlinf.io/job label, else "". */
export function jobOf(task: RuntimeTask): string {
  return task.spec.job ?? task.metadata.labels?.[JOB_LABEL] ?? "";
}

export const wrapperScript = `trap : TERM INT HUP
shift
printf 'running\\n' > "$0"
"$@"
c=$?
printf '%s\\n' "$c" > "$0"
exit "$c"`;

/** argv for /bin/sh: the wrapper gets the exit-code file as $0, the launch token as $1, then the command. */
export function wrapperArgs(exitCodeFile: string, token: string, argv: readonly string[]): string[] {
  return ["-c", wrapperScript, exitCodeFile, token, ...argv];
}

// Next to this module under its own extension: .ts in the checkout, .js in the built package.
export const logWriterEntry = fileURLToPath(
  new URL(`./log-writer-main${extname(import.meta.url)}`, import.meta.url),
);

/**
 * Both ends of a new pipe, made as a fifo at `path` and unlinked at once. A real pipe, not the
 * socket pair Node's `stdio: "pipe"` would give: a socket cannot be reopened through
 * /dev/stdout, which scripts do (`tee /dev/stderr`), and which works in a container.
 */
export function openPipe(path: string): { read: number; write: number } {
  rmSync(path, { force: true });
  execFileSync("mkfifo", ["-m", "600", path], { stdio: "ignore" });
  try {
    // Non-blocking so the open does not wait for a writer; the writer's open then finds this reader.
    const read = openSync(path, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
    try {
      return { read, write: openSync(path, fsConstants.O_WRONLY) };
    } catch (error) {
      closeSync(read);
      throw error;
    }
  } finally {
    rmSync(path, { force: true });
  }
}

/**
 * Starts a run's log writer (log-writer-main.ts) reading the pipe end `read`: detached, so it
 * survives the agent. Unreferenced: it never keeps the agent alive.
 */
export function spawnLogWriter(read: number, log: string, maxBytes: number, token: string): ChildProcess {
  const writer = spawn(process.execPath, [logWriterEntry, log, String(maxBytes), token], {
    detached: true,
    stdio: [read, "ignore", "ignore"],
    // None of the agent's environment (it may hold the hub's secrets), no hold on its directory.
    env: {},
    cwd: "/",
  });
  writer.unref();
  return writer;
}

/** A process this runtime started, found by its command line. */
export interface Launched {
  pid: number;
  startTime: number;
  /** The wrapper's exit-code file, or the log writer's log. */
  file: string;
  token: string;
}

/**
 * Live wrappers (process group leaders) and log writers whose file lies under `dir`, from /proc.
 * A zombie is not live; nor is a wrapper that no longer leads its own group.
 */
export function findLaunched(dir: string): { wrappers: Launched[]; writers: Launched[] } {
  const prefix = `${dir}/`;
  const wrappers: Launched[] = [];
  const writers: Launched[] = [];
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return { wrappers, writers };
  }
  for (const entry of entries) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    } catch {
      continue;
    }
    const isWrapper = argv[1] === "-c" && argv[2] === wrapperScript;
    const isWriter = argv[1] === logWriterEntry;
    if (!isWrapper && !isWriter) continue;
    // sh -c <script> <exit-code file> <token> ... | node <entry> <log> <maxBytes> <token>
    const file = isWrapper ? argv[3] : argv[2];
    const token = argv[4];
    if (!file?.startsWith(prefix) || token === undefined) continue;
    const stat = readProcStat(pid);
    if (!stat || stat.state === "Z" || (isWrapper && stat.pgrp !== pid)) continue;
    (isWrapper ? wrappers : writers).push({ pid, startTime: stat.startTime, file, token });
  }
  return { wrappers, writers };
}

/** The command line, with `./x` and `../x` resolved against the artifact's directory when there is one. */
export function commandLine(
  command: readonly string[],
  args: readonly string[],
  artifactDir?: string,
): string[] {
  const [first, ...rest] = command;
  if (first === undefined) return [...args];
  const relative = first.startsWith("./") || first.startsWith("../");
  const program = relative && artifactDir && !isAbsolute(first) ? resolve(artifactDir, first) : first;
  return [program, ...rest, ...args];
}

/** Shell convention: a status above 128 means the command was killed by signal status-128. */
export function signalFromStatus(status: number): string | undefined {
  if (status <= 128) return undefined;
  const number = status - 128;
  for (const [name, value] of Object.entries(constants.signals)) {
    if (value === number) return name;
  }
  return undefined;
}

export interface PodEnvInput {
  base: Readonly<Record<string, string>>;
  pod: DesiredPod;
  nodeName: string;
  podIP: string;
  artifactPath?: string;
}

/** The minimal base, then RLARK_* identity, then the Task's own env (which wins). */
export function podEnv(input: PodEnvInput): Record<string, string> {
  const { pod } = input;
  const env: Record<string, string> = {
    ...input.base,
    RLARK_TASK: pod.task.metadata.name,
    RLARK_JOB: jobOf(pod.task),
    RLARK_NAMESPACE: pod.namespace,
    RLARK_POD_NAME: pod.name,
    RLARK_REPLICA_INDEX: String(pod.index),
    RLARK_NODE_NAME: input.nodeName,
    RLARK_POD_IP: input.podIP,
  };
  if (input.artifactPath) env.RLARK_ARTIFACT = input.artifactPath;
  for (const variable of pod.raw.env ?? []) env[variable.name] = variable.value ?? "";
  return env;
}
