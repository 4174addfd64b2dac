// A supervised `rlark-net` process that moves bytes for a TypeScript side that decides (ADR 0007,
// ADR 0011): the hub's relay and its SSH front. It starts the process, restarts it with backoff
// when it dies, and owns the two unix sockets between them in a 0700 folder: the control socket
// (JSON lines; one connection, the current process's) and a data socket whose connections each
// name themselves on a first line. What the lines mean is the caller's.
import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, mkdirSync, rmSync } from "node:fs";
import net from "node:net";
import { join } from "node:path";
import type { Readable } from "node:stream";
import type { Logger } from "./logger.ts";

/** A control line longer than this ends the Go process: it is not one a protocol has. */
const MAX_CONTROL_LINE = 4096;
/** Log lines of the Go process longer than this are cut. */
const MAX_LOG_LINE = 8192;
const RESTART_MIN_MS = 100;
const RESTART_MAX_MS = 5000;
/** A process that ran this long starts its successor's backoff over. */
const HEALTHY_MS = 10_000;

export interface GoChildOptions {
  binary: string;
  /** The sockets' folder (made 0700; removed on close). */
  dir: string;
  /** The data socket's file name in `dir`. */
  dataSocket: string;
  /** The subcommand and its flags, given where it listens and the two sockets' paths. */
  args(at: { host: string; port: number }, controlPath: string, dataPath: string): string[];
  env?: NodeJS.ProcessEnv;
  /** How the supervisor's lines name the process, e.g. "domain relay: rlark-net relay". */
  name: string;
  /** What the process's own log lines are prefixed with, e.g. "domain relay: rlark-net". */
  logPrefix: string;
  logger: Logger;
  /** A data connection's first line is at most this long (longer: the connection is dropped). */
  maxFirstLine: number;
  /** Keep a data connection writable after its peer's EOF (a forward still sending). */
  allowHalfOpen?: boolean;
  /** The process's `hello` line (each start's), after its port is taken. */
  onHello?(message: Record<string, unknown>): void;
  /** A control line other than the process's `hello`; `socket` is the connection it came on. */
  onControl(message: Record<string, unknown>, socket: net.Socket): void;
  /** A data connection with its first line, paused, the bytes after the line put back. */
  onData(firstLine: Buffer, socket: net.Socket): void;
  /** The process is gone, with every connection it held. */
  onDown(): void;
}

export interface GoChild {
  /** Starts the process; resolves with the port it listens on, rejects if the first start fails. */
  listen(port: number, host: string): Promise<number>;
  /** Sends a control line to the current process (dropped while none runs). */
  send(message: Record<string, unknown>): void;
  /** Whether `socket` is the current process's control connection. */
  isCurrent(socket: net.Socket): boolean;
  readonly pid: number | undefined;
  readonly restarts: number;
  close(): Promise<void>;
}

/** Newline-ended lines of a stream, at most `max` characters each: a longer one goes to `onTooLong`, cut. */
export function lines(
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

/**
 * Passes a Go process's JSON log lines (level, message, fields) to `logger`, each message after
 * `prefix`; a line that is not JSON is logged as its message. `onError` hears each error's text.
 */
export function goLogRelay(
  logger: Logger,
  prefix: string,
  onError?: (error: string) => void,
): (line: string) => void {
  return (line) => {
    let fields: Record<string, unknown>;
    try {
      fields = JSON.parse(line) as Record<string, unknown>;
    } catch {
      fields = { message: line };
    }
    const { level, message, time: _time, component: _component, ...rest } = fields;
    const text = `${prefix}: ${String(message)}`;
    if (level === "error") {
      onError?.(`${String(message)}${typeof rest.error === "string" ? `: ${rest.error}` : ""}`);
      logger.error(text, rest);
    } else if (level === "warn") logger.warn(text, rest);
    else logger.info(text, rest);
  };
}

export function startGoChild(options: GoChildOptions): GoChild {
  const { logger, name } = options;
  const controlPath = join(options.dir, "control.sock");
  const dataPath = join(options.dir, options.dataSocket);
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

  const onControlLine = (socket: net.Socket, line: string) => {
    let message: Record<string, unknown>;
    try {
      message = JSON.parse(line) as Record<string, unknown>;
    } catch {
      logger.error(`${name}: bad control line`);
      socket.destroy();
      return;
    }
    if (message.op === "hello") {
      if (typeof message.port === "number" && listenAt) {
        listenAt.port = message.port;
        options.onHello?.(message);
        firstStart?.resolve(message.port);
        firstStart = undefined;
      }
      return;
    }
    options.onControl(message, socket);
  };

  const controlServer = net.createServer((socket) => {
    control?.destroy();
    control = socket;
    socket.on("error", () => {});
    lines(
      socket,
      MAX_CONTROL_LINE,
      (line) => onControlLine(socket, line),
      () => socket.destroy(),
    );
    socket.once("close", () => {
      if (control !== socket) return;
      control = undefined;
      // Its process exits with it; make sure, so the restart finds the port free.
      child?.kill("SIGKILL");
    });
  });

  const dataServer = net.createServer({ allowHalfOpen: options.allowHalfOpen === true }, (socket) => {
    socket.on("error", () => {});
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf(10);
      if (end < 0) {
        if (head.length > options.maxFirstLine) socket.destroy();
        return;
      }
      socket.off("data", onData);
      socket.pause();
      const rest = head.subarray(end + 1);
      if (rest.length > 0) socket.unshift(rest);
      options.onData(head.subarray(0, end), socket);
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
      [controlServer, dataServer].map(
        (server) =>
          new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve())),
      ),
    );
    rmSync(options.dir, { recursive: true, force: true });
  };

  const relog = goLogRelay(logger, options.logPrefix, (error) => {
    lastError = error;
  });

  const start = () => {
    if (stopping || !listenAt) return;
    const startedAt = Date.now();
    const proc = spawn(options.binary, options.args(listenAt, controlPath, dataPath), {
      stdio: ["ignore", "ignore", "pipe"],
      ...(options.env ? { env: options.env } : {}),
    });
    child = proc;
    if (proc.stderr) lines(proc.stderr, MAX_LOG_LINE, relog, relog);
    proc.once("error", (error) => logger.error(`${name} did not start`, { error: String(error) }));
    proc.once("exit", (code, signal) => {
      if (child === proc) child = undefined;
      control?.destroy();
      options.onDown();
      if (stopping) return;
      if (firstStart) {
        stopping = true;
        void closeSockets();
        firstStart.reject(
          new Error(
            `${name} exited (${signal ?? code}) before listening${lastError ? `: ${lastError}` : ""}`,
          ),
        );
        firstStart = undefined;
        return;
      }
      backoff = Date.now() - startedAt > HEALTHY_MS ? RESTART_MIN_MS : Math.min(backoff * 2, RESTART_MAX_MS);
      logger.warn(`${name} exited, restarting`, { code, signal, inMs: backoff });
      restartTimer = setTimeout(() => {
        restarts++;
        start();
      }, backoff);
    });
  };

  return {
    async listen(port, host) {
      mkdirSync(options.dir, { recursive: true, mode: 0o700 });
      chmodSync(options.dir, 0o700);
      await listenUnix(controlServer, controlPath);
      await listenUnix(dataServer, dataPath);
      listenAt = { host, port };
      return new Promise<number>((resolve, reject) => {
        firstStart = { resolve, reject };
        start();
      });
    },
    send(message) {
      if (control && !control.destroyed) control.write(`${JSON.stringify(message)}\n`);
    },
    isCurrent(socket) {
      return control === socket;
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
