// Domain pods on the docker runtime (docs/docker-runtime.md#domains), in the kubernetes runtime's
// shape made of containers: a sidecar container `rlark_<namespace>_<pod>_net` holds the pod's
// network namespace (the engine gives it none of its networks) and runs `rlark-net sidecar` as uid
// 1337; the agent's init step puts the process runtime's veth link and `rlark-net init` REDIRECT
// into that namespace (PodNetworks.attach, as root: NET_ADMIN there); and the pod's own container
// joins it (NetworkMode container:<sidecar>) once the sidecar listens, so its first connection is
// caught. The sidecar's image is the agent's own rlark-net binary, imported into the engine under
// its digest: no registry is needed and an upgraded agent brings its own.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { basename, dirname } from "node:path";
import { Readable } from "node:stream";
import type Docker from "dockerode";
import { INBOUND_PORT, OUTBOUND_LISTENING, OUTBOUND_PORT, type PodNetwork } from "../process/pod-network.ts";
import { containerName, type DesiredContainer, LABELS } from "./spec.ts";

/** Where the sidecar container sees the nodeserver's directory. */
const RUN_DIR_IN_CONTAINER = "/var/run/rlark";

/** Labels only a sidecar container carries. */
export const SIDECAR_LABELS = {
  /** `rlark-net` on the sidecar of a Domain pod. */
  sidecar: "rlinf.io/sidecar",
  virtualIP: "rlinf.io/virtual-ip",
  /** `<host link>,<host IP>,<pod IP>`: the pod's veth link, kept by an adopting runtime. */
  link: "rlinf.io/pod-link",
} as const;

/** The sidecar as the pod's container, for its status and its log (the kubernetes runtime's name). */
export const SIDECAR_CONTAINER = "rlark-sidecar";

export function sidecarName(namespace: string, pod: string): string {
  return `${containerName(namespace, pod)}_net`;
}

/** The pod's virtual IP and its Domain's CIDR: what its sidecar and REDIRECT are made for. */
export interface DomainAddress {
  virtualIP: string;
  cidr: string;
}

export function linkLabel(link: PodNetwork): string {
  return `${link.hostIf},${link.hostIP},${link.localIP}`;
}

export function parseLinkLabel(value: string | undefined): PodNetwork | undefined {
  const [hostIf, hostIP, localIP] = (value ?? "").split(",");
  return hostIf && hostIP && localIP ? { netns: "", hostIf, hostIP, localIP } : undefined;
}

export interface SidecarContext {
  owner: string;
  logMaxBytes: number;
  image: string;
  /** The nodeserver's directory on the machine (its nodeserver.sock). */
  runDir: string;
  /** The sidecar's uid, which the REDIRECT lets through. */
  uid: number;
  address: DomainAddress;
  link: PodNetwork;
}

export function sidecarCreateOptions(
  pod: DesiredContainer,
  ctx: SidecarContext,
): Docker.ContainerCreateOptions {
  return {
    name: sidecarName(pod.namespace, pod.name),
    Image: ctx.image,
    Entrypoint: ["/rlark-net", "sidecar"],
    User: `${ctx.uid}:${ctx.uid}`,
    Env: [
      `RLARK_POD=${pod.namespace}/${pod.name}`,
      `RLARK_POD_IP=${ctx.address.virtualIP}`,
      `RLARK_NODESERVER_SOCKET=${RUN_DIR_IN_CONTAINER}/nodeserver.sock`,
      `RLARK_OUTBOUND_PORT=${OUTBOUND_PORT}`,
      `RLARK_INBOUND_PORT=${INBOUND_PORT}`,
    ],
    Labels: {
      [LABELS.owner]: ctx.owner,
      [LABELS.namespace]: pod.namespace,
      [LABELS.pod]: pod.name,
      [LABELS.revision]: pod.revision,
      [SIDECAR_LABELS.sidecar]: "rlark-net",
      [SIDECAR_LABELS.virtualIP]: ctx.address.virtualIP,
      [SIDECAR_LABELS.link]: linkLabel(ctx.link),
    },
    HostConfig: {
      // The agent plugs the pod's link in: no network of the engine's, no bridge, no NAT.
      NetworkMode: "none",
      Binds: [`${ctx.runDir}:${RUN_DIR_IN_CONTAINER}`],
      // Not restarted by the engine: a new namespace would lose the link and the REDIRECT, so
      // the runtime replaces the whole pod instead.
      RestartPolicy: { Name: "no" },
      CapDrop: ["ALL"],
      SecurityOpt: ["no-new-privileges"],
      LogConfig: { Type: "json-file", Config: { "max-size": String(ctx.logMaxBytes), "max-file": "2" } },
    },
  };
}

/** Whether the sidecar whose first process is `pid` listens on its outbound port yet. */
export function sidecarListening(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/net/tcp`, "utf8").includes(OUTBOUND_LISTENING);
  } catch {
    return false;
  }
}

/**
 * `rlark/rlark-net:<digest of the binary>` on the engine, imported from `rlarkNet` (static, so
 * the image is that one file) when the engine does not have it yet.
 */
export async function ensureSidecarImage(client: Docker, rlarkNet: string): Promise<string> {
  const tag = createHash("sha256").update(readFileSync(rlarkNet)).digest("hex").slice(0, 16);
  const image = `rlark/rlark-net:${tag}`;
  try {
    await client.getImage(image).inspect();
    return image;
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode !== 404) throw error;
  }
  const tar = execFileSync(
    "tar",
    [
      "-c",
      "-C",
      dirname(rlarkNet),
      "--owner=0",
      "--group=0",
      "--mode=0755",
      "--transform=s,.*,rlark-net,",
      basename(rlarkNet),
    ],
    { maxBuffer: 256 * 1024 * 1024 },
  );
  const stream = await client.importImage(Readable.from([tar]), { repo: "rlark/rlark-net", tag });
  await new Promise<void>((resolve, reject) => {
    client.modem.followProgress(stream, (error: Error | null, events: { error?: string }[]) => {
      const failed = events?.find((e) => e.error);
      if (error || failed) reject(error ?? new Error(failed?.error));
      else resolve();
    });
  });
  return image;
}
