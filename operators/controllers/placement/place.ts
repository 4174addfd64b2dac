// Gang placement of one Job: a cluster for every task, or none at all with the reason in words.
// Pure: reads the views it is given, mutates nothing, same input → same answer.

import { formatSelector, matches } from "../../lib/store/index.ts";
import { BestFirst } from "./best-first.ts";
import type { ClusterView, NodeView } from "./cluster-view.ts";
import { formatMs, nearOrder, type RttSource, rttBetween } from "./near.ts";
import { type Amounts, fitCount, formatAmount, formatRequest, POD_COUNT, shortfall } from "./resources.ts";
import { type PlacementTask, runtimesFor } from "./task-requirements.ts";

export interface NodeAssignment {
  node: string;
  replicas: number;
}

export interface TaskPlacement {
  task: string;
  cluster: string;
  /** Where the replicas were counted (the cluster's own scheduler makes the final choice). */
  nodes: NodeAssignment[];
  /** One replica's request, as reserved on each assigned node. */
  request: Amounts;
}

/** Unschedulable: no cluster can take it now; WaitingForRTT: a `near` lacks the measurement it needs. */
export type UnplacedReason = "Unschedulable" | "WaitingForRTT";

export type PlacementResult =
  | { placed: true; tasks: TaskPlacement[] }
  | { placed: false; task: string; reason: UnplacedReason; message: string };

export interface PlaceJobInput {
  tasks: readonly PlacementTask[];
  /** Clusters with their nodes (each cluster's nodes sorted by name). */
  clusters: readonly ClusterView[];
  /** Search steps before giving up on finding a combination (default 10,000). */
  budget?: number;
  /**
   * Whether tasks may go to different clusters: only for a Job with a Domain, whose network
   * reaches across clusters. Default false: every task goes to one cluster, or none is placed.
   */
  spanClusters?: boolean;
  /** Tasks of the Job placed before (by name → cluster), which `near` constraints may name. */
  placed?: ReadonlyMap<string, string>;
}

/** Job-local consumption on top of the views' free figures. */
interface Used {
  nodes: Map<NodeView, Record<string, number>>;
  clusters: Map<ClusterView, Record<string, number>>;
}

interface Totals {
  free: Record<string, number>;
  allocatable: Record<string, number>;
}

// Views are immutable by contract, so their usable totals are computed once per view.
const totalsCache = new WeakMap<ClusterView, Totals>();

function totalsOf(cluster: ClusterView): Totals {
  let totals = totalsCache.get(cluster);
  if (totals) return totals;
  totals = { free: {}, allocatable: {} };
  for (const node of cluster.nodes) {
    if (!node.schedulable || !node.ready) continue;
    for (const name in node.allocatable) {
      totals.allocatable[name] = (totals.allocatable[name] ?? 0) + (node.allocatable[name] as number);
    }
    for (const name in node.free) totals.free[name] = (totals.free[name] ?? 0) + (node.free[name] as number);
  }
  totalsCache.set(cluster, totals);
  return totals;
}

interface Fit {
  cluster: ClusterView;
  nodes: { node: NodeView; replicas: number }[];
  score: number;
}

function freeOf(node: NodeView, used: Used): Amounts {
  const taken = used.nodes.get(node);
  if (!taken) return node.free;
  const free: Record<string, number> = { ...node.free };
  for (const [name, value] of Object.entries(taken))
    if (name in free) free[name] = (free[name] as number) - value;
  return free;
}

function consume(used: Used, fit: Fit, request: Amounts, sign: 1 | -1): void {
  const inCluster = used.clusters.get(fit.cluster) ?? {};
  for (const { node, replicas } of fit.nodes) {
    const taken = used.nodes.get(node) ?? {};
    for (const name in request) {
      const amount = sign * (request[name] as number) * replicas;
      taken[name] = (taken[name] ?? 0) + amount;
      if (node.schedulable && node.ready) inCluster[name] = (inCluster[name] ?? 0) + amount;
    }
    used.nodes.set(node, taken);
  }
  used.clusters.set(fit.cluster, inCluster);
}

function matchesNodeSelector(node: NodeView, selector: Readonly<Record<string, string>>): boolean {
  for (const key in selector) if (node.labels[key] !== selector[key]) return false;
  return true;
}

function clusterRefusal(task: PlacementTask, cluster: ClusterView): string | undefined {
  if (!cluster.online) return "Offline";
  if (!runtimesFor(task.agentType).includes(cluster.runtime)) {
    return `its agent's runtime ${cluster.runtime || "unknown"} does not run ${task.agentType} tasks`;
  }
  if (task.clusterSelector && !matches(task.clusterSelector, cluster.labels)) {
    return "does not match the clusterSelector";
  }
  return undefined;
}

/** Where the task's replicas fit in the cluster, or the per-node reasons they do not. */
function fitCluster(
  task: PlacementTask,
  cluster: ClusterView,
  used: Used,
  explain: boolean,
): Fit | { problems: string[] } {
  const nodes: { node: NodeView; replicas: number }[] = [];
  const problems: string[] = [];
  let unmatched = 0;
  let remaining = task.replicas;
  for (const node of cluster.nodes) {
    if (!matchesNodeSelector(node, task.nodeSelector)) {
      unmatched++;
      continue;
    }
    if (!node.schedulable) {
      if (explain) problems.push(`${node.name} cordoned`);
      continue;
    }
    if (!node.ready) {
      if (explain) problems.push(`${node.name} not Ready`);
      continue;
    }
    if (!task.daemonSet && remaining <= 0) break;
    const free = freeOf(node, used);
    const count = fitCount(task.request, free);
    if (count <= 0) {
      if (!explain) continue;
      const short = shortfall(task.request, free) ?? POD_COUNT;
      const have = Math.max(0, free[short] ?? 0);
      const of = node.allocatable[short] ?? 0;
      problems.push(
        `${node.name} has ${formatAmount(short, have)} of ${formatAmount(short, of)} ${short} free`,
      );
      continue;
    }
    if (task.daemonSet) {
      nodes.push({ node, replicas: 1 });
      continue;
    }
    const take = Math.min(count, remaining);
    nodes.push({ node, replicas: take });
    remaining -= take;
  }
  const enough = task.daemonSet ? nodes.length > 0 : remaining <= 0;
  if (enough) return { cluster, nodes, score: freeScore(task, cluster, used) };
  if (!task.daemonSet && nodes.length > 0) {
    problems.unshift(`room for ${task.replicas - remaining} of ${task.replicas} replicas`);
  }
  if (cluster.nodes.length === 0) problems.push("no nodes reported");
  else if (unmatched === cluster.nodes.length)
    problems.push(`none of ${unmatched} nodes match the nodeSelector`);
  return { problems };
}

/**
 * "Most free resources": the free share, summed over the resources the task asks for (cpu and
 * memory always count), across the cluster's usable nodes before this task is added.
 */
function freeScore(task: PlacementTask, cluster: ClusterView, used: Used): number {
  const taken = used.clusters.get(cluster);
  if (!taken) return untouchedScore(task, cluster);
  return scoreWith(task, cluster, taken);
}

// A view's score before the Job takes anything from it depends only on the view and the names
// of the resources asked for: kept per view (views are immutable, and a placement over a
// thousand clusters reads the same thousand scores for Job after Job).
const untouchedScores = new WeakMap<ClusterView, Map<string, number>>();

const scoredNames = new WeakMap<PlacementTask, string>();

/** The resources beyond cpu and memory a task's score counts, as one key. */
function scoredNamesOf(task: PlacementTask): string {
  let names = scoredNames.get(task);
  if (names === undefined) {
    names = "";
    for (const name in task.request)
      if (name !== POD_COUNT && name !== "cpu" && name !== "memory") names += `${name}\0`;
    scoredNames.set(task, names);
  }
  return names;
}

function untouchedScore(task: PlacementTask, cluster: ClusterView): number {
  const names = scoredNamesOf(task);
  let scores = untouchedScores.get(cluster);
  if (!scores) {
    scores = new Map();
    untouchedScores.set(cluster, scores);
  }
  let score = scores.get(names);
  if (score === undefined) {
    score = scoreWith(task, cluster, undefined);
    scores.set(names, score);
  }
  return score;
}

function scoreWith(
  task: PlacementTask,
  cluster: ClusterView,
  taken: Record<string, number> | undefined,
): number {
  const totals = totalsOf(cluster);
  const share = (name: string) => {
    const total = totals.allocatable[name] ?? 0;
    if (total <= 0) return 0;
    return Math.max(0, (totals.free[name] ?? 0) - (taken?.[name] ?? 0)) / total;
  };
  let score = share("cpu") + share("memory");
  for (const name in task.request) {
    if (name !== POD_COUNT && name !== "cpu" && name !== "memory") score += share(name);
  }
  return score;
}

const MAX_DETAILS = 6;

function unplaceable(task: PlacementTask, refusals: [string, string][]): string {
  const selector = formatSelector({
    requirements: Object.keys(task.nodeSelector)
      .sort()
      .map((key) => ({ key, operator: "In" as const, values: [task.nodeSelector[key] as string] })),
  });
  const request = formatRequest(task.request);
  let want = "a schedulable node";
  if (selector) want += ` matching ${selector}`;
  if (request) want += ` with ${request} free`;
  if (task.daemonSet) want += " for its DaemonSet";
  else if (task.replicas > 1) want += ` for each of ${task.replicas} replicas`;
  const details = refusals.slice(0, MAX_DETAILS).map(([cluster, why]) => `${cluster}: ${why}`);
  if (refusals.length > MAX_DETAILS) details.push(`${refusals.length - MAX_DETAILS} more clusters`);
  const tail = details.length > 0 ? details.join("; ") : "no clusters are registered";
  return `task ${task.name}: no Online cluster has ${want} (${tail})`;
}

function candidates(task: PlacementTask, clusters: readonly ClusterView[], used: Used): Fit[] | string {
  const fits: Fit[] = [];
  for (const cluster of clusters) {
    if (clusterRefusal(task, cluster)) continue;
    const fit = fitCluster(task, cluster, used, false);
    if (!("problems" in fit)) fits.push(fit);
  }
  if (fits.length > 0) {
    return fits.sort((a, b) => b.score - a.score || (a.cluster.name < b.cluster.name ? -1 : 1));
  }
  return whyNoFit(task, clusters, used);
}

/**
 * The same fits in the same order as `candidates`, found one at a time: the clusters are ranked
 * by score first (cheap: totals per view) and fitted node by node only as the search asks for the
 * next, so a Job whose first choice fits costs one fit, not one per cluster. Only for a search
 * that keeps every task in one cluster: the deeper steps then touch only the cluster being
 * tried, so the clusters not yet fitted are read in the same state `candidates` would read them.
 */
function lazyCandidates(
  task: PlacementTask,
  clusters: readonly ClusterView[],
  used: Used,
): Iterable<Fit> | string {
  const ranked: { cluster: ClusterView; name: string; score: number }[] = [];
  for (const cluster of clusters) {
    if (clusterRefusal(task, cluster)) continue;
    ranked.push({ cluster, name: cluster.name, score: freeScore(task, cluster, used) });
  }
  const order = new BestFirst(ranked);
  const next = (): Fit | undefined => {
    for (let r = order.take(); r; r = order.take()) {
      const fit = fitCluster(task, r.cluster, used, false);
      if (!("problems" in fit)) return fit;
    }
    return undefined;
  };
  const first = next();
  if (!first) return whyNoFit(task, clusters, used);
  return (function* () {
    yield first;
    for (let fit = next(); fit; fit = next()) yield fit;
  })();
}

/** Nothing fits: only now spend the time to say why, cluster by cluster. */
function whyNoFit(task: PlacementTask, clusters: readonly ClusterView[], used: Used): string {
  const refusals: [string, string][] = [];
  const grouped = new Map<string, string[]>();
  for (const cluster of clusters) {
    const refusal = clusterRefusal(task, cluster);
    if (refusal) {
      grouped.set(refusal, [...(grouped.get(refusal) ?? []), cluster.name]);
      continue;
    }
    const fit = fitCluster(task, cluster, used, true);
    if ("problems" in fit) refusals.push([cluster.name, fit.problems.slice(0, 4).join(", ")]);
  }
  // Node-level reasons first: they say what to change; cluster-level ones are grouped.
  for (const [why, names] of grouped) {
    refusals.push(
      names.length === 1 ? [names[0] as string, why] : [`${names.length} clusters (${names[0]}, ...)`, why],
    );
  }
  return unplaceable(task, refusals);
}

/** Why one cluster cannot take every task of a Job: the first task it refuses, given the ones before. */
function singleClusterRefusal(tasks: readonly PlacementTask[], cluster: ClusterView): string | undefined {
  if (!cluster.online) return "Offline";
  const used: Used = { nodes: new Map(), clusters: new Map() };
  for (const task of tasks) {
    const refusal = clusterRefusal(task, cluster);
    if (refusal) return `task ${task.name}: ${refusal}`;
    const fit = fitCluster(task, cluster, used, true);
    if ("problems" in fit) return `task ${task.name}: ${fit.problems.slice(0, 4).join(", ") || "no room"}`;
    consume(used, fit, task.request, 1);
  }
  return undefined;
}

function noSingleCluster(tasks: readonly PlacementTask[], clusters: readonly ClusterView[]): string {
  const grouped = new Map<string, string[]>();
  for (const cluster of clusters) {
    const why = singleClusterRefusal(tasks, cluster) ?? "out of search budget";
    grouped.set(why, [...(grouped.get(why) ?? []), cluster.name]);
  }
  const details = [...grouped]
    .slice(0, MAX_DETAILS)
    .map(([why, names]) =>
      names.length === 1 ? `${names[0]}: ${why}` : `${names.length} clusters (${names[0]}, ...): ${why}`,
    );
  if (grouped.size > MAX_DETAILS) details.push(`${grouped.size - MAX_DETAILS} more reasons`);
  return `no single Online cluster has room for every task, and a Job without a Domain runs all its tasks in one cluster (${details.join("; ")})`;
}

interface Failure {
  task: string;
  reason: UnplacedReason;
  message: string;
}

/** The fits within the task's maxRTT of `other`, or why there are none. */
function nearFits(task: PlacementTask, fits: Fit[], other: RttSource): Fit[] | Failure {
  const near = task.near;
  if (!near) return fits;
  const measured: [string, number][] = [];
  const unmeasured: string[] = [];
  const within = fits.filter((fit) => {
    const rtt = rttBetween(fit.cluster, other);
    if (rtt === undefined) unmeasured.push(fit.cluster.name);
    else if (rtt > near.maxRttMs) measured.push([fit.cluster.name, rtt]);
    return rtt !== undefined && rtt <= near.maxRttMs;
  });
  if (within.length > 0) return within;
  const figures = measured.map(([name, rtt]) => `${name}: ${formatMs(rtt)}`).join(", ");
  if (unmeasured.length > 0) {
    return {
      task: task.name,
      reason: "WaitingForRTT",
      message: `task ${task.name}: no RTT measured between ${other.name} and any of ${unmeasured.join(", ")}, where it fits (near ${near.task}, maxRTT ${near.maxRTT}${figures ? `; measured: ${figures}` : ""}); PingMesh figures come with the clusters' agents' reports`,
    };
  }
  return {
    task: task.name,
    reason: "Unschedulable",
    message: `task ${task.name}: no cluster within ${near.maxRTT} of ${other.name} (${figures}), where ${near.task} runs`,
  };
}

function isFailure(options: Iterable<Fit> | Failure): options is Failure {
  return "reason" in options;
}

function search(
  tasks: readonly PlacementTask[],
  clusters: readonly ClusterView[],
  together: boolean,
  budget: number,
  placed: ReadonlyMap<string, string>,
): { chosen: Fit[] } | Failure {
  const used: Used = { nodes: new Map(), clusters: new Map() };
  const chosen: Fit[] = [];
  const chosenFor = new Map<string, ClusterView>();
  let byName: Map<string, ClusterView> | undefined; // only `near` asks: built when it does
  let firstFailure: Failure | undefined;
  const nearOf = (task: PlacementTask): RttSource | undefined => {
    if (!task.near) return undefined;
    const at = chosenFor.get(task.near.task);
    if (at) return at;
    const name = placed.get(task.near.task);
    byName ??= new Map(clusters.map((c) => [c.name, c]));
    return name ? (byName.get(name) ?? { name }) : undefined;
  };

  const step = (i: number): boolean => {
    const task = tasks[i];
    if (!task) return true;
    // Together: the first task's cluster is every later task's only choice.
    let options: Iterable<Fit> | string | Failure = together
      ? lazyCandidates(task, chosen[0] ? [chosen[0].cluster] : clusters, used)
      : candidates(task, clusters, used);
    budget--;
    const other = nearOf(task);
    if (typeof options !== "string" && other) options = nearFits(task, [...options], other);
    if (typeof options === "string") {
      firstFailure ??= { task: task.name, reason: "Unschedulable", message: options };
      return false;
    }
    if (isFailure(options)) {
      // a wait for figures says more than a later refusal: it is what to fix
      if (!firstFailure || (options.reason === "WaitingForRTT" && firstFailure.reason !== "WaitingForRTT"))
        firstFailure = options;
      return false;
    }
    for (const fit of options) {
      consume(used, fit, task.request, 1);
      chosen.push(fit);
      chosenFor.set(task.name, fit.cluster);
      if (step(i + 1)) return true;
      chosen.pop();
      chosenFor.delete(task.name);
      consume(used, fit, task.request, -1);
      if (budget <= 0) return false;
    }
    return false;
  };

  if (step(0)) return { chosen };
  return (
    firstFailure ?? { task: tasks[0]?.name ?? "", reason: "Unschedulable", message: "no placement found" }
  );
}

/**
 * A cluster for every task of one Job, or none. Without `spanClusters` every task goes to the
 * same cluster. Each task goes to the cluster with the most free resources that fits it (ties
 * by name); when a later task fits nowhere because of the choices for earlier ones, other
 * choices are tried (depth first, within `budget` steps).
 */
export function placeJob(input: PlaceJobInput): PlacementResult {
  const clusters = [...input.clusters].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const budget = input.budget ?? 10_000;
  const together = input.spanClusters !== true;
  const placed = input.placed ?? new Map<string, string>();
  let tasks: PlacementTask[];
  try {
    tasks = nearOrder(input.tasks, new Set(placed.keys()));
  } catch (error) {
    return {
      placed: false,
      task: input.tasks[0]?.name ?? "",
      reason: "Unschedulable",
      message: (error as Error).message,
    };
  }
  const result = search(tasks, clusters, together, budget, placed);
  if ("chosen" in result) {
    return {
      placed: true,
      tasks: result.chosen.map((fit, i) => {
        const task = tasks[i] as PlacementTask;
        return {
          task: task.name,
          cluster: fit.cluster.name,
          nodes: fit.nodes.map(({ node, replicas }) => ({ node: node.name, replicas })),
          request: task.request,
        };
      }),
    };
  }
  if (together && clusters.length > 0) {
    // A task that fits nowhere even on its own says more than "no single cluster".
    const spread = search(tasks, clusters, false, budget, placed);
    if ("chosen" in spread) {
      return {
        placed: false,
        task: tasks[0]?.name ?? "",
        reason: "Unschedulable",
        message: noSingleCluster(tasks, clusters),
      };
    }
    return { placed: false, ...spread };
  }
  return { placed: false, ...result };
}
