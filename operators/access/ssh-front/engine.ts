// The process side of the bastion's Go SSH front (ADR 0011): speaks the control socket of
// `rlark-net ssh-front` (JSON lines; protocol in operators/network/rlark-net/ssh-front.go) and
// takes its per-channel data connections, through the supervisor of lib/go-child.ts, which starts
// and restarts it. It decides nothing itself: every question goes to the handlers (front.ts).

import type net from "node:net";
import { join } from "node:path";
import { startGoChild } from "../../lib/go-child.ts";
import type { Logger } from "../../lib/logger.ts";

/** A data connection's first line (its stream id) is at most this long. */
const MAX_STREAM_LINE = 64;

/** A control line from the Go process (every field as sent: checked where used). */
export interface FrontMessage {
  op?: unknown;
  id?: unknown;
  conn?: unknown;
  login?: unknown;
  algo?: unknown;
  key?: unknown;
  remote?: unknown;
  kind?: unknown;
  host?: unknown;
  port?: unknown;
  verb?: unknown;
  reason?: unknown;
  ticket?: unknown;
  in?: unknown;
  out?: unknown;
}

export interface FrontEngineHandlers {
  /** A question (`key`, `open`): the answer's fields, sent back with the question's id. */
  ask(message: FrontMessage): Promise<Record<string, unknown>>;
  /** A report (`login`, `refused`, `closed`): nothing to answer. */
  tell(message: FrontMessage): void;
  /** A data connection that named `stream` on its first line. */
  data(stream: string, socket: net.Socket): void;
  /** The Go process is gone, with every connection it held. */
  down(): void;
}

export interface FrontEngine {
  /** Starts the process; resolves with the port it listens on, rejects if the first start fails. */
  listen(port: number, host: string): Promise<number>;
  /** Closes one channel at once (its access ended). */
  cut(stream: string): void;
  /** Closes one SSH connection. */
  end(conn: number): void;
  /** The agent of `cluster` will bring `ticket` to the hop data port (single use, 10 s). */
  expect(ticket: string, cluster: string): void;
  /** It will not (the agent served the forward on its stream, or refused it). */
  forget(ticket: string): void;
  /** The agents' TLS data port (the hop), once listening; undefined when off. */
  readonly hopPort: number | undefined;
  readonly pid: number | undefined;
  readonly restarts: number;
  close(): Promise<void>;
}

export function createFrontEngine(options: {
  binary: string;
  dataDir: string;
  hostKeyPath: string;
  logger: Logger;
  handlers: FrontEngineHandlers;
  /**
   * The agents' byte hop (ADR 0011): the TLS data port's host:port (port 0: a free one, kept
   * across restarts), the hub's certificate over the host key and the CA's certificate.
   */
  hop?: { listen: string; certPath: string; caPath: string };
}): FrontEngine {
  const { logger, handlers } = options;
  let hopListen = options.hop?.listen;
  let hopPort: number | undefined;
  const child = startGoChild({
    binary: options.binary,
    dir: join(options.dataDir, "ssh-front"),
    dataSocket: "data.sock",
    args: (at, control, data) => [
      "ssh-front",
      "--listen",
      `${at.host}:${at.port}`,
      "--control",
      control,
      "--data",
      data,
      "--host-key",
      options.hostKeyPath,
      ...(options.hop && hopListen
        ? ["--hop-listen", hopListen, "--hop-cert", options.hop.certPath, "--hop-ca", options.hop.caPath]
        : []),
    ],
    onHello(m) {
      const at = typeof m.target === "string" ? m.target : "";
      const port = Number(at.slice(at.lastIndexOf(":") + 1));
      if (hopListen && Number.isInteger(port) && port > 0) {
        hopPort = port;
        // A restarted front listens where agents already dial.
        hopListen = `${hopListen.slice(0, hopListen.lastIndexOf(":"))}:${port}`;
      }
    },
    // GOMEMLIMIT: the Go heap's soft bound; each connection holds at most its channels' windows.
    env: { ...process.env, GOMEMLIMIT: "256MiB" },
    name: "ssh front: rlark-net ssh-front",
    logPrefix: "ssh front: rlark-net",
    logger,
    maxFirstLine: MAX_STREAM_LINE,
    // Half-open: a client's EOF (an `ssh -L` reader that shuts its write side at once) must not
    // end the direction still carrying the pod's bytes to it.
    allowHalfOpen: true,
    onControl(m: FrontMessage, socket) {
      if (m.op === "key" || m.op === "open") {
        const id = m.id;
        handlers.ask(m).then(
          (answer) => {
            if (child.isCurrent(socket)) child.send({ op: m.op, id, ...answer });
          },
          (error: Error) => {
            logger.error("ssh front: a question failed", { op: m.op, error: error.message });
            if (child.isCurrent(socket))
              child.send({ op: m.op, id, ok: false, error: "the hub failed to decide" });
          },
        );
        return;
      }
      handlers.tell(m);
    },
    onData: (line, socket) => handlers.data(line.toString("latin1"), socket),
    onDown: () => handlers.down(),
  });
  return {
    listen: (port, host) => child.listen(port, host),
    cut(stream) {
      child.send({ op: "cut", stream });
    },
    end(conn) {
      child.send({ op: "end", conn });
    },
    expect(ticket, cluster) {
      child.send({ op: "expect", ticket, cluster });
    },
    forget(ticket) {
      child.send({ op: "forget", ticket });
    },
    get hopPort() {
      return hopPort;
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
