// The engine's machine as one Node, in the shape the other runtimes report, with capacity from the
// engine's own info (the engine may be another machine's, through --docker-host).
import { networkInterfaces } from "node:os";
import type { NodeCondition, ObservedNode } from "../types.ts";
import { DEVICE_RESOURCE, DEVICES_ANNOTATION, type HostDevice } from "./host-devices.ts";

export interface NodeOptions {
  name: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  internalIP?: string;
  agentVersion: string;
}

/** The fields of GET /info this report reads. */
export interface EngineInfo {
  NCPU?: number;
  MemTotal?: number;
  Architecture?: string;
  OSType?: string;
  KernelVersion?: string;
  OperatingSystem?: string;
  ServerVersion?: string;
  Name?: string;
}

/** The engine's `uname -m` names to the GOARCH names Kubernetes labels use. */
function goArch(machine: string): string {
  return (
    ({ x86_64: "amd64", aarch64: "arm64", armv7l: "arm", i686: "386" } as Record<string, string>)[machine] ??
    machine
  );
}

export function firstIPv4(): string | undefined {
  for (const addresses of Object.values(networkInterfaces()))
    for (const address of addresses ?? [])
      if (address.family === "IPv4" && !address.internal) return address.address;
  return undefined;
}

/**
 * `engineError` set: the last call to the engine failed, and the Node is not Ready. `devices`: the
 * machine's (host-devices.ts), counted in capacity and listed in an annotation.
 */
export function engineNode(
  options: NodeOptions,
  info: EngineInfo,
  engineError?: string,
  devices: readonly HostDevice[] = [],
): ObservedNode {
  const arch = goArch(info.Architecture ?? "");
  const os = info.OSType ?? "linux";
  const capacity: Record<string, string> = {
    cpu: String(info.NCPU ?? 0),
    memory: `${Math.floor((info.MemTotal ?? 0) / 1024)}Ki`,
    pods: "110",
    ...(devices.length > 0 ? { [DEVICE_RESOURCE]: String(devices.length) } : {}),
  };
  const ready: NodeCondition = engineError
    ? { type: "Ready", status: "False", reason: "EngineUnreachable", message: engineError }
    : {
        type: "Ready",
        status: "True",
        reason: "EngineReady",
        message: "the docker runtime reaches the engine",
      };
  return {
    name: options.name,
    labels: {
      "kubernetes.io/hostname": options.name,
      "kubernetes.io/os": os,
      "kubernetes.io/arch": arch,
      ...options.labels,
    },
    annotations: {
      ...options.annotations,
      ...(devices.length > 0
        ? { [DEVICES_ANNOTATION]: devices.map((d) => `${d.kind}:${d.path}`).join(",") }
        : {}),
    },
    capacity,
    allocatable: { ...capacity },
    nodeInfo: {
      architecture: arch,
      operatingSystem: os,
      kernelVersion: info.KernelVersion ?? "",
      osImage: info.OperatingSystem ?? "",
      agentVersion: options.agentVersion,
      containerRuntimeVersion: `docker://${info.ServerVersion ?? "unknown"}`,
    },
    addresses: [
      { type: "InternalIP", address: options.internalIP ?? firstIPv4() ?? "127.0.0.1" },
      { type: "Hostname", address: info.Name ?? options.name },
    ],
    conditions: [ready],
  };
}
