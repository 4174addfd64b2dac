// How a pod's process is started. Each run goes through a tiny POSIX shell wrapper that waits for
// the command and writes its exit status to a file: the agent may be restarted while the process
// runs, and a process that is not the agent's child cannot be waited for, but its file can be read.
// The wrapper traps (rather than ignores) TERM/INT/HUP, so it outlives the command to record how it
// ended while the command itself keeps default signal handling (an ignored signal would be inherited).
import { constants } from "node:os";
import { isAbsolute, resolve } from "node:path";
import type { RuntimeTask } from "../types.ts";
import type { DesiredPod } from "./spec.ts";

/** The Job a Task belongs to: spec.job, else the rlinf.io/job label, else "". */
export function jobOf(task: RuntimeTask): string {
  return task.spec.job ?? task.metadata.labels?.["rlinf.io/job"] ?? "";
}

export const wrapperScript = `trap : TERM INT HUP
"$@"
c=$?
printf '%s\\n' "$c" > "$0"
exit "$c"`;

/** argv for /bin/sh: the wrapper gets the exit-code file as $0 and the command as "$@". */
export function wrapperArgs(exitCodeFile: string, argv: readonly string[]): string[] {
  return ["-c", wrapperScript, exitCodeFile, ...argv];
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
