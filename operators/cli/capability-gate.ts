// `rlark status --require shell,files,logs`: the release gate of seed 002. It passes when every
// online agent reports each required capability READY; a capability an agent does not report is
// UNKNOWN (an older agent, or one without it), which fails the gate rather than passing it
// silently. Offline clusters are listed but not judged: their agents report nothing now. With no
// agent online at all there is nothing that could pass, and the gate fails.
import { usageError } from "./cli-error.ts";

interface Capability {
  name: string;
  process?: string;
  health?: string;
  message?: string;
}

export interface GateCluster {
  metadata: { name: string };
  status?: { phase?: unknown; capabilities?: unknown };
}

export interface GateShortfall {
  cluster: string;
  capability: string;
  health: string;
  message?: string;
}

export interface GateResult {
  required: string[];
  passed: boolean;
  online: string[];
  offline: string[];
  shortfalls: GateShortfall[];
}

const NAME = /^[a-z0-9][a-z0-9./-]{0,252}$/;

/** The names of `--require a,b,c`, or a usage error naming the one that is not a capability name. */
export function parseRequired(value: string): string[] {
  const names = value.split(",").map((n) => n.trim());
  for (const name of names)
    if (!NAME.test(name))
      throw usageError(
        `--require: ${JSON.stringify(name)} is not a capability name (lower-case letters, digits, ".", "/", "-"; comma-separated)`,
      );
  return [...new Set(names)];
}

/** `runtime` stands for the runtime whatever its kind (`runtime/process`, `runtime/docker`, ...). */
function matches(required: string, capability: Capability): boolean {
  return capability.name === required || capability.name.startsWith(`${required}/`);
}

export function capabilityGate(clusters: GateCluster[], required: string[]): GateResult {
  const online = clusters.filter((c) => c.status?.phase === "Online");
  const shortfalls: GateShortfall[] = [];
  for (const cluster of online) {
    const reported = Array.isArray(cluster.status?.capabilities)
      ? (cluster.status.capabilities as Capability[])
      : [];
    for (const name of required) {
      const found = reported.filter((c) => matches(name, c));
      if (found.length === 0)
        shortfalls.push({
          cluster: cluster.metadata.name,
          capability: name,
          health: "UNKNOWN",
          message: "not reported",
        });
      for (const c of found)
        if (c.health !== "READY")
          shortfalls.push({
            cluster: cluster.metadata.name,
            capability: c.name,
            health: c.health ?? "UNKNOWN",
            ...(c.message ? { message: c.message } : {}),
          });
    }
  }
  return {
    required,
    passed: online.length > 0 && shortfalls.length === 0,
    online: online.map((c) => c.metadata.name),
    offline: clusters.filter((c) => c.status?.phase !== "Online").map((c) => c.metadata.name),
    shortfalls,
  };
}

export function renderGate(gate: GateResult): string {
  const what = `Capability gate (${gate.required.join(", ")})`;
  const lines: string[] = [];
  if (gate.online.length === 0) lines.push(`${what}: FAILED, no agent is online`);
  else if (gate.passed)
    lines.push(`${what}: passed on ${gate.online.length} online agent(s): ${gate.online.join(", ")}`);
  else {
    lines.push(`${what}: FAILED`);
    for (const s of gate.shortfalls)
      lines.push(
        `  ${s.cluster}: ${s.capability} is ${s.health}${s.message ? ` (${s.message.replace(/\s+/g, " ")})` : ""}`,
      );
  }
  if (gate.offline.length > 0) lines.push(`  not judged, offline: ${gate.offline.join(", ")}`);
  return `${lines.join("\n")}\n`;
}
