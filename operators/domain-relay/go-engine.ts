// The Go engine of the domain relay (ADR 0007, third decision): `rlark-net relay` owns the relay
// port and moves the bytes of joined streams with splice(2); this module speaks its control
// socket (JSON lines, protocol in operators/network/rlark-net/relay.go) through the supervisor
// of lib/go-child.ts, which starts and restarts it. It decides nothing: every ticket line the Go
// side reads comes here, and the relay (relay.ts) answers. The TLS connections of the
// nodeservers' control sessions come back through the data socket, each after one line naming
// its remote address.

import type net from "node:net";
import { join } from "node:path";
import { startGoChild } from "../lib/go-child.ts";
import type { Logger } from "../lib/logger.ts";

/** A TLS connection's first line ({"remote": ...}) is at most this long. */
const MAX_PREFACE = 256;

export interface GoEngineHandlers {
  /** A data connection's ticket line: the pair and side to join it to, or undefined (refused). */
  ticket(line: string, remote: string): { pair: string; side: 0 | 1 } | undefined;
  /** A data connection that sent no line within a ticket's time to live. */
  timeout(remote: string): void;
  bytes(pair: string, n: number): void;
  /** A joined pair ended; `n` its last bytes. */
  done(pair: string, n: number): void;
  /** The Go process is gone, with every connection it held. */
  down(): void;
  /** A TLS connection from the relay port, with the address it came from. */
  tls(socket: net.Socket, remote: string): void;
}

export interface GoEngine {
  /** Starts the process; resolves with the port it listens on, rejects if the first start fails. */
  listen(port: number, host: string): Promise<number>;
  cancel(pair: string): void;
  /** The running process's pid (for tests that kill it). */
  readonly pid: number | undefined;
  readonly restarts: number;
  close(): Promise<void>;
}

interface ControlLine {
  op?: unknown;
  conn?: unknown;
  pair?: unknown;
  ticket?: unknown;
  remote?: unknown;
  port?: unknown;
  n?: unknown;
}

export function createGoEngine(options: {
  binary: string;
  dataDir: string;
  logger: Logger;
  handlers: GoEngineHandlers;
}): GoEngine {
  const { handlers } = options;
  const child = startGoChild({
    binary: options.binary,
    dir: join(options.dataDir, "relay"),
    dataSocket: "tls.sock",
    args: (at, control, tls) => [
      "relay",
      "--listen",
      `${at.host}:${at.port}`,
      "--control",
      control,
      "--tls",
      tls,
    ],
    name: "domain relay: rlark-net relay",
    logPrefix: "domain relay: rlark-net",
    logger: options.logger,
    maxFirstLine: MAX_PREFACE,
    onControl(m: ControlLine) {
      const pair = typeof m.pair === "string" ? m.pair : "";
      const n = typeof m.n === "number" ? m.n : 0;
      const remote = typeof m.remote === "string" ? m.remote : "";
      switch (m.op) {
        case "ticket": {
          const found = handlers.ticket(typeof m.ticket === "string" ? m.ticket : "", remote);
          child.send(
            found
              ? { op: "admit", conn: m.conn, pair: found.pair, side: found.side }
              : { op: "refuse", conn: m.conn },
          );
          return;
        }
        case "timeout":
          handlers.timeout(remote);
          child.send({ op: "refuse", conn: m.conn });
          return;
        case "bytes":
          handlers.bytes(pair, n);
          return;
        case "done":
          handlers.done(pair, n);
          return;
      }
    },
    onData(preface, socket) {
      let remote = "";
      try {
        const parsed = JSON.parse(preface.toString("utf8")) as { remote?: unknown };
        if (typeof parsed.remote === "string") remote = parsed.remote;
      } catch {}
      handlers.tls(socket, remote);
    },
    onDown: () => handlers.down(),
  });
  return {
    listen: (port, host) => child.listen(port, host),
    cancel(pair) {
      child.send({ op: "cancel", pair });
    },
    get pid() {
      return child.pid;
    },
    get restarts() {
      return child.restarts;
    },
    close: () => child.close(),
  };
}
