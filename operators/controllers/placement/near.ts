// Latency-aware placement (`near: {task, maxRTT}` on a task template): a task goes only to a
// cluster whose measured RTT to the named task's cluster is within maxRTT. The figures are the
// PingMesh p99s the clusters' agents report (Cluster status.pingMesh.clusterPairs); either
// direction counts, the larger when both are measured. The same cluster is always near.

import type { Cluster } from "../../api/index.ts";

export interface NearConstraint {
  task: string;
  /** As written, for messages. */
  maxRTT: string;
  maxRttMs: number;
}

const UNITS: Readonly<Record<string, number>> = { us: 0.001, ms: 1, s: 1000 };

/** "5ms" → 5, "500us" → 0.5, "0.2s" → 200; the schema's pattern already holds. */
export function parseMaxRtt(text: string): number {
  const match = /^([0-9]+(?:\.[0-9]+)?)(us|ms|s)$/.exec(text);
  if (!match) throw new Error(`maxRTT ${JSON.stringify(text)} is not a duration in us, ms or s`);
  return Number(match[1]) * (UNITS[match[2] as string] as number);
}

/**
 * A cluster's measured p99 RTT to each cluster it probed, in ms. A pair whose probes all went
 * unanswered has no p99: it is measured, and unreachable (Infinity), not unknown.
 */
export function measuredRtts(cluster: Cluster): ReadonlyMap<string, number> {
  const rtts = new Map<string, number>();
  for (const pair of cluster.status?.pingMesh?.clusterPairs ?? [])
    rtts.set(pair.target, pair.figures.p99Ms ?? Number.POSITIVE_INFINITY);
  return rtts;
}

export interface RttSource {
  readonly name: string;
  readonly rttMs?: ReadonlyMap<string, number>;
}

/** The RTT between two clusters (0 for the same one), or undefined when neither measured it. */
export function rttBetween(a: RttSource, b: RttSource): number | undefined {
  if (a.name === b.name) return 0;
  const there = a.rttMs?.get(b.name);
  const back = b.rttMs?.get(a.name);
  if (there === undefined) return back;
  if (back === undefined) return there;
  return Math.max(there, back);
}

export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return "unreachable";
  return `${Math.round(ms * 1000) / 1000}ms`;
}

/**
 * The order to place tasks in: each named by a `near` before the tasks near it, otherwise as
 * given. Throws on a `near` naming a task the Job does not have, or a circle of them.
 */
export function nearOrder<T extends { name: string; near?: NearConstraint }>(
  tasks: readonly T[],
  placedElsewhere: ReadonlySet<string>,
): T[] {
  const byName = new Map(tasks.map((t) => [t.name, t]));
  const out: T[] = [];
  const state = new Map<string, "visiting" | "done">();
  const visit = (task: T, path: string[]) => {
    if (state.get(task.name) === "done") return;
    if (state.get(task.name) === "visiting")
      throw new Error(`near constraints go round in a circle: ${[...path, task.name].join(" → ")}`);
    state.set(task.name, "visiting");
    const near = task.near;
    if (near) {
      if (near.task === task.name) throw new Error(`task ${task.name}: near names the task itself`);
      const target = byName.get(near.task);
      if (target) visit(target, [...path, task.name]);
      else if (!placedElsewhere.has(near.task))
        throw new Error(`task ${task.name}: near names task ${near.task}, which the Job does not have`);
    }
    state.set(task.name, "done");
    out.push(task);
  };
  for (const task of tasks) visit(task, []);
  return out;
}
