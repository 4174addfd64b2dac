// An in-memory picture of the pool, kept current from watch events, so placing a Job costs
// O(tasks × clusters × nodes) without listing Nodes: each node's free resources are computed
// once per change, not once per Job.
//
// Reservations close the gap between "placed" and "the node reports it": a Task whose pods are
// not yet observed running holds its request on the nodes placement counted it on. They are
// taken synchronously with the placement decision, so two reconciles in one process never
// book the same room.

import type { Cluster, Node, Task } from "../../api/index.ts";
import { clusterOf } from "../../api/index.ts";
import { deepEqual, type Store } from "../../lib/store/index.ts";
import { type ClusterView, clusterRuntime, type NodeView, nodeBase } from "./cluster-view.ts";
import { measuredRtts } from "./near.ts";
import { type NodeAssignment, placeJob, type TaskPlacement } from "./place.ts";
import type { Amounts } from "./resources.ts";
import { placementTask } from "./task-requirements.ts";

interface NodeState {
  base: ReturnType<typeof nodeBase>;
  /** Reserved on this node, by reservation key. */
  reserved: Map<string, Amounts>;
  /** The sum of `reserved`, kept as it changes (a node may hold thousands of reservations). */
  reservedTotal: Record<string, number>;
  view: NodeView | undefined;
}

interface Reservation {
  cluster: string;
  /** Released together by releaseGroup (a Job's plans). */
  group?: string;
  nodes: { node: string; amounts: Amounts }[];
}

/** A Task's placement is not yet in its nodes' reports while it has not started. */
export function holdsReservation(task: Task): boolean {
  if (task.metadata.deletionTimestamp) return false;
  const phase = task.status?.phase;
  return phase === undefined || phase === "Pending" || phase === "Unknown";
}

function rv(object: { metadata: { resourceVersion?: string } }): number {
  return Number(object.metadata.resourceVersion ?? 0);
}

export class PlacementSnapshot {
  #clusters = new Map<string, { object: Cluster }>();
  #nodes = new Map<string, Map<string, NodeState>>();
  #reservations = new Map<string, Reservation>();
  #groups = new Map<string, Set<string>>();
  #views = new Map<string, ClusterView>();
  /** Every cluster's view by name; rebuilt whole only when a cluster comes or goes. */
  #sorted: ClusterView[] | undefined;
  /** Position of each cluster in #sorted. */
  #positions = new Map<string, number>();
  /** Clusters whose entry in #sorted is out of date (a reservation or a report changed them). */
  #stale = new Set<string>();
  #loaded: Promise<void> | undefined;
  /** Last resourceVersion seen per object (deletions included), so a stale list never undoes a newer event. */
  #versions = new Map<string, number>();

  #fresh(key: string, version: number): boolean {
    const known = this.#versions.get(key);
    if (known !== undefined && version > 0 && version < known) return false;
    if (version > 0) this.#versions.set(key, version);
    return true;
  }

  /** Fills the snapshot from the store once (later calls wait for the same load). */
  load(store: Store): Promise<void> {
    this.#loaded ??= (async () => {
      const [clusters, nodes, tasks] = await Promise.all([
        store.list<Cluster>("Cluster"),
        store.list<Node>("Node"),
        store.list<Task>("Task"),
      ]);
      for (const c of clusters.items) this.setCluster(c);
      for (const n of nodes.items) this.setNode(n);
      for (const t of tasks.items) this.observeTask(t);
    })();
    return this.#loaded;
  }

  cluster(name: string): Cluster | undefined {
    return this.#clusters.get(name)?.object;
  }

  /** Records a Cluster; true when what placement reads of it changed (labels, runtime, Online). */
  setCluster(cluster: Cluster): boolean {
    const name = cluster.metadata.name;
    if (!this.#fresh(`Cluster/${name}`, rv(cluster))) return false;
    const known = this.#clusters.get(name)?.object;
    if (!this.#clusters.has(name)) this.#reorder();
    this.#clusters.set(name, { object: cluster });
    const same =
      known !== undefined &&
      clusterRuntime(known) === clusterRuntime(cluster) &&
      (known.status?.phase === "Online") === (cluster.status?.phase === "Online") &&
      deepEqual(known.metadata.labels ?? {}, cluster.metadata.labels ?? {}) &&
      deepEqual(rttBuckets(known), rttBuckets(cluster));
    if (same) return false;
    this.#dirty(name);
    return true;
  }

  deleteCluster(name: string, resourceVersion = 0): void {
    if (!this.#fresh(`Cluster/${name}`, resourceVersion)) return;
    if (this.#clusters.delete(name)) this.#reorder();
    this.#dirty(name);
  }

  /** Records a Node report; true when what placement reads of it changed (heartbeats alone do not). */
  setNode(node: Node): boolean {
    const cluster = clusterOf(node.metadata.namespace);
    if (!cluster) return false;
    let nodes = this.#nodes.get(cluster);
    if (!nodes) {
      nodes = new Map();
      this.#nodes.set(cluster, nodes);
    }
    if (!this.#fresh(`Node/${node.metadata.namespace}/${node.metadata.name}`, rv(node))) return false;
    const known = nodes.get(node.metadata.name);
    const base = nodeBase(node);
    if (known && deepEqual(known.base, base)) return false;
    nodes.set(node.metadata.name, {
      base,
      reserved: known?.reserved ?? new Map(),
      reservedTotal: known?.reservedTotal ?? {},
      view: undefined,
    });
    this.#dirty(cluster);
    return true;
  }

  deleteNode(namespace: string | undefined, name: string, resourceVersion = 0): void {
    const cluster = clusterOf(namespace);
    if (!cluster) return;
    if (!this.#fresh(`Node/${namespace}/${name}`, resourceVersion)) return;
    this.#nodes.get(cluster)?.delete(name);
    this.#dirty(cluster);
  }

  /**
   * Reserves (or releases) a Task's request as its reported state says. A Task this snapshot
   * did not place (another process did, before a restart) is counted on the nodes where it fits.
   */
  observeTask(task: Task, deleted = false): void {
    const key = `${task.metadata.namespace}/${task.metadata.name}`;
    if (!this.#fresh(`Task/${key}`, rv(task))) return;
    if (deleted || !holdsReservation(task)) {
      this.release(key);
      return;
    }
    if (this.#reservations.has(key)) return;
    const cluster = clusterOf(task.metadata.namespace);
    if (!cluster) return;
    const view = this.#view(cluster);
    if (!view) return;
    let wanted: ReturnType<typeof placementTask>;
    try {
      wanted = placementTask({ name: task.spec.task ?? task.metadata.name, ...task.spec });
    } catch {
      return;
    }
    // Counted as if it went where placement would put it, online or not.
    const result = placeJob({
      tasks: [{ ...wanted, clusterSelector: undefined }],
      clusters: [{ ...view, online: true }],
    });
    if (result.placed && result.tasks[0]) this.reserve(key, result.tasks[0]);
  }

  /** Holds `placement`'s request on its nodes under `key` (a Task's namespace/name, or a plan's key). */
  reserve(key: string, placement: TaskPlacement, group?: string): void {
    this.release(key);
    const reservation: Reservation = { cluster: placement.cluster, nodes: [] };
    this.#group(key, reservation, group);
    const nodes = this.#nodes.get(placement.cluster);
    for (const assignment of placement.nodes) {
      const state = nodes?.get(assignment.node);
      if (!state) continue;
      const amounts = scaled(placement.request, assignment);
      state.reserved.set(key, amounts);
      addInto(state.reservedTotal, amounts, 1);
      state.view = undefined;
      reservation.nodes.push({ node: assignment.node, amounts });
    }
    this.#reservations.set(key, reservation);
    this.#dirty(placement.cluster);
  }

  release(key: string): void {
    const reservation = this.#reservations.get(key);
    if (!reservation) return;
    this.#reservations.delete(key);
    this.#ungroup(key, reservation);
    delete reservation.group;
    const nodes = this.#nodes.get(reservation.cluster);
    for (const { node } of reservation.nodes) {
      const state = nodes?.get(node);
      if (!state) continue;
      const amounts = state.reserved.get(key);
      if (amounts) addInto(state.reservedTotal, amounts, -1);
      state.reserved.delete(key);
      state.view = undefined;
    }
    this.#dirty(reservation.cluster);
  }

  /** Releases every reservation made with `group`. */
  releaseGroup(group: string): void {
    const keys = this.#groups.get(group);
    if (!keys) return;
    for (const key of [...keys]) this.release(key);
  }

  #group(key: string, reservation: Reservation, group: string | undefined): void {
    if (group === undefined) return;
    reservation.group = group;
    let keys = this.#groups.get(group);
    if (!keys) {
      keys = new Set();
      this.#groups.set(group, keys);
    }
    keys.add(key);
  }

  #ungroup(key: string, reservation: Reservation): void {
    if (reservation.group === undefined) return;
    const keys = this.#groups.get(reservation.group);
    keys?.delete(key);
    if (keys?.size === 0) this.#groups.delete(reservation.group);
  }

  /** Moves a reservation to another key (a plan becoming its Task) without a moment unreserved. */
  rekey(from: string, to: string, group?: string): void {
    const reservation = this.#reservations.get(from);
    if (!reservation || from === to) return;
    this.release(to);
    this.#reservations.delete(from);
    // The new key joins `group`, or stands on its own (a Task's room is released by its own events).
    this.#ungroup(from, reservation);
    delete reservation.group;
    this.#group(to, reservation, group);
    this.#reservations.set(to, reservation);
    const nodes = this.#nodes.get(reservation.cluster);
    for (const { node, amounts } of reservation.nodes) {
      const state = nodes?.get(node);
      if (!state) continue;
      state.reserved.delete(from);
      state.reserved.set(to, amounts);
    }
  }

  /** The nodes a reservation holds room on, sorted (none when `key` holds nothing). */
  reservedNodes(key: string): string[] {
    return (this.#reservations.get(key)?.nodes ?? []).map((n) => n.node).sort();
  }

  isReserved(key: string): boolean {
    return this.#reservations.has(key);
  }

  /** Every registered cluster with its nodes, sorted by name (shared: do not mutate). */
  clusters(): readonly ClusterView[] {
    if (!this.#sorted) {
      const names = [...this.#clusters.keys()].sort();
      this.#sorted = names.map((name) => this.#view(name)).filter((v): v is ClusterView => v !== undefined);
      this.#positions = new Map(this.#sorted.map((view, i) => [view.name, i]));
      this.#stale.clear();
    } else if (this.#stale.size > 0) {
      // A copy: a caller may still hold the array it was given (views are immutable).
      const sorted = this.#sorted.slice();
      for (const name of this.#stale) {
        const view = this.#view(name);
        const at = this.#positions.get(name);
        if (view && at !== undefined) sorted[at] = view;
      }
      this.#stale.clear();
      this.#sorted = sorted;
    }
    return this.#sorted;
  }

  #view(name: string): ClusterView | undefined {
    const cached = this.#views.get(name);
    if (cached) return cached;
    const cluster = this.#clusters.get(name)?.object;
    if (!cluster) return undefined;
    const states = [...(this.#nodes.get(name)?.values() ?? [])].sort((a, b) =>
      a.base.name < b.base.name ? -1 : a.base.name > b.base.name ? 1 : 0,
    );
    const view: ClusterView = {
      name,
      labels: cluster.metadata.labels ?? {},
      runtime: clusterRuntime(cluster),
      online: cluster.status?.phase === "Online",
      nodes: states.map(nodeView),
      rttMs: measuredRtts(cluster),
    };
    this.#views.set(name, view);
    return view;
  }

  #dirty(cluster: string): void {
    this.#views.delete(cluster);
    this.#stale.add(cluster);
  }

  /** A cluster came or went: the order itself changes. */
  #reorder(): void {
    this.#sorted = undefined;
  }
}

/**
 * The RTT figures as placement compares them, in 10 % steps: a figure that moves within a step
 * (every report moves them a little) wakes no waiting Job; one that crosses a maxRTT does.
 */
function rttBuckets(cluster: Cluster): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [target, ms] of measuredRtts(cluster))
    out[target] = Number.isFinite(ms) ? Math.round(Math.log(Math.max(ms, 0.001)) / Math.log(1.1)) : -1;
  return out;
}

function scaled(request: Amounts, assignment: NodeAssignment): Amounts {
  const out: Record<string, number> = {};
  for (const [name, value] of Object.entries(request)) out[name] = value * assignment.replicas;
  return out;
}

function nodeView(state: NodeState): NodeView {
  if (state.view) return state.view;
  const { unreserved, ...base } = state.base;
  const free: Record<string, number> = { ...unreserved };
  for (const name in state.reservedTotal) {
    if (name in free) free[name] = (free[name] as number) - (state.reservedTotal[name] as number);
  }
  state.view = { ...base, free };
  return state.view;
}

function addInto(total: Record<string, number>, amounts: Amounts, sign: 1 | -1): void {
  for (const name in amounts) total[name] = (total[name] ?? 0) + sign * (amounts[name] as number);
}
