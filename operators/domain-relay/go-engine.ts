// The Go engine of the domain relay (ADR 0007, third decision): `rlark-net relay` owns the relay
// port and moves the bytes of joined streams with splice(2); this module starts it, restarts it
// when it dies, and speaks its control socket (JSON lines, protocol in
// operators/network/rlark-net/relay.go). It decides nothing: every ticket line the Go side reads
// comes here, and the relay (relay.ts) answers. The TLS connections of the nodeservers' control
// sessions come back through a second unix socket, each after one line naming its remote address.
// Both sockets are in a 0700 folder of the hub's data dir and are themselves 0600.

import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, mkdirSync, rmSync } from "node:fs";
import net from "node:net";
import { join } from "node:path";
import type { Readable } from "node:stream";
import type { Logger } from "../lib/logger.ts";

/** A control line longer than this ends the Go process: it is not one the protocol has. */
const MAX_CONTROL_LINE = 4096;
/** A TLS connection's first line ({"remote": ...}) is at most this long. */
const MAX_PREFACE = 256;
/** Log lines of the Go process longer than this are cut. */
const MAX_LOG_LINE = 8192;
const RESTART_MIN_MS = 100;
const RESTART_MAX_MS = 5000;
/** A process that ran this long starts its successor's backoff over. */
const HEALTHY_MS = 10_000;

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

/** Newline-ended lines of a stream, at most `max` characters each: a longer one goes to `onTooLong`, cut. */
function lines(
  stream: Readable,
  max: number,
  onLine: (line: string) => void,
  onTooLong: (cut: string) => void,
): void {
  let buffered = "";
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => {
    buffered += chunk;
    for (let end = buffered.indexOf("\n"); end >= 0; end = buffered.indexOf("\n")) {
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + 1);
      onLine(line);
    }
    if (buffered.length > max) {
      onTooLong(buffered.slice(0, max));
      buffered = "";
    }
  });
}

export function createGoEngine(options: {
  binary: string;
  dataDir: string;
  logger: Logger;
  handlers: GoEngineHandlers;
}): GoEngine {
  const { logger, handlers } = options;
  const dir = join(options.dataDir, "relay");
  const controlPath = join(dir, "control.sock");
  const tlsPath = join(dir, "tls.sock");
  let child: ChildProcess | undefined;
  let control: net.Socket | undefined;
  let listenAt: { host: string; port: number } | undefined;
  let stopping = false;
  let restarts = 0;
  let backoff = RESTART_MIN_MS;
  let restartTimer: NodeJS.Timeout | undefined;
  let firstStart: { resolve(port: number): void; reject(error: Error): void } | undefined;
  /** The process's last error line: why a first start failed. */
  let lastError = "";

  const send = (message: Record<string, unknown>) => {
    if (control && !control.destroyed) control.write(`${JSON.stringify(message)}\n`);
  };

  const onControl = (line: string) => {
    let m: ControlLine;
    try {
      m = JSON.parse(line) as ControlLine;
    } catch {
      logger.error("domain relay: bad control line from rlark-net relay");
      control?.destroy();
      return;
    }
    const pair = typeof m.pair === "string" ? m.pair : "";
    const n = typeof m.n === "number" ? m.n : 0;
    const remote = typeof m.remote === "string" ? m.remote : "";
    switch (m.op) {
      case "hello":
        if (typeof m.port === "number" && listenAt) {
          listenAt.port = m.port;
          firstStart?.resolve(m.port);
          firstStart = undefined;
        }
        return;
      case "ticket": {
        const found = handlers.ticket(typeof m.ticket === "string" ? m.ticket : "", remote);
        send(
          found
            ? { op: "admit", conn: m.conn, pair: found.pair, side: found.side }
            : { op: "refuse", conn: m.conn },
        );
        return;
      }
      case "timeout":
        handlers.timeout(remote);
        send({ op: "refuse", conn: m.conn });
        return;
      case "bytes":
        handlers.bytes(pair, n);
        return;
      case "done":
        handlers.done(pair, n);
        return;
    }
  };

  // The control socket: one connection, the current process's.
  const controlServer = net.createServer((socket) => {
    control?.destroy();
    control = socket;
    socket.on("error", () => {});
    lines(socket, MAX_CONTROL_LINE, onControl, () => socket.destroy());
    socket.once("close", () => {
      if (control !== socket) return;
      control = undefined;
      // Its process exits with it; make sure, so the restart finds the port free.
      child?.kill("SIGKILL");
    });
  });
  const tlsServer = net.createServer((socket) => {
    socket.on("error", () => {});
    let preface = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      preface = Buffer.concat([preface, chunk]);
      const end = preface.indexOf(10);
      if (end < 0) {
        if (preface.length > MAX_PREFACE) socket.destroy();
        return;
      }
      socket.off("data", onData);
      socket.pause();
      let remote = "";
      try {
        const parsed = JSON.parse(preface.subarray(0, end).toString("utf8")) as { remote?: unknown };
        if (typeof parsed.remote === "string") remote = parsed.remote;
      } catch {}
      const rest = preface.subarray(end + 1);
      if (rest.length > 0) socket.unshift(rest);
      handlers.tls(socket, remote);
    };
    socket.on("data", onData);
  });

  const listenUnix = (server: net.Server, path: string) =>
    new Promise<void>((resolve, reject) => {
      rmSync(path, { force: true });
      server.once("error", reject);
      server.listen(path, () => {
        chmodSync(path, 0o600);
        resolve();
      });
    });

  const closeSockets = async () => {
    control?.destroy();
    await Promise.all(
      [controlServer, tlsServer].map(
        (server) =>
          new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve())),
      ),
    );
    rmSync(dir, { recursive: true, force: true });
  };

  const start = () => {
    if (stopping || !listenAt) return;
    const startedAt = Date.now();
    const proc = spawn(
      options.binary,
      ["relay", "--listen", `${listenAt.host}:${listenAt.port}`, "--control", controlPath, "--tls", tlsPath],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    child = proc;
    if (proc.stderr) lines(proc.stderr, MAX_LOG_LINE, relog, relog);
    proc.once("error", (error) =>
      logger.error("domain relay: rlark-net relay did not start", { error: String(error) }),
    );
    proc.once("exit", (code, signal) => {
      if (child === proc) child = undefined;
      control?.destroy();
      handlers.down();
      if (stopping) return;
      if (firstStart) {
        stopping = true;
        void closeSockets();
        firstStart.reject(
          new Error(
            `rlark-net relay exited (${signal ?? code}) before listening${lastError ? `: ${lastError}` : ""}`,
          ),
        );
        firstStart = undefined;
        return;
      }
      backoff = Date.now() - startedAt > HEALTHY_MS ? RESTART_MIN_MS : Math.min(backoff * 2, RESTART_MAX_MS);
      logger.warn("domain relay: rlark-net relay exited, restarting", {
        code,
        signal,
        inMs: backoff,
      });
      restartTimer = setTimeout(() => {
        restarts++;
        start();
      }, backoff);
    });
  };

  // The Go process's own JSON log lines, through the hub's logger.
  const relog = (line: string) => {
    let fields: Record<string, unknown>;
    try {
      fields = JSON.parse(line) as Record<string, unknown>;
    } catch {
      fields = { message: line };
    }
    const { level, message, time: _time, component: _component, ...rest } = fields;
    const text = `domain relay: rlark-net: ${String(message)}`;
    if (level === "error")
      lastError = `${String(message)}${typeof rest.error === "string" ? `: ${rest.error}` : ""}`;
    if (level === "error") logger.error(text, rest);
    else if (level === "warn") logger.warn(text, rest);
    else logger.info(text, rest);
  };

  return {
    async listen(port, host) {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      chmodSync(dir, 0o700);
      await listenUnix(controlServer, controlPath);
      await listenUnix(tlsServer, tlsPath);
      listenAt = { host, port };
      return new Promise<number>((resolve, reject) => {
        firstStart = { resolve, reject };
        start();
      });
    },
    cancel(pair) {
      send({ op: "cancel", pair });
    },
    get pid() {
      return child?.pid;
    },
    get restarts() {
      return restarts;
    },
    async close() {
      stopping = true;
      clearTimeout(restartTimer);
      const proc = child;
      if (proc && proc.exitCode === null && proc.signalCode === null) {
        const exited = new Promise((resolve) => proc.once("exit", resolve));
        proc.kill("SIGTERM");
        await exited;
      }
      await closeSockets();
    },
  };
}
