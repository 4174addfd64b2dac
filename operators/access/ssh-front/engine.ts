// The process side of the bastion's Go SSH front (ADR 0011): starts `rlark-net ssh-front`,
// restarts it when it dies, speaks its control socket (JSON lines; protocol in
// operators/network/rlark-net/ssh-front.go) and takes its per-channel data connections. It
// decides nothing itself: every question goes to the handlers (front.ts). Both sockets are in a
// 0700 folder of the hub's data dir and are themselves 0600.
import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, mkdirSync, rmSync } from "node:fs";
import net from "node:net";
import { join } from "node:path";
import type { Readable } from "node:stream";
import type { Logger } from "../../lib/logger.ts";

/** A control line longer than this ends the Go process: it is not one the protocol has. */
const MAX_CONTROL_LINE = 4096;
/** A data connection's first line (its stream id) is at most this long. */
const MAX_STREAM_LINE = 64;
/** Log lines of the Go process longer than this are cut. */
const MAX_LOG_LINE = 8192;
const RESTART_MIN_MS = 100;
const RESTART_MAX_MS = 5000;
/** A process that ran this long starts its successor's backoff over. */
const HEALTHY_MS = 10_000;

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
  readonly pid: number | undefined;
  readonly restarts: number;
  close(): Promise<void>;
}

/** Newline-ended lines of a stream, at most `max` characters each: a longer one goes to `onTooLong`. */
function lines(stream: Readable, max: number, onLine: (line: string) => void, onTooLong: () => void): void {
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
      buffered = "";
      onTooLong();
    }
  });
}

export function createFrontEngine(options: {
  binary: string;
  dataDir: string;
  hostKeyPath: string;
  logger: Logger;
  handlers: FrontEngineHandlers;
}): FrontEngine {
  const { logger, handlers } = options;
  const dir = join(options.dataDir, "ssh-front");
  const controlPath = join(dir, "control.sock");
  const dataPath = join(dir, "data.sock");
  let child: ChildProcess | undefined;
  let control: net.Socket | undefined;
  let listenAt: { host: string; port: number } | undefined;
  let stopping = false;
  let restarts = 0;
  let backoff = RESTART_MIN_MS;
  let restartTimer: NodeJS.Timeout | undefined;
  let firstStart: { resolve(port: number): void; reject(error: Error): void } | undefined;
  let lastError = "";

  const send = (message: Record<string, unknown>) => {
    if (control && !control.destroyed) control.write(`${JSON.stringify(message)}\n`);
  };

  const onControl = (socket: net.Socket, line: string) => {
    let m: FrontMessage;
    try {
      m = JSON.parse(line) as FrontMessage;
    } catch {
      logger.error("ssh front: bad control line from rlark-net ssh-front");
      socket.destroy();
      return;
    }
    if (m.op === "hello") {
      if (typeof m.port === "number" && listenAt) {
        listenAt.port = m.port;
        firstStart?.resolve(m.port);
        firstStart = undefined;
      }
      return;
    }
    if (m.op === "key" || m.op === "open") {
      const id = m.id;
      handlers.ask(m).then(
        (answer) => {
          if (control === socket) send({ op: m.op, id, ...answer });
        },
        (error: Error) => {
          logger.error("ssh front: a question failed", { op: m.op, error: error.message });
          if (control === socket) send({ op: m.op, id, ok: false, error: "the hub failed to decide" });
        },
      );
      return;
    }
    handlers.tell(m);
  };

  const controlServer = net.createServer((socket) => {
    control?.destroy();
    control = socket;
    socket.on("error", () => {});
    lines(
      socket,
      MAX_CONTROL_LINE,
      (line) => onControl(socket, line),
      () => socket.destroy(),
    );
    socket.once("close", () => {
      if (control !== socket) return;
      control = undefined;
      // Its process exits with it; make sure, so the restart finds the port free.
      child?.kill("SIGKILL");
    });
  });
  // Half-open: a client's EOF (an `ssh -L` reader that shuts its write side at once) must not
  // end the direction still carrying the pod's bytes to it.
  const dataServer = net.createServer({ allowHalfOpen: true }, (socket) => {
    socket.on("error", () => {});
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf(10);
      if (end < 0) {
        if (head.length > MAX_STREAM_LINE) socket.destroy();
        return;
      }
      socket.off("data", onData);
      socket.pause();
      const rest = head.subarray(end + 1);
      if (rest.length > 0) socket.unshift(rest);
      handlers.data(head.subarray(0, end).toString("latin1"), socket);
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
    rmSync(dir, { recursive: true, force: true });
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
    const text = `ssh front: rlark-net: ${String(message)}`;
    if (level === "error") {
      lastError = `${String(message)}${typeof rest.error === "string" ? `: ${rest.error}` : ""}`;
      logger.error(text, rest);
    } else if (level === "warn") logger.warn(text, rest);
    else logger.info(text, rest);
  };

  const start = () => {
    if (stopping || !listenAt) return;
    const startedAt = Date.now();
    const proc = spawn(
      options.binary,
      [
        "ssh-front",
        "--listen",
        `${listenAt.host}:${listenAt.port}`,
        "--control",
        controlPath,
        "--data",
        dataPath,
        "--host-key",
        options.hostKeyPath,
      ],
      // GOMEMLIMIT: the Go heap's soft bound; each connection holds at most its channels' windows.
      { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, GOMEMLIMIT: "256MiB" } },
    );
    child = proc;
    if (proc.stderr) lines(proc.stderr, MAX_LOG_LINE, relog, () => {});
    proc.once("error", (error) =>
      logger.error("ssh front: rlark-net ssh-front did not start", { error: String(error) }),
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
            `rlark-net ssh-front exited (${signal ?? code}) before listening${lastError ? `: ${lastError}` : ""}`,
          ),
        );
        firstStart = undefined;
        return;
      }
      backoff = Date.now() - startedAt > HEALTHY_MS ? RESTART_MIN_MS : Math.min(backoff * 2, RESTART_MAX_MS);
      logger.warn("ssh front: rlark-net ssh-front exited, restarting", { code, signal, inMs: backoff });
      restartTimer = setTimeout(() => {
        restarts++;
        start();
      }, backoff);
    });
  };

  return {
    async listen(port, host) {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      chmodSync(dir, 0o700);
      await listenUnix(controlServer, controlPath);
      await listenUnix(dataServer, dataPath);
      listenAt = { host, port };
      return new Promise<number>((resolve, reject) => {
        firstStart = { resolve, reject };
        start();
      });
    },
    cut(stream) {
      send({ op: "cut", stream });
    },
    end(conn) {
      send({ op: "end", conn });
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
