// A report's PingMesh figures on the hub: checked against the Cluster schema before any is kept,
// then turned into conditions when a pair degrades (loss or p99 over the thresholds): the
// Cluster's NetworkDegraded for its pairs to other clusters and between its nodes, each Node's
// for the pairs it is an end of. A node whose every pair is degraded is likely its own NIC; a
// few nodes of one rack or ToR, that switch (docs/pingmesh.md says how to read them).

import { checkSchema, namespaceFor, type PingMeshFigures, type PingMeshStatus } from "../api/index.ts";
import type { KubeObject } from "../lib/kube-object.ts";
import type { Logger } from "../lib/logger.ts";
import type { Store } from "../lib/store/index.ts";
import type { Report } from "../lib/tunnel/index.ts";

/** A pair is degraded above 5 % loss or a 100 ms p99. */
export const DEGRADED_LOSS = 0.05;
export const DEGRADED_P99_MS = 100;
export const CONDITION = "NetworkDegraded";
/** Pairs named in a condition's message at most. */
const MAX_NAMED = 6;

/** The report's figures if they are a valid Cluster status.pingMesh; else undefined, logged. */
export function checkedPingMesh(
  cluster: KubeObject,
  pingMesh: Record<string, unknown>,
  logger: Logger,
): PingMeshStatus | undefined {
  const candidate = { ...cluster, status: { ...((cluster.status as object | undefined) ?? {}), pingMesh } };
  const [problem] = checkSchema(candidate).filter((v) => v.path.startsWith("/status/pingMesh"));
  if (problem) {
    logger.warn("invalid PingMesh figures in agent report ignored", {
      cluster: cluster.metadata.name,
      problem: `${problem.path}: ${problem.message}`,
    });
    return undefined;
  }
  return pingMesh as unknown as PingMeshStatus;
}

export function degraded(figures: PingMeshFigures): string | undefined {
  if (figures.loss > DEGRADED_LOSS) return `loss ${Math.round(figures.loss * 1000) / 10}%`;
  if (figures.p99Ms === undefined) return "no answer";
  if (figures.p99Ms > DEGRADED_P99_MS) return `p99 ${figures.p99Ms}ms`;
  return undefined;
}

interface Condition {
  type: string;
  status: "True" | "False";
  reason: string;
  message: string;
  lastTransitionTime: string;
}

function named(items: string[]): string {
  const shown = items.slice(0, MAX_NAMED).join(", ");
  return items.length > MAX_NAMED ? `${shown} and ${items.length - MAX_NAMED} more` : shown;
}

/** Keeps the transition time of a condition whose status did not change. */
function since(previous: readonly unknown[] | undefined, status: string, now: string): string {
  const old = previous?.find((c) => (c as { type?: string }).type === CONDITION) as Condition | undefined;
  return old?.status === status && old.lastTransitionTime ? old.lastTransitionTime : now;
}

/** The Cluster's NetworkDegraded condition from its figures. */
export function clusterCondition(
  figures: PingMeshStatus,
  previous: readonly unknown[] | undefined,
  now: string,
): Condition {
  const bad = [
    ...(figures.clusterPairs ?? []).flatMap((p) => {
      const why = degraded(p.figures);
      return why ? [`to cluster ${p.target}: ${why}`] : [];
    }),
    ...(figures.nodePairs ?? []).flatMap((p) => {
      const why = degraded(p.figures);
      return why ? [`${p.source} → ${p.target}: ${why}`] : [];
    }),
  ];
  const status = bad.length > 0 ? "True" : "False";
  return {
    type: CONDITION,
    status,
    reason: bad.length > 0 ? "PairsDegraded" : "PairsHealthy",
    message:
      bad.length > 0
        ? `${bad.length} pairs over ${DEGRADED_LOSS * 100}% loss or ${DEGRADED_P99_MS}ms p99: ${named(bad)}`
        : `every probed pair within ${DEGRADED_LOSS * 100}% loss and ${DEGRADED_P99_MS}ms p99`,
    lastTransitionTime: since(previous, status, now),
  };
}

/** The conditions list with `condition` in place of any earlier one of its type. */
export function withCondition(conditions: readonly unknown[] | undefined, condition: Condition): unknown[] {
  return [...(conditions ?? []).filter((c) => (c as { type?: string }).type !== CONDITION), condition];
}

/**
 * The reported Nodes with NetworkDegraded set on each end of a probed pair; nodes in no pair are
 * left as reported. `stored` gives each Node's conditions as the store has them (for the
 * transition time).
 */
export function nodesWithConditions(
  nodes: readonly KubeObject[],
  figures: PingMeshStatus,
  stored: ReadonlyMap<string, readonly unknown[] | undefined>,
  now: string,
): KubeObject[] {
  const pairs = new Map<string, { total: number; bad: string[] }>();
  for (const pair of figures.nodePairs ?? []) {
    const why = degraded(pair.figures);
    for (const [end, other] of [
      [pair.source, `to ${pair.target}`],
      [pair.target, `from ${pair.source}`],
    ] as const) {
      const entry = pairs.get(end) ?? { total: 0, bad: [] };
      entry.total++;
      if (why) entry.bad.push(`${other}: ${why}`);
      pairs.set(end, entry);
    }
  }
  return nodes.map((node) => {
    const entry = pairs.get(node.metadata.name);
    if (!entry) return node;
    const status = (node.status ?? {}) as { conditions?: unknown[] };
    const state = entry.bad.length > 0 ? "True" : "False";
    const condition: Condition = {
      type: CONDITION,
      status: state,
      reason:
        entry.bad.length === 0
          ? "PairsHealthy"
          : entry.bad.length === entry.total
            ? "AllPairsDegraded"
            : "SomePairsDegraded",
      message:
        entry.bad.length > 0
          ? `${entry.bad.length} of ${entry.total} probed pairs degraded: ${named(entry.bad)}`
          : `${entry.total} probed pairs healthy`,
      lastTransitionTime: since(stored.get(node.metadata.name), state, now),
    };
    return { ...node, status: { ...status, conditions: withCondition(status.conditions, condition) } };
  });
}

export interface ReportedPingMesh {
  figures: PingMeshStatus;
  /** The report's Nodes with their NetworkDegraded conditions. */
  nodes: KubeObject[];
  /** The Cluster's NetworkDegraded condition, given its conditions now. */
  clusterCondition(previous: readonly unknown[] | undefined): Condition;
}

/** A report's PingMesh figures, checked, with the conditions they make; undefined without any. */
export async function pingMeshOf(
  store: Store,
  cluster: string,
  report: Report,
  now: string,
  logger: Logger,
): Promise<ReportedPingMesh | undefined> {
  if (!report.pingMesh) return undefined;
  const object = await store.get("Cluster", undefined, cluster);
  if (!object) return undefined;
  const figures = checkedPingMesh(object, report.pingMesh, logger);
  if (!figures) return undefined;
  const stored = new Map(
    (await store.list("Node", { namespace: namespaceFor(cluster) })).items.map((n) => [
      n.metadata.name,
      (n.status as { conditions?: unknown[] } | undefined)?.conditions,
    ]),
  );
  return {
    figures,
    nodes: nodesWithConditions(report.nodes, figures, stored, now),
    clusterCondition: (previous) => clusterCondition(figures, previous, now),
  };
}
