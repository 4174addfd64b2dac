// SFTP and port-forwards into a docker pod. Files: OpenSSH's sftp-server started in the container
// through the engine's exec API (shared/exec-files.ts, as the kubernetes runtime does it through
// pods/exec). Ports: the container's own loopback, entered by its init's pid; that needs the
// engine on this machine, and a container on the host's network is refused, since a port there
// is not the pod's own.
import { statSync } from "node:fs";
import type { Duplex } from "node:stream";
import type Docker from "dockerode";
import type { AccessPodRef } from "../../../lib/access-stream/index.ts";
import { SFTP_SERVER_PATHS, startExecFiles } from "../shared/exec-files.ts";
import { connectInNetns } from "../shared/netns-connect.ts";
import type { ContainerFiles } from "../types.ts";
import { startContainerExec } from "./exec.ts";

type Modem = Parameters<typeof startContainerExec>[1];

export interface DockerFilesOptions {
  /** The policy root in every container; default its image's working directory, or `/`. */
  root?: string;
  /** Where sftp-server is in the images, tried before the usual paths. */
  sftpServer?: string;
}

export async function openContainerFiles(
  container: Docker.Container,
  modem: Modem,
  label: string,
  pod: AccessPodRef,
  options: DockerFilesOptions = {},
): Promise<ContainerFiles> {
  const info = await container.inspect();
  const root = options.root ?? (info.Config.WorkingDir || "/");
  return startExecFiles(
    (command) => startContainerExec(container, modem, label, { ...pod, command }),
    label,
    { root, servers: [...(options.sftpServer ? [options.sftpServer] : []), ...SFTP_SERVER_PATHS] },
  );
}

/** The engine is on this machine when it is reached by a unix socket: its pids are ours. */
function engineIsLocal(dockerHost: string | undefined): boolean {
  return new URL(dockerHost ?? "unix:///var/run/docker.sock").protocol === "unix:";
}

/** `rlarkNet` is the rlark-net binary (lib/rlark-net-path.ts finds it for the CLI). */
export async function connectContainerPort(
  container: Docker.Container,
  label: string,
  dockerHost: string | undefined,
  rlarkNet: string,
  port: number,
): Promise<Duplex> {
  if (!engineIsLocal(dockerHost))
    throw new Error(
      `${label}: port-forwards need the engine on the agent's machine (a unix socket), not ${dockerHost}`,
    );
  const info = await container.inspect();
  const pid = info.State.Pid;
  if (!info.State.Running || !pid) throw new Error(`${label} is not running: no port-forward into it`);
  const netns = `/proc/${pid}/ns/net`;
  let theirs: number;
  try {
    theirs = statSync(netns).ino;
  } catch (error) {
    throw new Error(`${label}: its network namespace ${netns} cannot be read: ${(error as Error).message}`);
  }
  if (theirs === statSync("/proc/self/ns/net").ino || info.HostConfig.NetworkMode === "host")
    throw new Error(`${label} runs on the host's network: its ports are not the pod's own, no port-forward`);
  return connectInNetns(["nsenter", `--net=${netns}`], rlarkNet, port);
}
