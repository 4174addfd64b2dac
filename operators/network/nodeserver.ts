// The nodeserver (seed 001 §4.3-4.4): one per node. On `<socket dir>/nodeserver.sock` it serves
// the sidecars of the node's pods: GET /get_ip, GET /stats, and CONNECT <virtual ip>:<port> for
// each connection a pod opens into its Domain. A target in this cluster is dialled directly at
// <localIP>:5700 (its sidecar); any other address of the Domain goes through the hub's relay on
// the Domain's connection pool. For each Domain it also keeps a reverse link on which the hub
// opens the streams other clusters send to this cluster's pods. Between clusters the bytes go on
// end-to-end TLS between the two nodeservers, which the hub joins without decrypting.

import { chmodSync, readFileSync, rmSync } from "node:fs";
import http, { type IncomingMessage } from "node:http";
import net from "node:net";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import type { DomainPeerPod } from "../api/generated/domain-peer.ts";
import type { DomainPeersEntry, PeersState } from "../api/index.ts";
import { type Clock, systemClock, type TimerId } from "../lib/clock.ts";
import { type Logger, silentLogger } from "../lib/logger.ts";
import { splice, splitTarget } from "../lib/relay/index.ts";
import { type ClusterProbeFigures, ClusterProber, type ClusterProbeTarget } from "./cluster-probes.ts";
import type { DataEngine } from "./data-engine.ts";
import { fromHubInGo, toHubInGo } from "./go-streams.ts";
import {
  acceptFromHub,
  HubConnection,
  type HubLinkCredentials,
  type InboundStream,
  RefusedError,
} from "./hub-link.ts";
import {
  domainInboundKey,
  inboundPreamble,
  inboundTicket,
  type PodInboundKey,
  podInboundKey,
} from "./inbound-auth.ts";
import type { PairStats } from "./pair-stats.ts";
import { ConnectionPool, MAX_BACKOFF_MS, MIN_BACKOFF_MS } from "./pool.ts";
import { formatProxyHeader, type ProxyHeader } from "./proxy-header.ts";
import { refuse } from "./refuse.ts";

export const SOCKET_NAME = "nodeserver.sock";
export const INBOUND_PORT = 5700;
/** Header naming the pod (`<namespace>/<name>`) a sidecar speaks for. */
export const POD_HEADER = "rlark-pod";
/**
 * On CONNECT, `1`: the caller can dial a same-cluster target itself. On the answer: the target's
 * `<local ip>:<inbound port>` to dial, with a PROXY line, instead of a stream.
 */
export const DIRECT_HEADER = "rlark-direct";
/** With rlark-direct on the answer: the ticket (inbound-auth.ts) for the PROXY line with source port 0. */
export const TICKET_HEADER = "rlark-ticket";

export interface NodeserverOptions {
  socketDir: string;
  /** This node's name, announced to the hub with the reverse link. */
  node?: string;
  /** Idle time after which a pooled hub connection is closed. Default 24 h. */
  idleMs?: number;
  clock?: Clock;
  logger?: Logger;
  /** Port of the sidecars' inbound proxy. Default 5700. */
  inboundPort?: number;
  /**
   * Runs the end-to-end TLS between clusters and its copy (`rlark-net nodeserver-data`,
   * data-engine.ts); without it, or while it is down, this process does.
   */
  dataEngine?: DataEngine;
  /**
   * How often each other cluster of this node's Domains is probed through the hub's relay
   * (cluster-probes.ts); 0: never. Default 10 s.
   */
  clusterProbeIntervalMs?: number;
  /** A cluster probe unanswered this long is lost. Default 2 s. */
  clusterProbeTimeoutMs?: number;
}

export const DEFAULT_CLUSTER_PROBE_INTERVAL_MS = 10_000;
const DEFAULT_CLUSTER_PROBE_TIMEOUT_MS = 2_000;
const CLUSTER_PROBE_WINDOW = 64;

export interface DomainStats {
  connections: { activeStreams: number; lastActive: string }[];
  reverseLink: boolean;
  peers: ({ source: string; target: string } & PairStats)[];
}

export interface Nodeserver {
  socketPath: string;
  setState(state: PeersState): void;
  stats(): Record<string, DomainStats>;
  /** This node's probes of the other clusters of its Domains, by cluster. */
  clusterProbes(): ClusterProbeFigures[];
  close(): Promise<void>;
}

const MAX_PAIRS = 4096;

function ipInt(ip: string): number {
  return ip.split(".").reduce((n, o) => n * 256 + Number(o), 0);
}

function sameNetwork(a: string, b: string, prefixLen: number): boolean {
  const shift = 32 - prefixLen;
  return Math.floor(ipInt(a) / 2 ** shift) === Math.floor(ipInt(b) / 2 ** shift);
}

class DomainRuntime {
  entry: DomainPeersEntry;
  /** Mints the tickets of this Domain's pods' :5700 (inbound-auth.ts). */
  inboundKey: Buffer;
  /** Pod keys made so far (two HMACs and a hash each), until the entry changes. */
  #podKeys = new Map<string, PodInboundKey>();
  pool: ConnectionPool<HubConnection> | undefined;
  pairs = new Map<string, PairStats>();
  reverse: { close(): void } | undefined;
  reverseTimer: TimerId | undefined;
  #stopped = false;
  #credsKey: string;

  readonly owner: NodeserverImpl;

  constructor(entry: DomainPeersEntry, owner: NodeserverImpl) {
    this.owner = owner;
    this.entry = entry;
    this.inboundKey = domainInboundKey(entry.domain, entry.key);
    this.#credsKey = "";
  }

  update(entry: DomainPeersEntry, hub: PeersState["hub"]): void {
    this.entry = entry;
    this.inboundKey = domainInboundKey(entry.domain, entry.key);
    this.#podKeys.clear();
    const key = JSON.stringify([hub?.address, hub?.caPem, entry.cert, entry.key]);
    if (key === this.#credsKey) return;
    this.#credsKey = key;
    this.#teardown();
    if (!hub) return;
    const creds: HubLinkCredentials = { ...hub, certPem: entry.cert, keyPem: entry.key };
    this.owner.options.dataEngine?.setDomain(entry.domain, creds);
    const { clock } = this.owner;
    this.pool = new ConnectionPool({
      dial: () => HubConnection.dial(creds, clock),
      clock,
      ...(this.owner.options.idleMs !== undefined ? { idleMs: this.owner.options.idleMs } : {}),
    });
    this.#stopped = false;
    this.#runReverse(creds, 0);
  }

  #runReverse(creds: HubLinkCredentials, failures: number): void {
    if (this.#stopped) return;
    const { clock, logger } = this.owner;
    const retry = (n: number) => {
      const delay = Math.min(MAX_BACKOFF_MS, MIN_BACKOFF_MS * 2 ** Math.min(n, 16));
      this.reverseTimer = clock.setTimeout(() => this.#runReverse(creds, n + 1), n === 0 ? 0 : delay);
    };
    const hello = {
      globalNamespace: this.owner.state.globalNamespace,
      ...(this.owner.options.node ? { node: this.owner.options.node } : {}),
    };
    acceptFromHub(creds, hello, (stream) => this.owner.fromHub(this, stream)).then(
      (link) => {
        if (this.#stopped) return link.close();
        this.reverse = link;
        logger.info("reverse link to the hub up", { domain: this.entry.domain });
        void link.closed.then(() => {
          this.reverse = undefined;
          if (this.#stopped) return;
          logger.warn("reverse link to the hub lost", { domain: this.entry.domain });
          retry(0);
        });
      },
      (error: unknown) => {
        if (failures === 0)
          logger.warn("reverse link to the hub failed", { domain: this.entry.domain, error: String(error) });
        retry(Math.max(1, failures));
      },
    );
  }

  #teardown(): void {
    this.#stopped = true;
    if (this.reverseTimer) this.owner.clock.clearTimeout(this.reverseTimer);
    this.reverse?.close();
    this.reverse = undefined;
    this.pool?.close();
    this.pool = undefined;
  }

  close(): void {
    this.#teardown();
    this.owner.options.dataEngine?.forget(this.entry.domain);
  }

  pair(source: string, target: string, path: "local" | "hub"): PairStats {
    const key = `${source}>${target}`;
    let stats = this.pairs.get(key);
    if (!stats) {
      if (this.pairs.size >= MAX_PAIRS) {
        for (const [k, v] of this.pairs) if (v.activeStreams === 0) this.pairs.delete(k);
      }
      stats = { activeStreams: 0, directConnections: 0, bytesSent: 0, bytesReceived: 0, path };
      this.pairs.set(key, stats);
    }
    return stats;
  }

  isLocal(pod: DomainPeerPod): boolean {
    return pod.globalNamespace === undefined || pod.globalNamespace === this.owner.state.globalNamespace;
  }

  localPod(ip: string): DomainPeerPod | undefined {
    return this.entry.pods?.find((p) => p.ip === ip && this.isLocal(p));
  }

  podKey(pod: DomainPeerPod): PodInboundKey {
    const name = `${pod.namespace ?? ""}/${pod.name} ${pod.ip}`;
    let key = this.#podKeys.get(name);
    if (!key) {
      key = podInboundKey(this.inboundKey, pod);
      this.#podKeys.set(name, key);
    }
    return key;
  }
}

/**
 * Whether this host routes between its pods' links. Without it a direct dial is dropped unanswered
 * and waits out rlark-net's 10 s connect timeout before falling back; read per connection because
 * an administrator may turn it on or off while pods run.
 */
function hostForwards(): boolean {
  try {
    return readFileSync("/proc/sys/net/ipv4/ip_forward", "utf8").trim() === "1";
  } catch {
    return false;
  }
}

/** Connects to `pod`'s :5700 and sends the PROXY line with a ticket minted at connect time. */
function dialSidecar(
  pod: DomainPeerPod,
  port: number,
  header: ProxyHeader,
  podKey: PodInboundKey,
): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    if (!pod.localIP) {
      reject(new Error(`pod ${pod.name} has no local IP yet`));
      return;
    }
    const socket = net.connect({ host: pod.localIP, port, noDelay: true });
    socket.setTimeout(10_000, () => socket.destroy(new Error("connect timed out")));
    socket.once("connect", () => {
      socket.setTimeout(0);
      socket.write(inboundPreamble(podKey, header));
      resolve(socket);
    });
    socket.once("error", reject);
  });
}

class NodeserverImpl implements Nodeserver {
  state: PeersState = { globalNamespace: "", domains: [] };
  domains = new Map<string, DomainRuntime>();
  readonly clock: Clock;
  readonly logger: Logger;
  readonly socketPath: string;
  readonly server: http.Server;
  readonly #sockets = new Set<Duplex>();

  readonly options: NodeserverOptions;

  constructor(options: NodeserverOptions) {
    this.options = options;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.socketPath = join(options.socketDir, SOCKET_NAME);
    this.server = http.createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://nodeserver");
      const reply = (status: number, body: unknown) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(`${JSON.stringify(body)}\n`);
      };
      if (req.method === "GET" && url.pathname === "/get_ip") {
        const found = this.findPod(url.searchParams.get("pod") ?? "");
        if (!found)
          return reply(404, { error: `no pod ${url.searchParams.get("pod")} in any Domain on this node` });
        return reply(200, {
          ip: found.pod.ip,
          prefixLength: found.domain.entry.prefixLen,
          domain: found.domain.entry.domain,
        });
      }
      if (req.method === "GET" && url.pathname === "/inbound_key") {
        // The pod's own key, for its rlark-net to check the tickets on its :5700 (never logged).
        const found = this.findPod(url.searchParams.get("pod") ?? "");
        if (!found)
          return reply(404, { error: `no pod ${url.searchParams.get("pod")} in any Domain on this node` });
        return reply(200, { key: found.domain.podKey(found.pod).key.toString("hex") });
      }
      if (req.method === "GET" && url.pathname === "/stats") return reply(200, this.stats());
      if (req.method === "GET" && url.pathname === "/cluster_probes")
        return reply(200, { clusters: this.clusterProbes() });
      reply(404, {
        error:
          "not found: GET /get_ip?pod=<namespace>/<name>, GET /inbound_key?pod=<namespace>/<name>, GET /stats, GET /cluster_probes, CONNECT <ip>:<port>",
      });
    });
    this.server.on("connect", (req, socket, head) => this.fromSidecar(req, socket, head));
    const every = options.clusterProbeIntervalMs ?? DEFAULT_CLUSTER_PROBE_INTERVAL_MS;
    this.#prober =
      every > 0
        ? new ClusterProber({
            targets: () => this.#probeTargets(),
            intervalMs: every,
            windowSize: CLUSTER_PROBE_WINDOW,
            clock: this.clock,
          })
        : undefined;
  }

  readonly #prober: ClusterProber | undefined;

  clusterProbes(): ClusterProbeFigures[] {
    return this.#prober?.figures() ?? [];
  }

  startProbes(): void {
    this.#prober?.start();
  }

  /**
   * One target per other cluster of this node's Domains that the hub can reach, through the first
   * Domain (by name) whose hub connection names it, on a live pooled connection (or a new one).
   */
  async #probeTargets(): Promise<ClusterProbeTarget[]> {
    const timeoutMs = this.options.clusterProbeTimeoutMs ?? DEFAULT_CLUSTER_PROBE_TIMEOUT_MS;
    const targets = new Map<string, ClusterProbeTarget>();
    const domains = [...this.domains.values()].sort((a, b) => (a.entry.domain < b.entry.domain ? -1 : 1));
    let failure: unknown;
    for (const domain of domains) {
      const pool = domain.pool;
      if (!pool) continue;
      const connection = async () => pool.connections.find((c) => !c.closed) ?? (await pool.acquire());
      let clusters: string[];
      try {
        clusters = await (await connection()).probeClusters(timeoutMs);
      } catch (error) {
        failure = error;
        continue;
      }
      for (const cluster of clusters)
        if (!targets.has(cluster))
          targets.set(cluster, { cluster, run: async () => (await connection()).probe(cluster, timeoutMs) });
    }
    if (targets.size === 0 && failure) throw failure;
    return [...targets.values()];
  }

  async listen(): Promise<void> {
    rmSync(this.socketPath, { force: true });
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(this.socketPath, () => resolve());
    });
    // Sidecars run as uid 1337; the directory (a hostPath) is what limits who reaches the socket.
    chmodSync(this.socketPath, 0o666);
  }

  setState(state: PeersState): void {
    this.state = state;
    const names = new Set(state.domains.map((d) => d.domain));
    for (const [name, runtime] of this.domains) {
      if (!names.has(name)) {
        runtime.close();
        this.domains.delete(name);
      }
    }
    for (const entry of state.domains) {
      let runtime = this.domains.get(entry.domain);
      if (!runtime) {
        runtime = new DomainRuntime(entry, this);
        this.domains.set(entry.domain, runtime);
      }
      runtime.update(entry, state.hub);
    }
    this.logger.info("peers state applied", {
      domains: state.domains.map((d) => ({ domain: d.domain, pods: d.pods?.length ?? 0 })),
    });
  }

  findPod(key: string): { domain: DomainRuntime; pod: DomainPeerPod } | undefined {
    const slash = key.indexOf("/");
    const [namespace, name] = slash < 0 ? ["", key] : [key.slice(0, slash), key.slice(slash + 1)];
    for (const domain of this.domains.values()) {
      const pod = domain.entry.pods?.find(
        (p) => p.name === name && (p.namespace ?? "") === namespace && domain.isLocal(p),
      );
      if (pod) return { domain, pod };
    }
    return undefined;
  }

  stats(): Record<string, DomainStats> {
    const out: Record<string, DomainStats> = {};
    for (const [name, d] of this.domains) {
      out[name] = {
        connections: (d.pool?.connections ?? []).map((c) => ({
          activeStreams: c.activeStreams,
          lastActive: new Date(c.lastActive).toISOString(),
        })),
        reverseLink: d.reverse !== undefined,
        peers: [...d.pairs].map(([key, s]) => {
          const [source = "", target = ""] = key.split(">");
          return { source, target, ...s };
        }),
      };
    }
    return out;
  }

  #track(socket: Duplex): void {
    this.#sockets.add(socket);
    socket.once("close", () => this.#sockets.delete(socket));
  }

  async fromSidecar(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    this.#track(socket);
    socket.on("error", () => {});
    const podKey = String(req.headers[POD_HEADER] ?? "");
    const target = splitTarget(req.url ?? "");
    const found = this.findPod(podKey);
    if (!target) return refuse(socket, 403, `bad target ${JSON.stringify(req.url)}`);
    if (!found) return refuse(socket, 403, `pod ${JSON.stringify(podKey)} is in no Domain on this node`);
    const { domain, pod } = found;
    if (!sameNetwork(pod.ip, target.ip, domain.entry.prefixLen))
      return refuse(socket, 403, `${target.ip} is not in Domain ${domain.entry.domain}`);
    const local = domain.localPod(target.ip);
    const stats = domain.pair(pod.ip, target.ip, local ? "local" : "hub");
    if (local?.localIP && req.headers[DIRECT_HEADER] === "1" && hostForwards()) {
      // The pods reach each other: the caller dials the target's inbound port itself, with no
      // Node process between them (rlark-net falls back to a plain CONNECT if it cannot).
      stats.directConnections++;
      const line = formatProxyHeader({ src: pod.ip, dst: target.ip, srcPort: 0, dstPort: target.port });
      socket.resume();
      socket.end(
        `HTTP/1.1 200 Direct\r\n${DIRECT_HEADER}: ${local.localIP}:${this.options.inboundPort ?? INBOUND_PORT}\r\n${TICKET_HEADER}: ${inboundTicket(domain.podKey(local), line)}\r\nconnection: close\r\n\r\n`,
      );
      return;
    }
    const engine = this.options.dataEngine;
    if (!local && engine?.running)
      return toHubInGo(
        { engine, domain, logger: this.logger },
        pod,
        `${target.ip}:${target.port}`,
        socket as net.Socket,
        head,
        stats,
      );
    let upstream: Duplex;
    try {
      if (local) {
        upstream = await dialSidecar(
          local,
          this.options.inboundPort ?? INBOUND_PORT,
          { src: pod.ip, dst: target.ip, srcPort: 0, dstPort: target.port },
          domain.podKey(local),
        );
      } else {
        if (!domain.pool) return refuse(socket, 503, "no hub relay configured");
        const connection = await domain.pool.acquire();
        upstream = await connection.open(`${target.ip}:${target.port}`, pod.ip);
        const touch = () => connection.touch();
        upstream.on("data", touch);
        socket.on("data", touch);
      }
    } catch (error) {
      const status = error instanceof RefusedError ? error.status : 502;
      this.logger.warn("connection refused", {
        domain: domain.entry.domain,
        source: pod.ip,
        target: req.url,
        status,
        error: (error as Error).message,
      });
      return refuse(socket, status, (error as Error).message);
    }
    if (socket.destroyed) {
      upstream.destroy();
      return;
    }
    this.#track(upstream);
    socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    if (head.length > 0) upstream.write(head);
    stats.activeStreams++;
    splice(
      socket,
      upstream,
      (fromSidecar, n) => {
        if (fromSidecar) stats.bytesSent += n;
        else stats.bytesReceived += n;
      },
      () => stats.activeStreams--,
    );
  }

  async fromHub(domain: DomainRuntime, stream: InboundStream): Promise<void> {
    const { target, source } = stream;
    const parsed = splitTarget(target);
    const pod = parsed && domain.localPod(parsed.ip);
    if (!parsed || !pod) return stream.refuse(403, `${target} is no pod of ${domain.entry.domain} here`);
    if (!stream.sourceCluster) return stream.refuse(403, "the hub did not name the source's cluster");
    const engine = this.options.dataEngine;
    if (engine?.running)
      return fromHubInGo(
        { engine, domain, logger: this.logger },
        stream,
        pod,
        parsed.port,
        this.options.inboundPort ?? INBOUND_PORT,
      );
    let socket: net.Socket;
    try {
      socket = await dialSidecar(
        pod,
        this.options.inboundPort ?? INBOUND_PORT,
        { src: source, dst: parsed.ip, srcPort: 0, dstPort: parsed.port },
        domain.podKey(pod),
      );
    } catch (error) {
      return stream.refuse(502, (error as Error).message);
    }
    this.#track(socket);
    socket.on("error", () => {});
    let data: Duplex;
    try {
      data = await stream.accept();
    } catch (error) {
      socket.destroy();
      this.logger.warn("connection from the hub failed", {
        domain: domain.entry.domain,
        source,
        target,
        error: (error as Error).message,
      });
      return;
    }
    this.#track(data);
    const stats = domain.pair(source, parsed.ip, "hub");
    stats.activeStreams++;
    splice(
      data,
      socket,
      (fromHub, n) => {
        if (fromHub) stats.bytesReceived += n;
        else stats.bytesSent += n;
      },
      () => stats.activeStreams--,
    );
  }

  async close(): Promise<void> {
    this.#prober?.stop();
    for (const d of this.domains.values()) d.close();
    this.domains.clear();
    for (const s of this.#sockets) s.destroy();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
    rmSync(this.socketPath, { force: true });
  }
}

export async function startNodeserver(options: NodeserverOptions): Promise<Nodeserver> {
  const server = new NodeserverImpl(options);
  await server.listen();
  server.startProbes();
  return server;
}
