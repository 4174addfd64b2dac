// The agent's byte hop for forwards (ADR 0011, third decision): `rlark-net access-hop`, started
// and restarted here (lib/go-child.ts), connects the address the agent named after its last check
// and the hub's SSH front on its TLS data port with the hub's single-use ticket, and copies the
// bytes between them: none passes through this process. What the hub's stream gets instead is a
// handle without bytes: it ends when the hop's connection ends, and ending it (the hub cut the
// access, or its stream broke) closes the connection. Protocol: operators/network/rlark-net/access-hop.go.
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Duplex } from "node:stream";
import { startGoChild } from "../../lib/go-child.ts";
import type { Logger } from "../../lib/logger.ts";
import { STREAM_ANSWER, StreamRefused } from "../../lib/tunnel/index.ts";

/** How long the hop has to connect both ends (it bounds each dial at 10 s itself). */
const DIAL_ANSWER_MS = 30_000;

export interface HopIdentity {
  caCertPem: string;
  certPem: string;
  privateKeyPem: string;
}

export interface AccessHop {
  /**
   * Connects `target` (host:port, already checked) to the hub's data port `hub` with `ticket`;
   * resolves, once both are joined, with the stream's byte-less handle.
   */
  dial(request: { hub: string; ticket: string; target: string }): Promise<Duplex>;
  /**
   * The same for a stream this process serves itself (SFTP behind its path filter): the hop
   * connects `local` to the hub's data port through a unix socket of this process, so the bytes
   * skip the tunnel but still pass `local`. Ends `local` when it fails.
   */
  dialLocal(request: { hub: string; ticket: string }, local: Duplex): Promise<Duplex>;
  /** The agent's credentials changed (renewal): later dials present these. */
  setIdentity(identity: HopIdentity): void;
  readonly pid: number | undefined;
  readonly restarts: number;
  /** Forwards joined by the hop now. */
  readonly open: number;
  close(): Promise<void>;
}

interface Waiting {
  resolve(handle: Duplex): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout;
}

/** Starts the hop process; resolves once it runs (rejects when its first start fails). */
export async function startAccessHop(options: {
  binary: string;
  identity: HopIdentity;
  logger: Logger;
  /** Its sockets' folder (0700); default a fresh one under the system's temporary folder. */
  dir?: string;
}): Promise<AccessHop> {
  const { logger } = options;
  let identity = options.identity;
  let nextId = 0;
  const waiting = new Map<number, Waiting>();
  const handles = new Map<number, Duplex>();
  /** The process runs and has its identity (between its hello and its exit). */
  let ready = false;
  /** Streams of this process waiting for the hop's unix connection, by its first line. */
  const locals = new Map<string, Duplex>();

  const fail = (id: number, error: Error) => {
    const w = waiting.get(id);
    if (!w) return;
    waiting.delete(id);
    clearTimeout(w.timer);
    w.reject(error);
  };

  const dir = options.dir ?? join(tmpdir(), `rlark-access-hop-${process.pid}-${Date.now().toString(36)}`);
  const dataPath = join(dir, "local.sock");
  const child = startGoChild({
    binary: options.binary,
    dir,
    dataSocket: "local.sock",
    args: (_at, control) => ["access-hop", "--control", control],
    env: { ...process.env, GOMEMLIMIT: "128MiB" },
    name: "access hop: rlark-net access-hop",
    logPrefix: "access hop: rlark-net",
    logger,
    maxFirstLine: 32,
    allowHalfOpen: true,
    onHello() {
      child.send({
        op: "identity",
        ca: identity.caCertPem,
        cert: identity.certPem,
        key: identity.privateKeyPem,
      });
      ready = true;
    },
    onControl(m) {
      const id = Number(m.id);
      if (m.op === "dial") {
        const w = waiting.get(id);
        if (!w) {
          // Given up on (timeout) while it connected: it must not run on unseen.
          if (m.ok === true) child.send({ op: "close", id });
          return;
        }
        if (m.ok !== true) {
          const text = typeof m.error === "string" ? m.error : "the hop failed";
          fail(id, m.refused === true ? new StreamRefused(text) : new Error(text));
          return;
        }
        waiting.delete(id);
        clearTimeout(w.timer);
        const handle = new Duplex({
          read() {},
          write(_chunk, _encoding, callback) {
            // The hub sends nothing on a hop's stream; anything sent is dropped, not buffered.
            callback();
          },
          final(callback) {
            callback();
          },
          destroy(error, callback) {
            if (handles.delete(id)) child.send({ op: "close", id });
            callback(error);
          },
        });
        (handle as unknown as Record<symbol, unknown>)[STREAM_ANSWER] = { hop: true };
        handles.set(id, handle);
        w.resolve(handle);
        return;
      }
      if (m.op === "closed") {
        const handle = handles.get(id);
        handles.delete(id);
        // The forward ended at the hop: the stream ends cleanly (the hub then ends the access).
        handle?.push(null);
        handle?.end();
      }
    },
    onData(line, socket) {
      const local = locals.get(line.toString("latin1"));
      if (!local) {
        socket.destroy();
        return;
      }
      locals.delete(line.toString("latin1"));
      // Each side's end passes on as an end (SFTP's server then sees EOF), an error as a cut.
      socket.pipe(local).pipe(socket);
      socket.on("error", () => local.destroy());
      local.on("error", () => socket.destroy());
      local.once("close", () => socket.destroy());
      socket.resume();
    },
    onDown() {
      ready = false;
      for (const id of [...waiting.keys()]) fail(id, new Error("the access hop exited"));
      for (const local of locals.values()) local.destroy();
      locals.clear();
      for (const [id, handle] of handles) {
        handles.delete(id);
        handle.destroy();
      }
    },
  });
  await child.listen(0, "127.0.0.1");
  const dialRaw = (request: { hub: string; ticket: string; target: string; first?: string }) => {
    const id = ++nextId;
    // Between its exit and its restart nothing would answer: refused at once, not after a wait.
    if (!ready) return Promise.reject(new Error("the access hop is restarting"));
    return new Promise<Duplex>((resolve, reject) => {
      const timer = setTimeout(() => fail(id, new Error("the access hop did not answer")), DIAL_ANSWER_MS);
      waiting.set(id, { resolve, reject, timer });
      child.send({ op: "dial", id, ...request });
    });
  };
  return {
    dial: (request) => dialRaw(request),
    async dialLocal(request, local) {
      // Random, not counted: the first line is all that ties the connection to its stream.
      const key = randomBytes(8).toString("hex");
      locals.set(key, local);
      try {
        return await dialRaw({ ...request, target: `unix:${dataPath}`, first: key });
      } catch (error) {
        locals.delete(key);
        local.destroy();
        throw error;
      }
    },
    setIdentity(next) {
      identity = next;
      child.send({ op: "identity", ca: next.caCertPem, cert: next.certPem, key: next.privateKeyPem });
    },
    get pid() {
      return child.pid;
    },
    get restarts() {
      return child.restarts;
    },
    get open() {
      return handles.size;
    },
    close: () => child.close(),
  };
}
