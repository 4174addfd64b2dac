// This machine as one Node, in the shape the kubernetes runtime reports real Nodes in, so the
// hub's placement reads capacity the same way for a bare machine and for a cluster node.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { statfs } from "node:fs/promises";
import {
  arch,
  availableParallelism,
  freemem,
  hostname,
  networkInterfaces,
  platform,
  release,
  totalmem,
} from "node:os";
import { GPU_MODEL_ANNOTATION } from "../../../api/index.ts";
import type { NodeAddress, NodeCondition, ObservedNode } from "../types.ts";

export interface NodeReportOptions {
  /** Node name; default the hostname. */
  name?: string;
  /** From the agent's configuration; they win over the discovered kubernetes.io/* labels. */
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** Address other pods reach this machine's processes at; default the first non-loopback IPv4. */
  internalIP?: string;
  agentVersion: string;
  /** nvidia-smi executable; absent means no NVIDIA GPUs. */
  nvidiaSmi: string;
  /** Where the disk figures come from: the filesystem holding the runtime's state. */
  stateDir: string;
}

export interface Gpu {
  model: string;
  memoryMiB?: number;
}

/** GPUs as nvidia-smi lists them; none when the tool is missing or fails. */
export function probeGpus(nvidiaSmi: string, timeoutMs = 10_000): Promise<Gpu[]> {
  return new Promise((resolve) => {
    execFile(
      nvidiaSmi,
      ["--query-gpu=name,memory.total", "--format=csv,noheader"],
      { timeout: timeoutMs, encoding: "utf8" },
      (error, stdout) => resolve(error ? [] : parseNvidiaSmi(stdout)),
    );
  });
}

/** Lines like "NVIDIA A100-SXM4-80GB, 81920 MiB". */
export function parseNvidiaSmi(output: string): Gpu[] {
  const gpus: Gpu[] = [];
  for (const line of output.split("\n")) {
    if (!line.trim()) continue;
    const comma = line.lastIndexOf(",");
    const model = (comma < 0 ? line : line.slice(0, comma)).trim();
    const memory = comma < 0 ? Number.NaN : Number.parseInt(line.slice(comma + 1).trim(), 10);
    if (model) gpus.push(Number.isFinite(memory) ? { model, memoryMiB: memory } : { model });
  }
  return gpus;
}

/** Node's arch names to the GOARCH names Kubernetes labels use. */
function goArch(nodeArch: string): string {
  return (
    ({ x64: "amd64", ia32: "386", arm: "arm", arm64: "arm64", ppc64: "ppc64le", s390x: "s390x" } as const)[
      nodeArch as "x64"
    ] ?? nodeArch
  );
}

function firstIPv4(): string | undefined {
  for (const addresses of Object.values(networkInterfaces())) {
    for (const address of addresses ?? []) {
      if (address.family === "IPv4" && !address.internal) return address.address;
    }
  }
  return undefined;
}

function readText(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

function osImage(): string {
  const match = /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(readText("/etc/os-release"));
  return match?.[1] ?? platform();
}

function condition(type: string, on: boolean, reason: string, message: string): NodeCondition {
  return { type, status: on ? "True" : "False", reason, message };
}

/** Probes the machine: CPUs, memory, disk, GPUs, addresses, and pressure conditions. */
export async function reportNode(options: NodeReportOptions, gpus?: Gpu[]): Promise<ObservedNode> {
  const name = options.name ?? hostname();
  const found = gpus ?? (await probeGpus(options.nvidiaSmi));
  const capacity: Record<string, string> = {
    cpu: String(availableParallelism()),
    memory: `${Math.floor(totalmem() / 1024)}Ki`,
    pods: "110",
  };
  let diskPressure = false;
  let disk: ObservedNode["disk"];
  try {
    const fs = await statfs(options.stateDir);
    capacity["ephemeral-storage"] = `${Math.floor((fs.blocks * fs.bsize) / 1024)}Ki`;
    diskPressure = fs.blocks > 0 && fs.bavail / fs.blocks < 0.1;
    disk = { usedBytes: (fs.blocks - fs.bfree) * fs.bsize, totalBytes: fs.blocks * fs.bsize };
  } catch {
    // No figure rather than a wrong one.
  }
  const annotations: Record<string, string> = {};
  if (found.length > 0) {
    capacity["nvidia.com/gpu"] = String(found.length);
    annotations[GPU_MODEL_ANNOTATION] = [...new Set(found.map((g) => g.model))].join(",");
  }
  const memoryPressure = freemem() / totalmem() < 0.05;
  const internalIP = options.internalIP ?? firstIPv4() ?? "127.0.0.1";
  const addresses: NodeAddress[] = [
    { type: "InternalIP", address: internalIP },
    { type: "Hostname", address: hostname() },
  ];
  const labels = {
    "kubernetes.io/hostname": name,
    "kubernetes.io/os": platform(),
    "kubernetes.io/arch": goArch(arch()),
    ...options.labels,
  };
  return {
    name,
    labels,
    annotations: { ...annotations, ...options.annotations },
    capacity,
    allocatable: { ...capacity },
    nodeInfo: {
      architecture: goArch(arch()),
      operatingSystem: platform(),
      kernelVersion: release(),
      osImage: osImage(),
      agentVersion: options.agentVersion,
    },
    ...(disk ? { disk } : {}),
    addresses,
    conditions: [
      condition("Ready", true, "AgentReady", "the process runtime supervises this machine"),
      condition(
        "DiskPressure",
        diskPressure,
        diskPressure ? "LowDisk" : "SufficientDisk",
        "free space on the state filesystem",
      ),
      condition(
        "MemoryPressure",
        memoryPressure,
        memoryPressure ? "LowMemory" : "SufficientMemory",
        "free memory on the machine",
      ),
    ],
  };
}
