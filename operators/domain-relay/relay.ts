// The hub's domain relay (docs/networking.md, ADR 0007): a mutual-TLS port where nodeservers
// present their cluster's certificate for a Domain (role `domain`, CN the Domain, OU the cluster,
// signed by the hub CA). The certificate alone says which cluster a nodeserver speaks for: a
// reverse link's hello must name that cluster, and a stream's source must be a pod of it (Domain
// status.ipAllocations and the cluster's DomainPeer). A nodeserver's CONNECT stream to a virtual
// IP is forwarded, after checkHostInDomain has placed the target in that Domain, on the reverse
// link of the target's cluster, each end told the other's cluster; when the
// target's nodeserver accepts, each end gets a single-use ticket, and the two plain TCP
// connections that present them on the same port are joined: the nodeservers' end-to-end TLS
// crosses the hub as ciphertext. Every refusal is logged (`domain relay refused`) and counted
// (rlark_domain_relay_refused_total). With `engine: "go"` the relay port and the joined bytes are
// `rlark-net relay`'s (go-engine.ts, ADR 0007's third decision): it hands this module every ticket
// line and every TLS connection, and the decisions stay here.

import { randomBytes, X509Certificate } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import http2, {
  type ClientHttp2Session,
  type ClientHttp2Stream,
  type Http2Session,
  type ServerHttp2Stream,
} from "node:http2";
import net, { type AddressInfo } from "node:net";
import { join } from "node:path";
import tls, { type TLSSocket } from "node:tls";
import { clusterOf, type DomainPeer, namespaceFor } from "../api/index.ts";
import type { Logger } from "../lib/logger.ts";
import type { Registry } from "../lib/metrics/index.ts";
import {
  type CertificateAuthority,
  generateKeyPair,
  publicKeyPem,
  writeFileAtomic,
} from "../lib/pki/index.ts";
import {
  type AcceptHello,
  ALPN_ACCEPT,
  ALPN_DIAL,
  isTicket,
  MAX_HELLO_BYTES,
  PEER_CLUSTER_HEADER,
  PROBE_CLUSTERS_HEADER,
  PROBE_HEADER,
  REASON_HEADER,
  SOURCE_HEADER,
  splice,
  splitTarget,
  TICKET_HEADER,
  TICKET_LINE_BYTES,
  TICKET_TTL_MS,
} from "../lib/relay/index.ts";
import { findRlarkNet } from "../lib/rlark-net-path.ts";
import type { Store } from "../lib/store/index.ts";
import { checkHostInDomain } from "./check-host.ts";
import { createGoEngine, type GoEngine } from "./go-engine.ts";

export interface DomainRelayOptions {
  store: Store;
  ca: CertificateAuthority;
  dataDir: string;
  registry: Registry;
  logger: Logger;
  /**
   * Who moves the bytes: `rlark-net relay` (`go`), found at `rlarkNet` (default:
   * lib/rlark-net-path.ts), or this process (`node`). Unset: go where rlark-net is found (an npm
   * install has none), else node, logged.
   */
  engine?: "node" | "go";
  rlarkNet?: string;
}

export interface DomainRelayStats {
  /**
   * Bytes forwarded (TLS records between nodeservers), both directions, since start. With the Go
   * engine it trails the wire by up to one report interval (500 ms): rlark-net reports moved bytes
   * on a tick, not per read.
   */
  relayedBytes: number;
  refused: number;
  streams: number;
  /** Joined data connections open now. */
  joined: number;
  /** Cluster probes forwarded since start. */
  probes: number;
  reverseLinks: { domain: string; globalNamespace: string; node?: string }[];
}

export interface DomainRelay {
  listen(port: number, host: string): Promise<number>;
  stats(): DomainRelayStats;
  /** With the Go engine: its running process and how often it was restarted. */
  goEngine(): { pid: number | undefined; restarts: number } | undefined;
  close(): Promise<void>;
}

const DAY = 24 * 60 * 60 * 1000;
/** Joins waiting for their tickets, at most: each holds sockets until TICKET_TTL_MS. */
const MAX_PENDING_JOINS = 4096;
/** How long a join that a reset broke waits for the other side to read what it was sent and end. */
const DRAIN_MS = 1000;
/** The TLS record type of a handshake: the first byte of every TLS connection. */
const TLS_HANDSHAKE = 0x16;

/** The relay's own key and a fresh `hub` certificate for it (re-issued on every start). */
function relayCredentials(ca: CertificateAuthority, dataDir: string): { key: string; cert: string } {
  const keyPath = join(dataDir, "pki", "relay.key");
  if (!existsSync(keyPath)) writeFileAtomic(keyPath, generateKeyPair().privateKeyPem, 0o600);
  const key = readFileSync(keyPath, "utf8");
  const cert = ca.issue({
    role: "hub",
    name: "domain-relay",
    publicKey: publicKeyPem(key),
    ttlMs: 365 * DAY,
  }).certPem;
  return { key, cert };
}

/** Who a control connection speaks for, by its certificate. */
interface Speaker {
  domain: string;
  /** The certificate's OU. */
  cluster: string;
}

interface ReverseLink {
  session: ClientHttp2Session;
  hello: AcceptHello;
}

/**
 * The two data connections of one stream, joined once both tickets are in. A side is its socket
 * here, or `true` once the Go engine holds it.
 */
interface Join {
  id: string;
  domain: string;
  sides: [net.Socket | true | undefined, net.Socket | true | undefined];
  /** Ends the join: its data connections and both control streams. */
  close(): void;
  /** Both sides are in: from now on the data connections say when the stream ends. */
  onJoined(): void;
  /** Counts bytes the join moved. */
  moved(n: number): void;
  /** The joined data connections ended. */
  ended(): void;
}

export function createDomainRelay(options: DomainRelayOptions): DomainRelay {
  const { store, ca, logger } = options;
  const refusedTotal = options.registry.counter({
    name: "rlark_domain_relay_refused_total",
    help: "Connections and streams the domain relay refused, by reason.",
    labelNames: ["reason"],
  });
  const bytesTotal = options.registry.counter({
    name: "rlark_domain_relay_bytes_total",
    help: "Bytes the domain relay forwarded between clusters, by Domain.",
    labelNames: ["domain"],
  });
  const counters = { relayedBytes: 0, refused: 0, streams: 0, joined: 0, probes: 0 };
  /** Reverse links by Domain, then by the agent namespace of their cluster. */
  const links = new Map<string, Map<string, ReverseLink[]>>();
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  };

  const refuse = (reason: string, fields: Record<string, unknown>) => {
    counters.refused++;
    refusedTotal.labels({ reason }).inc();
    logger.warn("domain relay refused", { reason, ...fields });
  };

  const creds = relayCredentials(ca, options.dataDir);
  const h2 = http2.createServer();
  // The Domain and cluster a session's certificate speaks for: emit("connection") creates the
  // session synchronously, so `connecting` names them while the "session" event runs.
  const speakerOf = new WeakMap<Http2Session, Speaker>();
  let connecting: Speaker | undefined;
  h2.on("session", (session) => {
    if (connecting) speakerOf.set(session, connecting);
    session.on("error", () => {});
  });
  h2.on("stream", (stream, headers) => {
    stream.on("error", () => {});
    const speaker = stream.session ? speakerOf.get(stream.session) : undefined;
    if (!speaker) {
      stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
      return;
    }
    const handle =
      headers[PROBE_HEADER] !== undefined
        ? probe(speaker, stream, String(headers[PROBE_HEADER] ?? ""))
        : forward(speaker, stream, String(headers[":authority"] ?? ""), String(headers[SOURCE_HEADER] ?? ""));
    void handle.catch((error: unknown) => {
      if (!stream.destroyed && !stream.headersSent)
        stream.respond({ ":status": 502, [REASON_HEADER]: String(error) }, { endStream: true });
    });
  });

  async function forward(
    { domain, cluster }: Speaker,
    stream: ServerHttp2Stream,
    target: string,
    source: string,
  ): Promise<void> {
    const deny = (status: number, reason: string, audit: string) => {
      refuse(audit, { domain, cluster, source, target });
      if (!stream.destroyed)
        stream.respond({ ":status": status, [REASON_HEADER]: reason }, { endStream: true });
    };
    const to = splitTarget(target);
    if (!to) return deny(403, "bad target", "bad-target");
    const [from, at, peer] = await Promise.all([
      checkHostInDomain(store, domain, source),
      checkHostInDomain(store, domain, to.ip),
      store.get<DomainPeer>("DomainPeer", namespaceFor(cluster), domain),
    ]);
    if (!from) return deny(403, `${source} is not a member of Domain ${domain}`, "source-not-in-domain");
    // The hub allocated the address to a pod of this cluster, and this cluster was told so.
    if (from.cluster !== cluster || !peer?.spec.pods?.some((p) => p.ip === source))
      return deny(
        403,
        `${source} is not a pod of cluster ${cluster} in Domain ${domain}`,
        "source-not-in-cluster",
      );
    if (!at?.cluster)
      return deny(403, `${to.ip} is not a member of Domain ${domain}`, "target-not-in-domain");
    const candidates = links.get(domain)?.get(namespaceFor(at.cluster)) ?? [];
    const link = candidates.find((l) => !l.session.closed && !l.session.destroyed);
    if (!link)
      return deny(503, `no nodeserver of cluster ${at.cluster} is connected`, "target-cluster-offline");
    if (joins.size >= MAX_PENDING_JOINS)
      return deny(503, "too many connections being set up", "too-many-pending");
    const tickets = [randomBytes(16).toString("hex"), randomBytes(16).toString("hex")] as const;
    const out = link.session.request(
      {
        ":method": "CONNECT",
        ":authority": target,
        [SOURCE_HEADER]: source,
        [PEER_CLUSTER_HEADER]: cluster,
        [TICKET_HEADER]: tickets[1],
      },
      { endStream: false },
    );
    out.on("error", () => {});
    // The source gets its ticket now, not after the target's answer: its connection and
    // handshake start while the target's nodeserver dials the pod, and wait at the hub for the
    // join. A target that does not take the stream closes it, which ends the join and the
    // source's stream (openJoin).
    openJoin(domain, tickets, stream, out);
    out.once("response", (headers) => {
      if (Number(headers[":status"]) !== 200) out.close();
    });
    stream.respond({ ":status": 200, [TICKET_HEADER]: tickets[0], [PEER_CLUSTER_HEADER]: at.cluster });
    counters.streams++;
  }

  /**
   * A cluster probe (PROBE_HEADER): `?` lists the Domain's other clusters with a live reverse
   * link; a cluster's name goes on that cluster's reverse link like a stream, and its answer comes
   * back as is. A reverse link for the Domain is taken only from a holder of that cluster's
   * certificate for it, so the target is a member of the Domain. No ticket, no join, no pod: the
   * round trip is the path's control round trip, which every connection between the two clusters
   * pays when it starts. Counted apart from streams.
   */
  async function probe(
    { domain, cluster }: Speaker,
    stream: ServerHttp2Stream,
    value: string,
  ): Promise<void> {
    const live = (l: ReverseLink) => !l.session.closed && !l.session.destroyed;
    if (value === "?") {
      const others = [...(links.get(domain) ?? [])]
        .filter(([namespace, list]) => namespace !== namespaceFor(cluster) && list.some(live))
        .map(([namespace]) => clusterOf(namespace))
        .filter((c): c is string => c !== undefined)
        .sort();
      if (!stream.destroyed)
        stream.respond({ ":status": 200, [PROBE_CLUSTERS_HEADER]: others.join(",") }, { endStream: true });
      return;
    }
    const link = (links.get(domain)?.get(namespaceFor(value)) ?? []).find(live);
    if (!link || value === cluster) {
      refuse("probe-target-offline", { domain, cluster, target: value });
      if (!stream.destroyed)
        stream.respond(
          {
            ":status": 503,
            [REASON_HEADER]: `no nodeserver of another cluster ${JSON.stringify(value).slice(0, 80)} is connected in Domain ${domain}`,
          },
          { endStream: true },
        );
      return;
    }
    const out = link.session.request(
      { ":method": "CONNECT", ":authority": "probe:1", [PROBE_HEADER]: "1", [PEER_CLUSTER_HEADER]: cluster },
      { endStream: true },
    );
    out.on("error", () => {});
    const timer = setTimeout(() => out.close(), TICKET_TTL_MS);
    timer.unref();
    out.once("close", () => {
      clearTimeout(timer);
      if (!stream.destroyed && !stream.headersSent)
        stream.respond(
          { ":status": 504, [REASON_HEADER]: "the target's nodeserver did not answer" },
          { endStream: true },
        );
    });
    out.once("response", (headers) => {
      clearTimeout(timer);
      if (!stream.destroyed && !stream.headersSent)
        stream.respond(
          { ":status": Number(headers[":status"]), [PEER_CLUSTER_HEADER]: value },
          { endStream: true },
        );
      out.close();
    });
    out.resume();
    counters.probes++;
  }

  /** Tickets of joins not yet complete: each names its join and its side (0 source, 1 target). */
  const joins = new Map<string, { join: Join; side: 0 | 1 }>();
  /** Every join until it closes, by id (the Go engine names them so). */
  const byId = new Map<string, Join>();

  function openJoin(
    domain: string,
    tickets: readonly [string, string],
    ...streams: (ServerHttp2Stream | ClientHttp2Stream)[]
  ): void {
    const forget = () => {
      for (const t of tickets) joins.delete(t);
      byId.delete(join.id);
    };
    const bytes = bytesTotal.labels({ domain });
    let joined = false;
    const join: Join = {
      id: randomBytes(8).toString("hex"),
      domain,
      sides: [undefined, undefined],
      close: () => {
        clearTimeout(timer);
        forget();
        for (const s of join.sides) if (s instanceof net.Socket) s.destroy();
        if (go && (join.sides[0] || join.sides[1])) go.cancel(join.id);
        for (const s of streams) if (!s.destroyed) s.close(http2.constants.NGHTTP2_CANCEL);
      },
      onJoined: () => {
        clearTimeout(timer);
        // A nodeserver closes its control stream once its own end is closed, maybe before the
        // hub has flushed its bytes to the other end.
        for (const s of streams) s.off("close", join.close);
        joined = true;
        counters.joined++;
      },
      moved: (n) => {
        counters.relayedBytes += n;
        bytes.inc(n);
      },
      ended: () => {
        if (joined) counters.joined--;
        joined = false;
        join.close();
      },
    };
    byId.set(join.id, join);
    const timer = setTimeout(() => {
      if (join.sides[0] && join.sides[1]) return;
      refuse("ticket-expired", { domain });
      join.close();
    }, TICKET_TTL_MS);
    timer.unref();
    // Either control stream gone before the join (a nodeserver, its session or the hub's link to
    // it died) ends it and spends both tickets.
    for (const s of streams) s.once("close", join.close);
    joins.set(tickets[0], { join, side: 0 });
    joins.set(tickets[1], { join, side: 1 });
  }

  /** The join and side a ticket line names, the ticket spent; else undefined, refused and counted. */
  function spend(ticket: string, remote: string | undefined): { join: Join; side: 0 | 1 } | undefined {
    const found = isTicket(ticket) ? joins.get(ticket) : undefined;
    if (!found) {
      refuse("ticket", { remote });
      return undefined;
    }
    // Single use: the ticket is spent whatever happens next.
    joins.delete(ticket);
    return found;
  }

  /** A plain connection on the relay port: one ticket line, then the bytes of a joined stream. */
  function acceptData(socket: net.Socket, first: Buffer): void {
    let buffered = first;
    const timer = setTimeout(() => {
      refuse("ticket-timeout", { remote: socket.remoteAddress });
      socket.destroy();
    }, TICKET_TTL_MS);
    const onLine = () => {
      const end = buffered.indexOf(10);
      if (end < 0) {
        if (buffered.length >= TICKET_LINE_BYTES) {
          clearTimeout(timer);
          refuse("ticket", { remote: socket.remoteAddress });
          socket.destroy();
        }
        return;
      }
      clearTimeout(timer);
      socket.off("data", onData);
      socket.pause();
      const found = spend(buffered.subarray(0, end).toString("latin1"), socket.remoteAddress);
      if (!found) {
        socket.destroy();
        return;
      }
      const rest = buffered.subarray(end + 1);
      if (rest.length > 0) socket.unshift(rest);
      const { join, side } = found;
      join.sides[side] = socket;
      socket.once("close", () => {
        if (!(join.sides[0] && join.sides[1])) join.close();
      });
      const [a, b] = join.sides;
      if (a instanceof net.Socket && b instanceof net.Socket) {
        join.onJoined();
        splice(a, b, (_fromSource, n) => join.moved(n), join.ended, { drainMs: DRAIN_MS });
      }
    };
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      onLine();
    };
    socket.on("data", onData);
    onLine();
  }

  function acceptLink(socket: TLSSocket, speaker: Speaker): void {
    const { domain, cluster } = speaker;
    let buffered = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf(10);
      if (end < 0) {
        if (buffered.length > MAX_HELLO_BYTES) socket.destroy();
        return;
      }
      socket.off("data", onData);
      socket.pause();
      let hello: AcceptHello;
      try {
        hello = JSON.parse(buffered.subarray(0, end).toString("utf8"));
        if (typeof hello.globalNamespace !== "string") throw new Error("no globalNamespace");
      } catch (error) {
        refuse("bad-hello", { domain, cluster, error: String(error) });
        socket.destroy();
        return;
      }
      if (hello.globalNamespace !== namespaceFor(cluster)) {
        refuse("cluster-mismatch", { domain, cluster, globalNamespace: hello.globalNamespace });
        socket.destroy();
        return;
      }
      void register(socket, domain, hello, buffered.subarray(end + 1));
    };
    socket.on("data", onData);
  }

  async function register(
    socket: TLSSocket,
    domain: string,
    hello: AcceptHello,
    rest: Buffer,
  ): Promise<void> {
    // Only a cluster the Domain has pods in (a DomainPeer there) may take the Domain's traffic.
    const peer = await store.get("DomainPeer", hello.globalNamespace, domain);
    if (!peer) {
      refuse("cluster-not-in-domain", { domain, globalNamespace: hello.globalNamespace });
      socket.destroy();
      return;
    }
    if (rest.length > 0) socket.unshift(rest);
    const session = http2.connect(`https://${domain}.domain`, {
      createConnection: () => socket,
    });
    session.on("error", () => {});
    const byCluster = links.get(domain) ?? new Map<string, ReverseLink[]>();
    links.set(domain, byCluster);
    const list = byCluster.get(hello.globalNamespace) ?? [];
    const link = { session, hello };
    // The newest link first: after a nodeserver restart its old link may linger until TCP notices.
    byCluster.set(hello.globalNamespace, [link, ...list]);
    session.once("close", () => {
      const now = (byCluster.get(hello.globalNamespace) ?? []).filter((l) => l !== link);
      if (now.length > 0) byCluster.set(hello.globalNamespace, now);
      else byCluster.delete(hello.globalNamespace);
    });
    logger.info("domain relay: reverse link up", { domain, ...hello });
  }

  const tlsServer = tls.createServer({
    key: creds.key,
    cert: creds.cert,
    ca: ca.certPem,
    requestCert: true,
    rejectUnauthorized: true,
    minVersion: "TLSv1.3",
    ALPNProtocols: [ALPN_DIAL, ALPN_ACCEPT],
  });
  tlsServer.on("tlsClientError", (error, socket) => {
    refuse("tls", { remote: remoteOf(socket), error: error.message });
  });
  tlsServer.on("secureConnection", (socket: TLSSocket) => {
    track(socket);
    socket.on("error", () => {});
    const raw = socket.getPeerCertificate(false)?.raw;
    let speaker: Speaker;
    try {
      if (!raw) throw new Error("no client certificate");
      const identity = ca.verify(new X509Certificate(raw).toString(), { role: "domain" });
      // One Domain key shared by every member cluster (hubs before per-cluster certificates):
      // it names no cluster, so it speaks for none.
      if (!identity.cluster)
        throw new Error(`certificate ${identity.serial} of Domain ${identity.name} names no cluster`);
      speaker = { domain: identity.name, cluster: identity.cluster };
    } catch (error) {
      refuse("certificate", { remote: remoteOf(socket), error: (error as Error).message });
      socket.destroy();
      return;
    }
    if (socket.alpnProtocol === ALPN_ACCEPT) return acceptLink(socket, speaker);
    connecting = speaker;
    h2.emit("connection", socket);
    connecting = undefined;
  });
  // The Go engine's TLS connections come over a unix socket: the address they came from is the line
  // before them, kept by the raw socket (node:tls keeps that as its TLSSocket's `_parent`).
  const forwardedFrom = new WeakMap<net.Socket, string>();
  const remoteOf = (socket: TLSSocket) =>
    socket.remoteAddress ?? forwardedFrom.get((socket as unknown as { _parent: net.Socket })._parent);

  const binary = options.rlarkNet ?? findRlarkNet() ?? "rlark-net";
  const engine = options.engine ?? (options.rlarkNet || findRlarkNet() ? "go" : "node");
  if (!options.engine && engine === "node")
    logger.warn(
      "domain relay: rlark-net not found (RLARK_NET_BIN, PATH): its bytes move in the hub's process",
    );
  const go: GoEngine | undefined =
    engine === "go"
      ? createGoEngine({
          binary,
          dataDir: options.dataDir,
          logger,
          handlers: {
            ticket(line, remote) {
              const found = spend(line, remote);
              if (!found) return undefined;
              const { join, side } = found;
              join.sides[side] = true;
              if (join.sides[0] && join.sides[1]) join.onJoined();
              return { pair: join.id, side };
            },
            timeout(remote) {
              refuse("ticket-timeout", { remote });
            },
            bytes(pair, n) {
              byId.get(pair)?.moved(n);
            },
            done(pair, n) {
              const join = byId.get(pair);
              join?.moved(n);
              join?.ended();
            },
            down() {
              // Every connection the process held went with it.
              for (const join of [...byId.values()]) if (join.sides[0] || join.sides[1]) join.ended();
            },
            tls(socket, remote) {
              track(socket);
              forwardedFrom.set(socket, remote);
              tlsServer.emit("connection", socket);
            },
          },
        })
      : undefined;

  // One port for both: a TLS handshake goes to the control plane, a ticket line to the data plane.
  const server = net.createServer({ noDelay: true }, (socket) => {
    track(socket);
    socket.on("error", () => {});
    // A connection that says nothing holds an fd: it gets as long as a ticket lives.
    socket.setTimeout(TICKET_TTL_MS, () => socket.destroy());
    socket.once("data", (first: Buffer) => {
      socket.setTimeout(0);
      if (first[0] !== TLS_HANDSHAKE) return acceptData(socket, first);
      socket.pause();
      socket.unshift(first);
      tlsServer.emit("connection", socket);
    });
  });

  return {
    listen(port, host) {
      if (go) return go.listen(port, host);
      return new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => resolve((server.address() as AddressInfo).port));
      });
    },
    stats() {
      const reverseLinks: DomainRelayStats["reverseLinks"] = [];
      for (const [domain, byCluster] of links)
        for (const [globalNamespace, list] of byCluster)
          for (const l of list)
            reverseLinks.push({ domain, globalNamespace, ...(l.hello.node ? { node: l.hello.node } : {}) });
      return { ...counters, reverseLinks };
    },
    goEngine() {
      return go ? { pid: go.pid, restarts: go.restarts } : undefined;
    },
    async close() {
      const closed = go ? go.close() : new Promise<void>((resolve) => server.close(() => resolve()));
      for (const { join } of [...joins.values()]) join.close();
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}
