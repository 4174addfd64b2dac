// The agent data link (docs/tunnel.md, ADR 0002 "agent data link"): bulk access streams (port
// forwards, SFTP) leave the agent's SSH tunnel for a TLS connection of their own, because two
// ssh2 hops in Node cap throughput at ~0.4x of OpenSSH. The hub asks for the stream on the
// authenticated tunnel as before, adding a single-use ticket (128-bit random, ~10 s, bound to the
// agent's cluster and to that one stream); the agent dials the data endpoint, checks that the
// TLS server is the hub it pinned (the certificate the tunnel's welcome proved), and only then
// sends the ticket, inside TLS, so a ticket never crosses the network in clear. The hub serves
// nothing on a connection before its ticket checks out, and keeps the unverified ones bounded in
// number and in time (a slow peer is dropped after the handshake/ticket deadline).
import { randomBytes, X509Certificate } from "node:crypto";
import type { AddressInfo } from "node:net";
import tls, { type TLSSocket } from "node:tls";
import { type Clock, systemClock, type TimerId } from "../clock.ts";
import { type Logger, silentLogger } from "../logger.ts";
import { coalesceWrites } from "./coalesce-writes.ts";
import { encodeLine, readLine } from "./ndjson.ts";

/** How long a ticket waits for its connection, and a connection for its ticket. */
export const DATA_LINK_TICKET_TTL_MS = 10_000;
/** The agent's dial (TCP + TLS) gives up after this and falls back to the SSH channel. */
export const DATA_LINK_DIAL_TIMEOUT_MS = 3_000;
/** `{"ticket":"<32 hex>","cluster":"<name>"}` and some slack. */
const TICKET_LINE_BYTES = 512;
/** Connections that have not yet shown a valid ticket, at most. */
const MAX_UNVERIFIED = 64;
/** Tickets issued and not yet claimed, at most (each is one stream being opened). */
const MAX_PENDING_TICKETS = 1024;

/** What the hub adds to a stream's header when the stream may use the data link. */
export interface DataLinkOffer {
  port: number;
  ticket: string;
}

export function parseDataLinkOffer(value: unknown): DataLinkOffer | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const { port, ticket } = value as { port?: unknown; ticket?: unknown };
  if (typeof port !== "number" || !Number.isInteger(port) || port <= 0 || port > 65535) return undefined;
  if (typeof ticket !== "string" || !/^[0-9a-f]{32}$/.test(ticket)) return undefined;
  return { port, ticket };
}

export interface DataLinkServerOptions {
  /** The hub's TLS key and certificate: its SSH host key and host certificate (role hub). */
  key: string;
  cert: string;
  clock?: Clock;
  logger?: Logger;
  ticketTtlMs?: number;
}

export interface DataLinkTicket {
  offer: DataLinkOffer;
  /** Resolves with the agent's verified connection; rejects when the ticket expires or is cancelled. */
  claimed: Promise<TLSSocket>;
  cancel(): void;
}

interface Pending {
  cluster: string;
  timer: TimerId;
  resolve(socket: TLSSocket): void;
  reject(error: Error): void;
}

export interface DataLinkStats {
  /** Connections closed for a missing, unknown, expired, reused or foreign ticket, or overload. */
  refused: number;
  claimed: number;
  pendingTickets: number;
  unverified: number;
}

/** The hub's data endpoint: a TLS listener where agents claim the tickets the hub issued. */
export class DataLinkServer {
  #options: DataLinkServerOptions;
  #clock: Clock;
  #log: Logger;
  #server: tls.Server;
  #pending = new Map<string, Pending>();
  #sockets = new Set<TLSSocket>();
  /** Accepted TCP connections open now, and those of them whose ticket checked out. */
  #open = 0;
  #verified = 0;
  #refused = 0;
  #claimed = 0;
  #port = 0;

  constructor(options: DataLinkServerOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#log = options.logger ?? silentLogger;
    const ttl = options.ticketTtlMs ?? DATA_LINK_TICKET_TTL_MS;
    this.#server = tls.createServer({
      key: options.key,
      cert: options.cert,
      minVersion: "TLSv1.3",
      handshakeTimeout: ttl,
    });
    this.#server.on("connection", (raw) => {
      // Overload: a flood of connections that never present a ticket must not grow state.
      if (this.#open - this.#verified >= MAX_UNVERIFIED) {
        this.#refused++;
        raw.destroy();
        return;
      }
      this.#open++;
      raw.once("close", () => this.#open--);
    });
    this.#server.on("tlsClientError", (_err, socket) => socket.destroy());
    this.#server.on("secureConnection", (socket) => this.#onSecure(socket, ttl));
  }

  get port(): number {
    return this.#port;
  }

  listen(port: number, host: string): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      this.#server.once("error", reject);
      this.#server.listen(port, host, () => {
        this.#server.off("error", reject);
        const address = this.#server.address() as AddressInfo;
        this.#port = address.port;
        resolve(address);
      });
    });
  }

  stats(): DataLinkStats {
    return {
      refused: this.#refused,
      claimed: this.#claimed,
      pendingTickets: this.#pending.size,
      unverified: this.#open - this.#verified,
    };
  }

  /** A fresh ticket for one stream to `cluster`'s agent, or undefined when too many are pending. */
  issue(cluster: string): DataLinkTicket | undefined {
    if (!this.#port || this.#pending.size >= MAX_PENDING_TICKETS) return undefined;
    const ticket = randomBytes(16).toString("hex");
    let cancel = () => {};
    let cancelled = false;
    const claimed = new Promise<TLSSocket>((resolve, reject) => {
      const timer = this.#clock.setTimeout(() => {
        this.#pending.delete(ticket);
        reject(new Error("the agent's data connection did not arrive in time"));
      }, this.#options.ticketTtlMs ?? DATA_LINK_TICKET_TTL_MS);
      this.#pending.set(ticket, { cluster, timer, resolve, reject });
      cancel = () => {
        cancelled = true;
        const entry = this.#pending.get(ticket);
        if (!entry) return;
        this.#clock.clearTimeout(entry.timer);
        this.#pending.delete(ticket);
        reject(new Error("the data link ticket was withdrawn"));
      };
    });
    // A connection claimed for a stream the hub gave up on (or an agent that claimed and then
    // answered without the link) is closed; a rejection nobody awaits is not unhandled.
    claimed.then(
      (socket) => {
        if (cancelled) socket.destroy();
      },
      () => {},
    );
    return { offer: { port: this.#port, ticket }, claimed, cancel };
  }

  async close(): Promise<void> {
    for (const ticket of [...this.#pending.keys()]) {
      const entry = this.#pending.get(ticket);
      if (!entry) continue;
      this.#clock.clearTimeout(entry.timer);
      this.#pending.delete(ticket);
      entry.reject(new Error("the hub is closing"));
    }
    for (const socket of this.#sockets) socket.destroy();
    if (!this.#server.listening) return;
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #onSecure(socket: TLSSocket, ttl: number): void {
    this.#sockets.add(socket);
    socket.once("close", () => this.#sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    const refuse = (reason: string) => {
      this.#refused++;
      this.#log.warn("agent data link refused", { reason, remote: socket.remoteAddress });
      socket.destroy();
    };
    const deadline = this.#clock.setTimeout(() => refuse("no ticket in time"), ttl);
    readLine(socket, TICKET_LINE_BYTES).then(
      (line) => {
        this.#clock.clearTimeout(deadline);
        if (socket.destroyed) return;
        let claim: { ticket?: unknown; cluster?: unknown };
        try {
          claim = JSON.parse(line) as { ticket?: unknown; cluster?: unknown };
        } catch {
          return refuse("the ticket line is not JSON");
        }
        const ticket = typeof claim?.ticket === "string" ? claim.ticket : "";
        const entry = this.#pending.get(ticket);
        // Unknown, expired and already used tickets look the same: none is in the map.
        if (!entry) return refuse("unknown, expired or used ticket");
        if (claim.cluster !== entry.cluster) return refuse("a ticket of another cluster");
        this.#pending.delete(ticket);
        this.#clock.clearTimeout(entry.timer);
        this.#claimed++;
        this.#verified++;
        socket.once("close", () => this.#verified--);
        // An SFTP client's requests and the agent's answers come as many small writes: one TLS
        // record and one syscall per tick instead of one each.
        socket.setNoDelay(true);
        coalesceWrites(socket);
        entry.resolve(socket);
      },
      (error: Error) => {
        this.#clock.clearTimeout(deadline);
        refuse(`reading the ticket: ${error.message}`);
      },
    );
  }
}

export interface DialDataLinkOptions {
  host: string;
  offer: DataLinkOffer;
  cluster: string;
  caCertPem: string;
  /** The hub certificate this agent verified in the tunnel's welcome: the only one accepted. */
  hubCertPem: string;
  timeoutMs?: number;
}

/** The agent's end: connects, proves the server is the pinned hub, presents the ticket. */
export function dialDataLink(options: DialDataLinkOptions): Promise<TLSSocket> {
  const pinned = new X509Certificate(options.hubCertPem).fingerprint256;
  const timeoutMs = options.timeoutMs ?? DATA_LINK_DIAL_TIMEOUT_MS;
  return new Promise((resolve, reject) => {
    const socket = tls.connect({
      host: options.host,
      port: options.offer.port,
      ca: options.caCertPem,
      minVersion: "TLSv1.3",
      // The hub certificate names no host the agent dialed; what matters is that it is exactly
      // the certificate the tunnel proved (chain to the CA checked by rejectUnauthorized).
      checkServerIdentity: (_host, cert) =>
        cert.fingerprint256 === pinned ? undefined : new Error("the data endpoint is not the pinned hub"),
    });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no data link within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.once("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.once("secureConnect", () => {
      clearTimeout(timer);
      socket.setNoDelay(true);
      coalesceWrites(socket);
      socket.write(encodeLine({ ticket: options.offer.ticket, cluster: options.cluster }));
      resolve(socket);
    });
  });
}
