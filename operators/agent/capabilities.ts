// What this agent can do for users, as capability states (seed 002, "Capability Status"): shell,
// files, logs and network-probe beside the runtime itself, each with the process state of what
// serves it and its health from what the agent observes now: the programs a session would start
// are there, the runtime's engine or API answers. Sessions, SFTP and logs run inside the agent's
// own process (agent/access), so their process is RUNNING while the agent reports at all; health
// is where they differ. Read at every heartbeat: a few stat calls, nothing spawned.
import { accessSync, constants } from "node:fs";
import path from "node:path";
import type { Capability } from "../lib/tunnel/index.ts";
import type { AccessOptions } from "./access/index.ts";
import type { Runtime } from "./runtimes/types.ts";

export const SFTP_SERVER = "/usr/lib/openssh/sftp-server";

export interface CapabilityInputs {
  runtime: Runtime;
  runtimeKind: "process" | "kubernetes" | "docker";
  access?: AccessOptions;
  /** The runtime has acted on a desired set from the hub, and whether that failed. */
  applied: boolean;
  applyError?: string;
  /** The network probes' state (the AgentGroup member): absent when none runs. */
  networkProbe?: () => Capability;
  /** PATH for finding programs; default process.env.PATH. */
  pathEnv?: string;
}

/** `program`, found as a path or on PATH, is executable here: the error saying otherwise, or undefined. */
function missingProgram(program: string, pathEnv: string): string | undefined {
  const executable = (file: string) => {
    try {
      accessSync(file, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  if (program.includes("/")) return executable(program) ? undefined : `${program} is not an executable file`;
  const dirs = pathEnv.split(path.delimiter).filter(Boolean);
  return dirs.some((dir) => executable(path.join(dir, program))) ? undefined : `${program} is not on PATH`;
}

const ready = (name: string): Capability => ({ name, process: "RUNNING", health: "READY" });
const degraded = (name: string, message: string): Capability => ({
  name,
  process: "RUNNING",
  health: "DEGRADED",
  message,
});
const stopped = (name: string, message: string): Capability => ({
  name,
  process: "STOPPED",
  health: "STOPPED",
  message,
});

/** The agent's own capabilities: the runtime first, then the access paths and the probe. */
export function agentCapabilities(inputs: CapabilityInputs): Capability[] {
  const { runtime, access = {} } = inputs;
  const pathEnv = inputs.pathEnv ?? process.env.PATH ?? "";
  const test = runtime.observe().lastTest;
  // The runtime's engine or API not answering (a Docker socket gone, an API server down) takes
  // every capability that goes through it down with it.
  const runtimeDown =
    test && !test.ok ? `the runtime does not answer: ${test.message ?? "failed"}` : undefined;
  const runtimeName = `runtime/${inputs.runtimeKind}`;
  const runtimeState: Capability = runtimeDown
    ? degraded(runtimeName, runtimeDown)
    : inputs.applyError
      ? degraded(runtimeName, inputs.applyError)
      : inputs.applied
        ? ready(runtimeName)
        : // STARTING until it has acted on a desired set: connecting shows nothing about applying.
          { name: runtimeName, process: "STARTING", health: "STARTING" };

  const through = (name: string, needs: (string | undefined)[]): Capability => {
    const problem = [runtimeDown, ...needs].filter((n): n is string => n !== undefined);
    return problem.length > 0 ? degraded(name, problem.join("; ")) : ready(name);
  };
  let shell: Capability;
  let files: Capability;
  const facet = runtime.access;
  if (!facet) {
    shell = stopped("shell", "this runtime serves no sessions");
    files = stopped("files", "this runtime serves no files");
  } else if (facet.kind === "local") {
    // a session with a terminal runs the pty helper under Python; the shell itself is the pod's
    shell = through("shell", [missingProgram(access.python ?? "python3", pathEnv)]);
    files = through("files", [missingProgram(access.sftpServer ?? SFTP_SERVER, pathEnv)]);
  } else {
    shell = through("shell", []);
    // the sftp-server is the container's own, found when a session starts
    files = through("files", []);
  }
  const logs = through("logs", []);
  const probe =
    inputs.networkProbe?.() ?? stopped("network-probe", "no network probe runs (rlark agent --group-listen)");
  return [runtimeState, shell, files, logs, { ...probe, name: "network-probe" }];
}
