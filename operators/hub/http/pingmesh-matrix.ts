// The PingMesh figures as the questions seed 002 asks of them: an RTT matrix between clusters and,
// per cluster, between nodes; which node or rack/ToR looks at fault (every pair of one node
// degraded points at its NIC or host; several degraded nodes of one rack or ToR at that switch);
// whether a set of nodes is fit to be one job (every pair among them measured and healthy); and,
// where nodes probe ICMP too, whether TCP fails while ICMP works. Pure: from Cluster objects to
// answers.

import { DEGRADED_LOSS, DEGRADED_P99_MS, degraded } from "../../agent-sync/index.ts";
import type { Cluster, PingMeshFigures, PingMeshNode } from "../../api/index.ts";

export interface MatrixCell {
  source: string;
  target: string;
  figures: PingMeshFigures;
  /** Why the pair is degraded; absent when it is not. */
  degraded?: string;
  /** The pair's ICMP echoes, where its node probes them. */
  icmp?: PingMeshFigures;
}

/** A pair probed both ways whose TCP and ICMP disagree, or both fail. */
export interface ProtocolFinding {
  source: string;
  target: string;
  /** tcp-only: TCP degraded, ICMP healthy; both: both degraded. */
  verdict: "tcp-only" | "both";
  message: string;
}

export interface Suspect {
  scope: "node" | "rack" | "tor";
  name: string;
  message: string;
}

export const THRESHOLDS = { loss: DEGRADED_LOSS, p99Ms: DEGRADED_P99_MS };

const cell = (
  source: string,
  target: string,
  figures: PingMeshFigures,
  icmp?: PingMeshFigures,
): MatrixCell => {
  const why = degraded(figures);
  return { source, target, figures, ...(why ? { degraded: why } : {}), ...(icmp ? { icmp } : {}) };
};

const ms = (v: number | undefined) => (v === undefined ? "–" : `${Math.round(v * 100) / 100} ms`);

/** Why a pair's probes fail (loss over the threshold, or no answer at all); slowness is not failing. */
function failing(figures: PingMeshFigures): string | undefined {
  if (figures.loss > DEGRADED_LOSS) return `loss ${Math.round(figures.loss * 1000) / 10}%`;
  if (figures.p99Ms === undefined) return "no answer";
  return undefined;
}

/**
 * TCP failing while ICMP works (seed 002): the host answers echoes, so the link and the host are
 * up; what fails is TCP to the probe port (a filter, a security group, the listener gone). Both
 * failing points at the link or the host. Failing is loss, not slowness (a slow pair is in the
 * heatmap). Only pairs whose node probes ICMP are judged.
 */
function protocolFindings(pairs: readonly MatrixCell[]): ProtocolFinding[] {
  const out: ProtocolFinding[] = [];
  for (const p of pairs) {
    const tcp = failing(p.figures);
    if (!p.icmp || !tcp) continue;
    const icmp = failing(p.icmp);
    out.push(
      icmp
        ? {
            source: p.source,
            target: p.target,
            verdict: "both",
            message: `TCP ${tcp} and ICMP ${icmp}: the link or the host, not one port`,
          }
        : {
            source: p.source,
            target: p.target,
            verdict: "tcp-only",
            message: `TCP ${tcp} while ICMP answers (p99 ${ms(p.icmp.p99Ms)}, loss ${Math.round(p.icmp.loss * 1000) / 10}%): the host is up; TCP to its probe port is filtered or the listener is down`,
          },
    );
  }
  return out;
}

/** Every cluster's pairs to the others, sorted by source then target. */
export function clusterMatrix(clusters: readonly Cluster[]) {
  const sorted = [...clusters].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
  return {
    kind: "PingMeshMatrix",
    thresholds: THRESHOLDS,
    clusters: sorted.map((c) => c.metadata.name),
    pairs: sorted.flatMap((c) =>
      (c.status?.pingMesh?.clusterPairs ?? []).map((p) => cell(c.metadata.name, p.target, p.figures)),
    ),
  };
}

function suspects(nodes: readonly PingMeshNode[], pairs: readonly MatrixCell[]): Suspect[] {
  const ends = new Map<string, { total: number; bad: number }>();
  for (const pair of pairs)
    for (const end of [pair.source, pair.target]) {
      const entry = ends.get(end) ?? { total: 0, bad: 0 };
      entry.total++;
      if (pair.degraded) entry.bad++;
      ends.set(end, entry);
    }
  const out: Suspect[] = [];
  const badNodes = new Set<string>();
  for (const [name, { total, bad }] of [...ends].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (bad > 0) badNodes.add(name);
    if (total >= 2 && bad === total)
      out.push({
        scope: "node",
        name,
        message: `every one of its ${total} pairs is degraded: its NIC or host, not the network around it`,
      });
  }
  for (const scope of ["rack", "tor"] as const) {
    const groups = new Map<string, string[]>();
    for (const node of nodes) {
      const group = node.topology?.[scope];
      if (group) groups.set(group, [...(groups.get(group) ?? []), node.name]);
    }
    for (const [group, members] of [...groups].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const bad = members.filter((m) => badNodes.has(m));
      if (members.length >= 2 && bad.length === members.length)
        out.push({
          scope,
          name: group,
          message: `all ${members.length} of its nodes have degraded pairs (${bad.sort().join(", ")}): the ${scope === "tor" ? "ToR switch" : "rack's uplink"} rather than one node`,
        });
    }
  }
  return out;
}

/** Whether `wanted` nodes are fit to be one job: every pair among them measured, none degraded. */
function fit(wanted: readonly string[], pairs: readonly MatrixCell[]) {
  const byPair = new Map(pairs.map((p) => [`${p.source}\0${p.target}`, p]));
  const problems: string[] = [];
  for (let i = 0; i < wanted.length; i++)
    for (let j = i + 1; j < wanted.length; j++) {
      const [a, b] = [wanted[i] as string, wanted[j] as string];
      const found = [byPair.get(`${a}\0${b}`), byPair.get(`${b}\0${a}`)].filter((p) => p !== undefined);
      if (found.length === 0) problems.push(`${a} ↔ ${b}: not measured`);
      for (const p of found) if (p.degraded) problems.push(`${p.source} → ${p.target}: ${p.degraded}`);
    }
  return { nodes: [...wanted], ok: problems.length === 0, problems };
}

/** One cluster's node matrix, its suspects and, given `wanted` nodes, whether they fit one job. */
export function nodeMatrix(cluster: Cluster, wanted?: readonly string[]) {
  const mesh = cluster.status?.pingMesh;
  const pairs = (mesh?.nodePairs ?? []).map((p) => cell(p.source, p.target, p.figures, p.icmp));
  const nodes = mesh?.nodes ?? [];
  return {
    kind: "PingMeshNodeMatrix",
    cluster: cluster.metadata.name,
    thresholds: THRESHOLDS,
    ...(mesh ? { observedAt: mesh.observedAt } : {}),
    nodes,
    pairs,
    suspects: suspects(nodes, pairs),
    protocols: protocolFindings(pairs),
    ...(wanted && wanted.length > 0 ? { fit: fit(wanted, pairs) } : {}),
  };
}
