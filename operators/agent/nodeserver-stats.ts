// The live figures of the Domain page: the agent reads its nodeservers' GET /stats (contract B:
// the process runtime's on its unix socket; the kubernetes runtime's on every node's InternalIP
// over TCP, with the bearer token it hands them in the peers state) and reports them, bounded, as
// each DomainPeer's status.traffic. The response is capped in size and checked field by field
// before anything of it is kept.
import { request } from "node:http";
import type { DomainPeerPair, DomainTraffic, PingMeshClusterPair } from "../api/index.ts";
import type { Clock } from "../lib/clock.ts";
import type { Logger } from "../lib/logger.ts";

/** Largest /stats body read: far more than 64 pairs of every Domain need. */
const MAX_STATS_BYTES = 4 * 1024 * 1024;
/** Pairs kept per Domain, the busiest first (the schema's maxItems). */
export const MAX_PAIRS = 64;

/** One Domain's figures as the nodeserver serves them. */
export interface NodeserverDomainStats {
  connections: { activeStreams: number }[];
  peers: DomainPeerPair[];
}

/** Where a nodeserver serves GET /stats: its unix socket, or a TCP address with the bearer token. */
export type StatsTarget = string | { host: string; port: number; token: string };

/** GET /stats of `target`; rejects on a non-200, an oversized or malformed body, or after `timeoutMs`. */
export async function readNodeserverStats(
  target: StatsTarget,
  timeoutMs = 5_000,
): Promise<Record<string, NodeserverDomainStats>> {
  return parseStats(await getNodeserverJson(target, "/stats", timeoutMs));
}

/**
 * GET `path` of a nodeserver (its socket, or TCP with the token): the body parsed as JSON; rejects
 * on a non-200, a body over 4 MiB, or after `timeoutMs`. The caller checks the shape.
 */
export function getNodeserverJson(target: StatsTarget, path: string, timeoutMs = 5_000): Promise<unknown> {
  const where =
    typeof target === "string"
      ? { socketPath: target }
      : { host: target.host, port: target.port, headers: { authorization: `Bearer ${target.token}` } };
  return new Promise((resolve, reject) => {
    const req = request({ ...where, path, method: "GET", timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_STATS_BYTES) {
          req.destroy(new Error(`GET ${path}: the body is larger than ${MAX_STATS_BYTES} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      res.on("end", () => {
        if (res.statusCode !== 200) return reject(new Error(`GET ${path}: HTTP ${res.statusCode}`));
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString("utf8")));
        } catch (err) {
          reject(new Error(`GET ${path}: not JSON: ${(err as Error).message}`));
        }
      });
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error(`GET ${path}: no answer within ${timeoutMs} ms`)));
    req.on("error", reject);
    req.end();
  });
}

const isCount = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** The body of GET /stats, checked; throws naming the Domain and field that is wrong. */
export function parseStats(body: unknown): Record<string, NodeserverDomainStats> {
  if (!isObject(body)) throw new Error("GET /stats: the body must be an object of Domains");
  const out: Record<string, NodeserverDomainStats> = {};
  for (const [domain, value] of Object.entries(body)) {
    const where = `GET /stats: Domain ${JSON.stringify(domain)}`;
    if (!isObject(value) || !Array.isArray(value.connections) || !Array.isArray(value.peers))
      throw new Error(`${where}: needs connections and peers lists`);
    const connections = value.connections.map((c, i) => {
      if (!isObject(c) || !isCount(c.activeStreams))
        throw new Error(`${where}: connections[${i}].activeStreams must be a count`);
      return { activeStreams: c.activeStreams };
    });
    const peers = value.peers.map((p, i): DomainPeerPair => {
      const field = `${where}: peers[${i}]`;
      if (!isObject(p)) throw new Error(`${field} must be an object`);
      for (const key of ["source", "target"] as const)
        if (typeof p[key] !== "string" || !IPV4.test(p[key]))
          throw new Error(`${field}.${key} must be an IPv4 address`);
      for (const key of ["activeStreams", "bytesSent", "bytesReceived"] as const)
        if (!isCount(p[key])) throw new Error(`${field}.${key} must be a count`);
      if (p.path !== undefined && p.path !== "local" && p.path !== "hub")
        throw new Error(`${field}.path must be local or hub`);
      return {
        source: p.source as string,
        target: p.target as string,
        activeStreams: p.activeStreams as number,
        bytesSent: p.bytesSent as number,
        bytesReceived: p.bytesReceived as number,
        ...(p.path ? { path: p.path as "local" | "hub" } : {}),
      };
    });
    out[domain] = { connections, peers };
  }
  return out;
}

/** Clusters a nodeserver's GET /cluster_probes may name (the schema's clusterPairs bound). */
const MAX_PROBED_CLUSTERS = 1024;
const CLUSTER_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const isMs = (v: unknown) => v === undefined || (typeof v === "number" && Number.isFinite(v) && v >= 0);

/** The body of GET /cluster_probes, checked: this node's figures to each other cluster. */
export function parseClusterProbes(body: unknown): PingMeshClusterPair[] {
  const where = "GET /cluster_probes";
  if (!isObject(body) || !Array.isArray(body.clusters) || body.clusters.length > MAX_PROBED_CLUSTERS)
    throw new Error(`${where}: the body must be {clusters: [...]} of at most ${MAX_PROBED_CLUSTERS}`);
  return body.clusters.map((c, i): PingMeshClusterPair => {
    const field = `${where}: clusters[${i}]`;
    if (!isObject(c) || typeof c.target !== "string" || !CLUSTER_NAME.test(c.target))
      throw new Error(`${field}.target must be a cluster name`);
    const f = c.figures;
    if (!isObject(f) || !isCount(f.samples) || typeof f.loss !== "number" || !(f.loss >= 0 && f.loss <= 1))
      throw new Error(`${field}.figures needs samples (a count) and loss (0 to 1)`);
    for (const key of ["p50Ms", "p99Ms", "jitterMs"] as const)
      if (!isMs(f[key])) throw new Error(`${field}.figures.${key} must be a non-negative number of ms`);
    return {
      target: c.target,
      figures: {
        samples: f.samples,
        loss: f.loss,
        ...(f.p50Ms === undefined ? {} : { p50Ms: f.p50Ms as number }),
        ...(f.p99Ms === undefined ? {} : { p99Ms: f.p99Ms as number }),
        ...(f.jitterMs === undefined ? {} : { jitterMs: f.jitterMs as number }),
      },
    };
  });
}

/** One Domain's status.traffic from the figures of every nodeserver read: summed, then bounded. */
export function domainTraffic(stats: readonly NodeserverDomainStats[], observedAt: string): DomainTraffic {
  const pairs = new Map<string, DomainPeerPair>();
  let poolConnections = 0;
  for (const s of stats) {
    poolConnections += s.connections.length;
    for (const p of s.peers) {
      const key = `${p.source}>${p.target}`;
      const had = pairs.get(key);
      pairs.set(
        key,
        had
          ? {
              ...had,
              activeStreams: had.activeStreams + p.activeStreams,
              bytesSent: had.bytesSent + p.bytesSent,
              bytesReceived: had.bytesReceived + p.bytesReceived,
            }
          : { ...p },
      );
    }
  }
  const busiest = [...pairs.values()].sort(
    (a, b) =>
      b.activeStreams - a.activeStreams ||
      b.bytesSent + b.bytesReceived - (a.bytesSent + a.bytesReceived) ||
      (a.source + a.target < b.source + b.target ? -1 : 1),
  );
  return {
    observedAt,
    poolConnections,
    pairs: busiest.slice(0, MAX_PAIRS),
    ...(busiest.length > MAX_PAIRS ? { omittedPairs: busiest.length - MAX_PAIRS } : {}),
  };
}

export interface StatsPollerOptions {
  /** The nodeservers' unix sockets (the process runtime: its one local nodeserver). */
  sockets: readonly string[];
  /** Nodeservers over TCP (the kubernetes runtime: one per node, at the nodes' addresses now). */
  http?: { port: number; token: string; hosts(): readonly string[] };
  intervalMs: number;
  clock: Clock;
  logger: Logger;
  /** After each poll that changed the figures. */
  onChange: () => void;
}

/**
 * Reads every socket's /stats each interval and keeps the latest traffic per Domain. A socket
 * that does not answer counts as no traffic, logged once until it answers again.
 */
export class StatsPoller {
  readonly #options: StatsPollerOptions;
  #traffic = new Map<string, DomainTraffic>();
  #clusterPairs: PingMeshClusterPair[] = [];
  #failing = new Set<string>();
  #timer: ReturnType<Clock["setTimeout"]> | undefined;
  #stopped = false;

  constructor(options: StatsPollerOptions) {
    this.#options = options;
  }

  /** The latest figures of `domain`, if a nodeserver reported it. */
  traffic(domain: string): DomainTraffic | undefined {
    return this.#traffic.get(domain);
  }

  /**
   * This cluster's figures to each other cluster (PingMesh between clusters): of the nodes that
   * probed one, the figures with the most samples; sorted by target.
   */
  clusterPairs(): PingMeshClusterPair[] {
    return this.#clusterPairs;
  }

  start(): void {
    void this.#poll();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer) this.#options.clock.clearTimeout(this.#timer);
  }

  async #poll(): Promise<void> {
    const { sockets, http, logger, clock } = this.#options;
    const byDomain = new Map<string, NodeserverDomainStats[]>();
    const targets: [string, StatsTarget][] = [
      ...sockets.map((s): [string, StatsTarget] => [s, s]),
      ...(http?.hosts() ?? []).map((host): [string, StatsTarget] => [
        `${host}:${http?.port}`,
        { host, port: http?.port ?? 0, token: http?.token ?? "" },
      ]),
    ];
    // all at once: one node that does not answer does not hold the others' figures back
    const [answers, probes] = await Promise.all([
      Promise.allSettled(targets.map(([, target]) => readNodeserverStats(target))),
      Promise.allSettled(
        targets.map(async ([, target]) =>
          parseClusterProbes(await getNodeserverJson(target, "/cluster_probes")),
        ),
      ),
    ]);
    const best = new Map<string, PingMeshClusterPair>();
    for (const answer of probes)
      if (answer.status === "fulfilled")
        for (const pair of answer.value)
          if ((best.get(pair.target)?.figures.samples ?? -1) < pair.figures.samples)
            best.set(pair.target, pair);
    const clusterPairs = [...best.values()].sort((a, b) => (a.target < b.target ? -1 : 1));
    const pairsChanged = JSON.stringify(clusterPairs) !== JSON.stringify(this.#clusterPairs);
    this.#clusterPairs = clusterPairs;
    answers.forEach((answer, i) => {
      const name = targets[i]?.[0] ?? "";
      if (answer.status === "fulfilled") {
        if (this.#failing.delete(name))
          logger.info("the nodeserver answers /stats again", { nodeserver: name });
        for (const [domain, s] of Object.entries(answer.value))
          byDomain.set(domain, [...(byDomain.get(domain) ?? []), s]);
      } else {
        if (!this.#failing.has(name))
          logger.warn("could not read the nodeserver's /stats", {
            nodeserver: name,
            error: (answer.reason as Error).message,
          });
        this.#failing.add(name);
      }
    });
    const observedAt = new Date(clock.now()).toISOString().replace(/\.\d{3}Z$/, "Z");
    const next = new Map([...byDomain].map(([domain, stats]) => [domain, domainTraffic(stats, observedAt)]));
    // unchanged figures keep their time: the hub is not written to for a new timestamp alone
    if (JSON.stringify(stripTimes(next)) !== JSON.stringify(stripTimes(this.#traffic))) {
      this.#traffic = next;
      this.#options.onChange();
    } else if (pairsChanged) this.#options.onChange();
    if (!this.#stopped) this.#timer = clock.setTimeout(() => void this.#poll(), this.#options.intervalMs);
  }
}

const stripTimes = (m: ReadonlyMap<string, DomainTraffic>) =>
  [...m].map(([domain, { observedAt: _at, ...rest }]) => [domain, rest]);
