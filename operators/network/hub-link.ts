// Connections from a nodeserver to the hub's domain relay: mutual TLS with the Domain's
// certificate, HTTP/2 inside (lib/relay/protocol.ts). A HubConnection carries the streams this node
// sends out and is what the pool holds; acceptFromHub keeps the reverse link the hub opens
// streams on.

import http2, { type ClientHttp2Session, type ClientHttp2Stream, type ServerHttp2Stream } from "node:http2";
import tls, { type TLSSocket } from "node:tls";
import type { Clock } from "../lib/clock.ts";
import {
  type AcceptHello,
  ALPN_ACCEPT,
  ALPN_DIAL,
  clientSessionOptions,
  REASON_HEADER,
  SESSION_WINDOW,
  SOURCE_HEADER,
  serverSessionOptions,
} from "../lib/relay/index.ts";
import type { PooledConnection } from "./pool.ts";

export interface HubLinkCredentials {
  address: string;
  caPem: string;
  certPem: string;
  keyPem: string;
}

/** A TLS socket to the hub whose certificate the hub CA signed with role `hub`. */
export function dialHub(creds: HubLinkCredentials, alpn: string, timeoutMs = 10_000): Promise<TLSSocket> {
  const colon = creds.address.lastIndexOf(":");
  const host = creds.address.slice(0, colon);
  const port = Number(creds.address.slice(colon + 1));
  return new Promise((resolve, reject) => {
    const socket = tls.connect({
      host,
      port,
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
  #closeCallbacks: (() => void)[] = [];

  private constructor(session: ClientHttp2Session, clock: Clock) {
    this.#session = session;
    this.#clock = clock;
    this.lastActive = clock.now();
    session.on("error", () => {});
    session.once("close", () => {
      for (const callback of this.#closeCallbacks.splice(0)) callback();
    });
  }

  static async dial(creds: HubLinkCredentials, clock: Clock): Promise<HubConnection> {
    const socket = await dialHub(creds, ALPN_DIAL);
    const session = http2.connect(`https://${creds.address}`, {
      ...clientSessionOptions,
      createConnection: () => socket,
    });
    await new Promise<void>((resolve, reject) => {
      session.once("connect", () => resolve());
      session.once("error", reject);
    });
    session.setLocalWindowSize(SESSION_WINDOW);
    return new HubConnection(session, clock);
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

  /** Opens a stream to `target` (`ip:port`) for the pod `source`; resolves once the hub says 200. */
  open(target: string, source: string): Promise<ClientHttp2Stream> {
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
    stream.on("data", () => {
      this.lastActive = this.#clock.now();
    });
    return new Promise((resolve, reject) => {
      stream.once("response", (headers) => {
        const status = Number(headers[":status"]);
        if (status === 200) resolve(stream);
        else {
          stream.destroy();
          reject(new RefusedError(status, String(headers[REASON_HEADER] ?? `status ${status}`)));
        }
      });
      stream.once("error", (error) => reject(error));
      stream.once("close", () => reject(new Error("the hub closed the stream")));
    });
  }
}

/**
 * The reverse link of one Domain: a TLS socket to the hub that announces `hello` and then serves
 * HTTP/2, so the hub can open streams to this node's pods without any inbound port.
 * Resolves once the session is up; `onClose` runs when it goes.
 */
export async function acceptFromHub(
  creds: HubLinkCredentials,
  hello: AcceptHello,
  onStream: (stream: ServerHttp2Stream, target: string, source: string) => void,
): Promise<{ close(): void; closed: Promise<void> }> {
  const socket = await dialHub(creds, ALPN_ACCEPT);
  // HTTP/2 takes the socket over only once the hello is written: a write still in flight when
  // the session attaches trips an assertion in Node's http2 (is_write_in_progress).
  await new Promise<void>((resolve, reject) =>
    socket.write(`${JSON.stringify(hello)}\n`, (error) => (error ? reject(error) : resolve())),
  );
  const server = http2.createServer(serverSessionOptions);
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  server.on("session", (session) => {
    session.on("error", () => {});
    session.once("connect", () => session.setLocalWindowSize(SESSION_WINDOW));
  });
  server.on("stream", (stream, headers) => {
    stream.on("error", () => {});
    onStream(stream, String(headers[":authority"] ?? ""), String(headers[SOURCE_HEADER] ?? ""));
  });
  server.emit("connection", socket);
  return { close: () => socket.destroy(), closed };
}
