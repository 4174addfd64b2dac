// Connections from a nodeserver to the hub's domain relay: mutual TLS with its cluster's
// certificate for the Domain, HTTP/2 inside (lib/relay/protocol.ts). A HubConnection carries the streams this node
// sends out and is what the pool holds; acceptFromHub keeps the reverse link the hub opens
// streams on. A stream's bytes go on their own connection, mutual TLS end to end between the
// two nodeservers, that the hub joins with the tickets it hands out on the streams; each end
// accepts only a certificate of the cluster the hub routed the stream to or from.

import { X509Certificate } from "node:crypto";
import http2, { type ClientHttp2Session, type Http2Stream, type ServerHttp2Stream } from "node:http2";
import net from "node:net";
import type { Duplex } from "node:stream";
import tls, { type PeerCertificate, type SecureContext, type TLSSocket } from "node:tls";
import type { Clock } from "../lib/clock.ts";
import {
  type AcceptHello,
  ALPN_ACCEPT,
  ALPN_DIAL,
  PEER_CLUSTER_HEADER,
  PROBE_CLUSTERS_HEADER,
  PROBE_HEADER,
  REASON_HEADER,
  SOURCE_HEADER,
  TICKET_HEADER,
  TICKET_TTL_MS,
} from "../lib/relay/index.ts";
import type { PooledConnection } from "./pool.ts";
import { type KeepaliveOptions, keepSessionAlive, RELAY_KEEPALIVE } from "./session-keepalive.ts";

export interface HubLinkCredentials {
  address: string;
  caPem: string;
  certPem: string;
  keyPem: string;
}

function hostPort(address: string): { host: string; port: number } {
  const colon = address.lastIndexOf(":");
  return { host: address.slice(0, colon), port: Number(address.slice(colon + 1)) };
}

/** Sessions kept to resume end-to-end TLS with, at most (by target address). */
const MAX_SESSIONS = 1024;

/**
 * End-to-end TLS between the nodeservers of one Domain: each accepts only a certificate of role
 * `domain` for its own Domain, signed by the hub CA, for the cluster the hub named as the other
 * end (the target's, where the Domain's allocations place it; the source's, whose pod the hub
 * checked). One per credentials: the server context (its session-ticket keys are what lets a peer
 * resume instead of a full handshake) and the sessions this node resumes, by target cluster and
 * address (a resumed session is checked by who could resume it: the server verified before).
 */
class EndToEnd {
  readonly domain: string;
  readonly context: SecureContext;
  readonly #creds: HubLinkCredentials;
  readonly #sessions = new Map<string, Buffer>();

  constructor(creds: HubLinkCredentials) {
    this.#creds = creds;
    const cn = new X509Certificate(creds.certPem).subject.split("\n").find((l) => l.startsWith("CN="));
    this.domain = cn?.slice(3) ?? "";
    this.context = tls.createSecureContext({
      key: creds.keyPem,
      cert: creds.certPem,
      ca: creds.caPem,
      minVersion: "TLSv1.3",
      sessionIdContext: "rlark-domain",
    });
  }

  #refusal(cert: PeerCertificate | undefined, cluster: string): Error | undefined {
    if (cert?.subject?.O !== "domain" || cert.subject.CN !== this.domain)
      return new Error(`the peer's certificate is not Domain ${this.domain}'s`);
    if (cert.subject.OU !== cluster)
      return new Error(
        `the peer's certificate is for cluster ${cert.subject.OU ?? "(none)"}, the hub routed the stream to cluster ${cluster}`,
      );
    return undefined;
  }

  /**
   * The source's end: TLS client over `raw`, resolved once the target's nodeserver is verified;
   * `cut` destroys it before that.
   */
  connect(
    raw: net.Socket,
    target: string,
    cluster: string,
    cut: (destroy: () => void) => void,
  ): Promise<TLSSocket> {
    const key = `${cluster} ${target}`;
    const session = this.#sessions.get(key);
    return new Promise((resolve, reject) => {
      const socket = tls.connect({
        socket: raw,
        ca: this.#creds.caPem,
        cert: this.#creds.certPem,
        key: this.#creds.keyPem,
        minVersion: "TLSv1.3",
        servername: `${this.domain}.domain`,
        checkServerIdentity: (_host, cert) => this.#refusal(cert, cluster),
        ...(session ? { session } : {}),
      });
      socket.on("session", (next: Buffer) => {
        this.#sessions.delete(key);
        if (this.#sessions.size >= MAX_SESSIONS)
          this.#sessions.delete(this.#sessions.keys().next().value ?? "");
        this.#sessions.set(key, next);
      });
      socket.once("secureConnect", () => {
        socket.off("error", reject);
        resolve(socket);
      });
      socket.once("error", reject);
      socket.once("close", () => reject(new Error("closed before the handshake completed")));
      cut(() => socket.destroy(new Error("cut off before the handshake completed")));
    });
  }

  /** The target's end: TLS server over `raw`, resolved once the source's nodeserver is verified. */
  serve(raw: net.Socket, cluster: string): Promise<TLSSocket> {
    const socket = new tls.TLSSocket(raw, {
      isServer: true,
      secureContext: this.context,
      requestCert: true,
      rejectUnauthorized: true,
    });
    return new Promise((resolve, reject) => {
      socket.once("secure", () => {
        socket.off("error", reject);
        const refusal = this.#refusal(socket.getPeerCertificate(), cluster);
        if (refusal) {
          socket.destroy();
          reject(refusal);
        } else resolve(socket);
      });
      socket.once("error", reject);
      // The hub ends a join whose source never came: a server socket closed mid-handshake may
      // say nothing else.
      socket.once("close", () => reject(new Error("closed before the handshake completed")));
    });
  }
}

const endToEnd = new WeakMap<HubLinkCredentials, EndToEnd>();
function endToEndFor(creds: HubLinkCredentials): EndToEnd {
  let e = endToEnd.get(creds);
  if (!e) {
    e = new EndToEnd(creds);
    endToEnd.set(creds, e);
  }
  return e;
}

/** A plain connection to the relay port that has presented `ticket`: the hub joins it. */
function dialData(creds: HubLinkCredentials, ticket: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ ...hostPort(creds.address), noDelay: true });
    socket.setTimeout(TICKET_TTL_MS, () =>
      socket.destroy(new Error(`hub relay ${creds.address}: timed out`)),
    );
    socket.once("connect", () => {
      socket.setTimeout(0);
      socket.off("error", reject);
      socket.write(`${ticket}\n`);
      resolve(socket);
    });
    socket.once("error", reject);
  });
}

/** A stream's control stream lives as long as its data connection (the pool counts on it). */
function tie(data: Duplex, control: Http2Stream): void {
  data.once("close", () => {
    if (!control.destroyed) control.close();
  });
}

/** A TLS socket to the hub whose certificate the hub CA signed with role `hub`. */
export function dialHub(creds: HubLinkCredentials, alpn: string, timeoutMs = 10_000): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({
      ...hostPort(creds.address),
      ca: creds.caPem,
      cert: creds.certPem,
      key: creds.keyPem,
      ALPNProtocols: [alpn],
      minVersion: "TLSv1.3",
      // The hub is known by its CA-signed role, not by a DNS name: agents reach it by any address.
      checkServerIdentity: (_host, cert) =>
        cert.subject?.O === "hub" ? undefined : new Error("the relay's certificate is not of role hub"),
    });
    const timer = setTimeout(
      () => socket.destroy(new Error(`hub relay ${creds.address}: timed out`)),
      timeoutMs,
    );
    socket.once("secureConnect", () => {
      clearTimeout(timer);
      if (socket.alpnProtocol !== alpn) {
        socket.destroy();
        reject(new Error(`hub relay ${creds.address} does not speak ${alpn}`));
        return;
      }
      socket.setNoDelay(true);
      resolve(socket);
    });
    socket.once("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

export class RefusedError extends Error {
  readonly status: number;
  constructor(status: number, reason: string) {
    super(reason);
    this.status = status;
  }
}

/** One HTTP/2 session to the hub carrying this node's outgoing streams of one Domain. */
export class HubConnection implements PooledConnection {
  activeStreams = 0;
  lastActive: number;
  readonly #session: ClientHttp2Session;
  readonly #clock: Clock;
  readonly #creds: HubLinkCredentials;
  #closeCallbacks: (() => void)[] = [];

  private constructor(session: ClientHttp2Session, clock: Clock, creds: HubLinkCredentials) {
    this.#session = session;
    this.#clock = clock;
    this.#creds = creds;
    this.lastActive = clock.now();
    session.on("error", () => {});
    session.once("close", () => {
      for (const callback of this.#closeCallbacks.splice(0)) callback();
    });
  }

  static async dial(
    creds: HubLinkCredentials,
    clock: Clock,
    keepalive: KeepaliveOptions = RELAY_KEEPALIVE,
  ): Promise<HubConnection> {
    const socket = await dialHub(creds, ALPN_DIAL);
    const session = http2.connect(`https://${creds.address}`, {
      createConnection: () => socket,
    });
    await new Promise<void>((resolve, reject) => {
      session.once("connect", () => resolve());
      session.once("error", reject);
    });
    keepSessionAlive(session, keepalive);
    return new HubConnection(session, clock, creds);
  }

  get closed(): boolean {
    return this.#session.closed || this.#session.destroyed;
  }

  onClose(callback: () => void): void {
    if (this.closed) callback();
    else this.#closeCallbacks.push(callback);
  }

  close(): void {
    this.#session.destroy();
  }

  /** Touches lastActive: a plain field store, no lock, on the data path (seed 001 §4.5). */
  touch(): void {
    this.lastActive = this.#clock.now();
  }

  /** The hub's relay port, where data connections present their tickets. */
  get address(): string {
    return this.#creds.address;
  }

  /**
   * A CONNECT with `rlark-probe: <value>` (lib/relay PROBE_HEADER), closed at once: its answer's
   * headers and the time it took in ms; rejects on a refusal or after `timeoutMs`.
   */
  #probeRequest(
    value: string,
    timeoutMs: number,
  ): Promise<{ ms: number; headers: http2.IncomingHttpHeaders }> {
    const started = performance.now();
    const stream = this.#session.request(
      { ":method": "CONNECT", ":authority": "probe:1", [PROBE_HEADER]: value },
      { endStream: true },
    );
    this.touch();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        stream.close();
        reject(new Error(`no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      stream.once("response", (headers) => {
        clearTimeout(timer);
        const ms = performance.now() - started;
        const status = Number(headers[":status"]);
        stream.close();
        if (status === 200) resolve({ ms, headers });
        else reject(new RefusedError(status, String(headers[REASON_HEADER] ?? `status ${status}`)));
      });
      stream.once("error", (error) => {
        clearTimeout(timer);
        reject(error);
      });
      stream.once("close", () => {
        clearTimeout(timer);
        reject(new Error("the hub closed the stream"));
      });
      stream.resume();
    });
  }

  /** The Domain's other clusters the hub can reach now (each has a reverse link up). */
  async probeClusters(timeoutMs: number): Promise<string[]> {
    const { headers } = await this.#probeRequest("?", timeoutMs);
    const list = String(headers[PROBE_CLUSTERS_HEADER] ?? "");
    return list === "" ? [] : list.split(",").slice(0, 1024);
  }

  /** One probe of `cluster` through the hub to its nodeserver and back: the round trip in ms. */
  async probe(cluster: string, timeoutMs: number): Promise<number> {
    return (await this.#probeRequest(cluster, timeoutMs)).ms;
  }

  /**
   * Asks the hub for a stream to `target` (`ip:port`) for the pod `source`: resolves on its 200
   * with the ticket of this end's data connection and the target's cluster. The stream counts as
   * active until it closes, which is the caller's to do when its data connection ends.
   */
  async request(
    target: string,
    source: string,
  ): Promise<{ stream: Http2Stream; ticket: string; cluster: string }> {
    const stream = this.#session.request(
      { ":method": "CONNECT", ":authority": target, [SOURCE_HEADER]: source },
      { endStream: false },
    );
    this.activeStreams++;
    this.touch();
    stream.once("close", () => {
      this.activeStreams--;
      this.touch();
    });
    const { ticket, cluster } = await new Promise<{ ticket: string; cluster: string }>((resolve, reject) => {
      stream.once("response", (headers) => {
        const status = Number(headers[":status"]);
        const ticket = headers[TICKET_HEADER];
        const cluster = headers[PEER_CLUSTER_HEADER];
        if (status === 200 && typeof ticket === "string" && typeof cluster === "string")
          resolve({ ticket, cluster });
        else if (status === 200) {
          stream.destroy();
          reject(new RefusedError(502, "the hub did not name the target's cluster"));
        } else {
          stream.destroy();
          reject(new RefusedError(status, String(headers[REASON_HEADER] ?? `status ${status}`)));
        }
      });
      stream.once("error", (error) => reject(error));
      stream.once("close", () => reject(new Error("the hub closed the stream")));
    });
    return { stream, ticket, cluster };
  }

  /**
   * Opens a stream to `target` (`ip:port`) for the pod `source`: once the hub says 200, joins
   * its data connection and resolves with the end-to-end TLS socket to the target's nodeserver,
   * verified. The stream counts as active until that socket closes.
   */
  async open(target: string, source: string): Promise<TLSSocket> {
    const { stream, ticket, cluster } = await this.request(target, source);
    try {
      const raw = await dialData(this.#creds, ticket);
      // The hub closes the stream when the target's nodeserver does not take it: the handshake
      // waiting at the hub for the other end is then cut short.
      const notTaken = (why: string) =>
        new RefusedError(502, `the target's nodeserver did not take the connection (${why})`);
      if (stream.closed) {
        raw.destroy();
        throw notTaken("the hub closed the stream");
      }
      let refused = () => {};
      stream.once("close", () => refused());
      const data = await endToEndFor(this.#creds)
        .connect(raw, target, cluster, (destroy) => {
          refused = destroy;
        })
        .catch(async (error: Error) => {
          // The relay may cut the data connection before the hub's close of the stream arrives
          // (it resets the source as soon as the target's end goes): give the stream a moment to
          // say that the target refused, so the reason is the refusal and not the reset.
          if (!stream.closed) await closedWithin(stream, REFUSAL_GRACE_MS);
          throw stream.closed ? notTaken(error.message) : error;
        });
      refused = () => {};
      tie(data, stream);
      data.on("data", () => {
        this.lastActive = this.#clock.now();
      });
      return data;
    } catch (error) {
      stream.close();
      throw error;
    }
  }
}

/** A stream the hub opens to a pod of this node: accept it (after checking) or refuse it. */
export interface InboundStream {
  /** `<virtual ip>:<port>` of the pod, as the hub checked it. */
  readonly target: string;
  /** The sending pod's virtual IP, as the hub checked it. */
  readonly source: string;
  /** The sending pod's cluster, as the hub checked it: the only one end-to-end TLS accepts. */
  readonly sourceCluster: string;
  /**
   * Joins the stream's data connection, answers 200, and resolves with the end-to-end TLS
   * socket once the source's nodeserver is verified: nothing is written to it before.
   */
  accept(): Promise<TLSSocket>;
  refuse(status: number, reason: string): void;
  /**
   * For a data engine that runs the data connection itself (data-engine.ts): the ticket and the
   * relay port; `respond` answers 200 once that connection holds its ticket (false: the hub
   * closed the stream first); `close` ends the stream when the connection ends.
   */
  handOff(): {
    ticket: string;
    relay: string;
    respond(): boolean;
    close(): void;
    onClose(callback: () => void): void;
  };
}

/**
 * The reverse link of one Domain: a TLS socket to the hub that announces `hello` and then serves
 * HTTP/2, so the hub can open streams to this node's pods without any inbound port.
 * Resolves once the session is up; `onClose` runs when it goes.
 */
export async function acceptFromHub(
  creds: HubLinkCredentials,
  hello: AcceptHello,
  onStream: (stream: InboundStream) => void,
  keepalive: KeepaliveOptions = RELAY_KEEPALIVE,
): Promise<{ close(): void; closed: Promise<void> }> {
  const socket = await dialHub(creds, ALPN_ACCEPT);
  // HTTP/2 takes the socket over only once the hello is written: a write still in flight when
  // the session attaches trips an assertion in Node's http2 (is_write_in_progress).
  await new Promise<void>((resolve, reject) =>
    socket.write(`${JSON.stringify(hello)}\n`, (error) => (error ? reject(error) : resolve())),
  );
  const server = http2.createServer();
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  server.on("session", (session) => {
    session.on("error", () => {});
    // a cut link: the session destroyed takes the socket with it, and `closed` resolves
    keepSessionAlive(session, keepalive);
  });
  server.on("stream", (stream: ServerHttp2Stream, headers) => {
    stream.on("error", () => {});
    // a cluster probe: the answer is the measurement; no pod is touched, nothing is logged
    if (headers[PROBE_HEADER] === "1") {
      stream.respond({ ":status": 200 }, { endStream: true });
      return;
    }
    const ticket = String(headers[TICKET_HEADER] ?? "");
    const sourceCluster = String(headers[PEER_CLUSTER_HEADER] ?? "");
    onStream({
      target: String(headers[":authority"] ?? ""),
      source: String(headers[SOURCE_HEADER] ?? ""),
      sourceCluster,
      async accept() {
        const raw = await dialData(creds, ticket);
        if (stream.destroyed) {
          raw.destroy();
          throw new Error("the hub closed the stream");
        }
        stream.respond({ ":status": 200 });
        const data = await endToEndFor(creds)
          .serve(raw, sourceCluster)
          .catch((error: unknown) => {
            stream.close();
            throw error;
          });
        tie(data, stream);
        return data;
      },
      refuse(status, reason) {
        if (!stream.destroyed)
          stream.respond({ ":status": status, [REASON_HEADER]: reason }, { endStream: true });
      },
      handOff() {
        return {
          ticket,
          relay: creds.address,
          respond() {
            if (stream.destroyed || stream.closed) return false;
            stream.respond({ ":status": 200 });
            return true;
          },
          close() {
            if (!stream.destroyed) stream.close();
          },
          onClose(callback) {
            if (stream.closed || stream.destroyed) queueMicrotask(callback);
            else stream.once("close", callback);
          },
        };
      },
    });
  });
  server.emit("connection", socket);
  return { close: () => socket.destroy(), closed };
}

/** How long a broken data connection waits for the hub to say the target refused it. */
export const REFUSAL_GRACE_MS = 1000;

/** Resolves when `stream` closes, or after `ms` (whichever comes first). */
export function closedWithin(stream: Http2Stream, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref();
    stream.once("close", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
