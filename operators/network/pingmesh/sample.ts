// Which peers one node probes. Small clusters: every other node. Large ones: a topology-aware
// sample within the node's probe budget, so a failing rack or ToR shows up from every node:
// every rack first (a few peers each, round robin over racks), then more of each while the budget
// lasts. Peers whose rack is unknown form a group of their own, not a rack they were put in.
// Each node starts at its own offset (a hash of its name), so the sample differs between nodes
// and the whole cluster still covers every node.

import type { NodeTopology } from "./topology.ts";

export interface Peer {
  /** The Node's name: the pair's key. */
  name: string;
  /** Where a TCP connect reaches it: host and port. */
  host: string;
  port: number;
  topology: NodeTopology;
}

export interface SampleOptions {
  /** Peers probed per round at most: the node's probe budget. */
  budget: number;
  /** Peers per rack in the first pass over racks (default 2). */
  perRack?: number;
}

function hash(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** The peers `self` probes, in probe order. Deterministic for the same input. */
export function samplePeers(self: string, peers: readonly Peer[], options: SampleOptions): Peer[] {
  if (!Number.isInteger(options.budget) || options.budget < 1)
    throw new Error(`probe budget must be a positive integer, got ${options.budget}`);
  const others = peers
    .filter((p) => p.name !== self)
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  if (others.length <= options.budget) return others;
  // the group key: the rack, else the ToR; both unknown is a group of its own (\0 sorts first)
  const groups = new Map<string, Peer[]>();
  for (const peer of others) {
    const key = peer.topology.rack ?? peer.topology.tor ?? "\0unknown";
    groups.set(key, [...(groups.get(key) ?? []), peer]);
  }
  const offset = hash(self);
  const queues = [...groups.keys()].sort().map((key) => {
    const members = groups.get(key) as Peer[];
    const start = offset % members.length;
    return [...members.slice(start), ...members.slice(0, start)];
  });
  const rotate = offset % queues.length;
  const order = [...queues.slice(rotate), ...queues.slice(0, rotate)];
  const chosen: Peer[] = [];
  const perRack = options.perRack ?? 2;
  // first pass: up to perRack from every rack, one rack at a time round robin
  for (let round = 0; round < perRack; round++)
    for (const queue of order) {
      if (chosen.length >= options.budget) return chosen;
      const next = queue.shift();
      if (next) chosen.push(next);
    }
  // then the rest, still round robin, until the budget is spent
  while (chosen.length < options.budget) {
    let took = false;
    for (const queue of order) {
      if (chosen.length >= options.budget) break;
      const next = queue.shift();
      if (next) {
        chosen.push(next);
        took = true;
      }
    }
    if (!took) break;
  }
  return chosen;
}
