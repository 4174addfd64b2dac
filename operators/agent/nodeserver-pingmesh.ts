// The nodeservers' PingMesh (kubernetes runtime; docs/pingmesh.md#nodeservers): each node's
// nodeserver probes its AgentGroup's members and serves the figures on GET /pingmesh of its stats
// port, behind the stats token. The agent asks every node each interval, one request at a time,
// checks each answer, and merges them into Cluster status.pingMesh node pairs, with the topology
// of each end read from its Node's labels (a field no label gives stays absent: unknown). A node
// that does not answer keeps no figures of its own; the others' loss to it is what shows.

import type { PingMeshNodePair, PingMeshStatus } from "../api/index.ts";
import type { Clock } from "../lib/clock.ts";
import type { Logger } from "../lib/logger.ts";
import { getNodeserverJson } from "./nodeserver-stats.ts";

/** Pairs one nodeserver's answer may hold (its probe budget is at most 1024). */
const MAX_PAIRS_PER_NODE = 1024;
const NODE_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null;
const isMs = (v: unknown) => v === undefined || (typeof v === "number" && Number.isFinite(v) && v >= 0);

/** The body of GET /pingmesh, checked: its source node and a pair per probed member. */
export function parseNodePingMesh(body: unknown, where: string): PingMeshNodePair[] {
  if (!isObject(body) || typeof body.source !== "string" || !NODE_NAME.test(body.source))
    throw new Error(`${where}: the body needs source, a node name`);
  const source = body.source;
  if (!Array.isArray(body.pairs) || body.pairs.length > MAX_PAIRS_PER_NODE)
    throw new Error(`${where}: pairs must be a list of at most ${MAX_PAIRS_PER_NODE}`);
  return body.pairs.map((p, i): PingMeshNodePair => {
    const field = `${where}: pairs[${i}]`;
    if (!isObject(p) || typeof p.target !== "string" || !NODE_NAME.test(p.target))
      throw new Error(`${field}.target must be a node name`);
    const f = p.figures;
    if (
      !isObject(f) ||
      !(Number.isInteger(f.samples) && (f.samples as number) >= 0) ||
      typeof f.loss !== "number" ||
      !(f.loss >= 0 && f.loss <= 1)
    )
      throw new Error(`${field}.figures needs samples (a count) and loss (0 to 1)`);
    for (const key of ["p50Ms", "p99Ms", "jitterMs"] as const)
      if (!isMs(f[key])) throw new Error(`${field}.figures.${key} must be a non-negative number of ms`);
    return {
      source,
      target: p.target,
      figures: {
        samples: f.samples as number,
        loss: f.loss,
        ...(f.p50Ms === undefined ? {} : { p50Ms: f.p50Ms as number }),
        ...(f.p99Ms === undefined ? {} : { p99Ms: f.p99Ms as number }),
        ...(f.jitterMs === undefined ? {} : { jitterMs: f.jitterMs as number }),
      },
    };
  });
}

export interface NodePingMeshPollerOptions {
  /** The nodes as the runtime sees them now: name, labels, the address to ask. */
  nodes(): readonly { name: string; labels: Record<string, string>; host: string | undefined }[];
  /** A node's topology from its labels (the cli passes network/pingmesh's topologyFromLabels). */
  topology(labels: Record<string, string>): Record<string, string>;
  port: number;
  token: string;
  intervalMs: number;
  timeoutMs?: number;
  clock: Clock;
  logger: Logger;
  onChange(): void;
}

export class NodePingMeshPoller {
  readonly #options: NodePingMeshPollerOptions;
  #pairs: PingMeshNodePair[] = [];
  #observedAt = 0;
  #timer: ReturnType<Clock["setTimeout"]> | undefined;
  #stopped = false;
  readonly #failing = new Set<string>();

  constructor(options: NodePingMeshPollerOptions) {
    this.#options = options;
  }

  start(): void {
    void this.#poll();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer) this.#options.clock.clearTimeout(this.#timer);
  }

  /** Cluster status.pingMesh from the nodeservers' last answers; undefined while none has pairs. */
  status(): PingMeshStatus | undefined {
    if (this.#pairs.length === 0) return undefined;
    const byName = new Map(this.#options.nodes().map((n) => [n.name, n]));
    const names = new Set(this.#pairs.flatMap((p) => [p.source, p.target]));
    return {
      observedAt: new Date(this.#observedAt).toISOString().replace(/\.\d{3}Z$/, "Z"),
      nodes: [...names].sort().map((name) => {
        const topology = this.#options.topology(byName.get(name)?.labels ?? {});
        return { name, ...(Object.keys(topology).length > 0 ? { topology } : {}) };
      }),
      nodePairs: this.#pairs,
    };
  }

  async #poll(): Promise<void> {
    const { port, token, clock, logger } = this.#options;
    const pairs: PingMeshNodePair[] = [];
    const nodes = [...this.#options.nodes()].sort((a, b) => (a.name < b.name ? -1 : 1));
    for (const node of nodes) {
      if (this.#stopped) return;
      if (!node.host) continue;
      const where = `GET /pingmesh of ${node.name} (${node.host}:${port})`;
      try {
        const body = await getNodeserverJson(
          { host: node.host, port, token },
          "/pingmesh",
          this.#options.timeoutMs ?? 2_000,
        );
        pairs.push(...parseNodePingMesh(body, where));
        this.#failing.delete(node.name);
      } catch (error) {
        // said once per node until it answers again: a node down is no news every interval
        if (!this.#failing.has(node.name))
          logger.warn("no PingMesh figures from a nodeserver", { error: (error as Error).message });
        this.#failing.add(node.name);
      }
    }
    pairs.sort((a, b) =>
      a.source === b.source ? (a.target < b.target ? -1 : 1) : a.source < b.source ? -1 : 1,
    );
    const bounded = pairs.slice(0, 16_384);
    this.#observedAt = clock.now();
    if (JSON.stringify(bounded) !== JSON.stringify(this.#pairs)) {
      this.#pairs = bounded;
      this.#options.onChange();
    }
    if (!this.#stopped) this.#timer = clock.setTimeout(() => void this.#poll(), this.#options.intervalMs);
  }
}
