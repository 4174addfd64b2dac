// The nodeserver's Go data engine (issue 25, item 2; ADR 0007, third decision): `rlark-net
// nodeserver-data` runs the end-to-end mutual TLS between the nodeservers of two clusters and
// copies between it and the pod's stream. This module starts it with a Node IPC channel (its
// JSON lines and, for a source's connection, the sidecar's socket as a passed descriptor),
// restarts it when it dies, and turns its messages into each connection's events. It decides
// nothing: the nodeserver has checked the pod and the target and holds the hub's ticket before it
// hands a connection here. Protocol: operators/network/rlark-net/datapath.go.

import { type ChildProcess, spawn } from "node:child_process";
import type net from "node:net";
import { goLogRelay, lines } from "../lib/go-child.ts";
import type { Logger } from "../lib/logger.ts";

const RESTART_MIN_MS = 100;
const RESTART_MAX_MS = 5000;
const HEALTHY_MS = 10_000;
const MAX_LOG_LINE = 8192;

export interface FlowEvents {
  /** serve: the hub's relay holds this end's ticket (the nodeserver answers the hub 200). */
  dialed?(): void;
  /** The peer nodeserver is verified; bytes flow. */
  up(): void;
  /** The connection never came up. A dial then waits for `answer` (the sidecar's refusal). */
  fail(reason: string): void;
  /** Bytes since the last report: from the pod, and to it. */
  bytes(sent: number, received: number): void;
  /** The end, with its last bytes; after it no event comes. */
  done(sent: number, received: number): void;
}

export interface Flow {
  /** For a dial that failed: the refusal its sidecar reads. */
  answer(status: number, reason: string): void;
  /** The hub ended the stream before the connection was up. */
  cancel(): void;
}

export interface EndToEndTarget {
  domain: string;
  /** The hub's relay port (host:port) and the ticket that joins this end there. */
  relay: string;
  ticket: string;
  /** The only cluster the other end's certificate may name. */
  cluster: string;
}

export interface DataEngine {
  setDomain(domain: string, creds: { certPem: string; keyPem: string; caPem: string }): void;
  forget(domain: string): void;
  /** The source's end: `socket` (a sidecar's, after its CONNECT) goes to the Go process. */
  dial(socket: net.Socket, target: EndToEndTarget & { head: Buffer }, events: FlowEvents): Flow;
  /** The target's end: the Go process dials `pod` (host:port), sends `preamble`, joins the relay. */
  serve(target: EndToEndTarget & { pod: string; preamble: Buffer }, events: FlowEvents): Flow;
  /** Whether the process is up to take connections now. */
  readonly running: boolean;
  /** The running process (for tests that kill it). */
  readonly pid: number | undefined;
  readonly restarts: number;
  close(): Promise<void>;
}

interface EngineMessage {
  op?: unknown;
  id?: unknown;
  reason?: unknown;
  sent?: unknown;
  received?: unknown;
}

export function startDataEngine(options: { binary: string; logger: Logger }): DataEngine {
  const { logger } = options;
  const domains = new Map<string, Record<string, string>>();
  const flows = new Map<number, FlowEvents>();
  let nextId = 0;
  let child: ChildProcess | undefined;
  let stopping = false;
  let restarts = 0;
  let backoff = RESTART_MIN_MS;
  let restartTimer: NodeJS.Timeout | undefined;

  const send = (message: Record<string, unknown>, handle?: net.Socket): boolean => {
    if (!child?.connected) return false;
    // A handed socket is the Go process's from here: its handle went with the message, and
    // destroying what is left closes nothing but tells the nodeserver's server it is gone.
    child.send(message, handle as net.Socket, () => handle?.destroy());
    return true;
  };

  const relog = goLogRelay(logger, "rlark-net nodeserver-data");

  const onMessage = (m: EngineMessage) => {
    const id = typeof m.id === "number" ? m.id : -1;
    const flow = flows.get(id);
    if (!flow) return;
    const sent = typeof m.sent === "number" ? m.sent : 0;
    const received = typeof m.received === "number" ? m.received : 0;
    switch (m.op) {
      case "dialed":
        flow.dialed?.();
        return;
      case "up":
        flow.up();
        return;
      case "fail":
        flow.fail(typeof m.reason === "string" ? m.reason : "failed");
        return;
      case "bytes":
        flow.bytes(sent, received);
        return;
      case "done":
        flows.delete(id);
        flow.done(sent, received);
        return;
    }
  };

  const start = () => {
    if (stopping) return;
    const startedAt = Date.now();
    const proc = spawn(options.binary, ["nodeserver-data"], {
      stdio: ["ignore", "ignore", "pipe", "ipc"],
      serialization: "json",
    });
    child = proc;
    if (proc.stderr) lines(proc.stderr, MAX_LOG_LINE, relog, relog);
    proc.on("message", (m: EngineMessage) => onMessage(m));
    proc.on("error", (error) =>
      logger.error("rlark-net nodeserver-data did not start", { error: String(error) }),
    );
    for (const [domain, creds] of domains) send({ op: "domain", domain, ...creds });
    proc.once("exit", (code, signal) => {
      if (child === proc) child = undefined;
      // Every connection it held went with it.
      for (const [id, flow] of [...flows]) {
        flows.delete(id);
        flow.fail("rlark-net nodeserver-data exited");
        flow.done(0, 0);
      }
      if (stopping) return;
      backoff = Date.now() - startedAt > HEALTHY_MS ? RESTART_MIN_MS : Math.min(backoff * 2, RESTART_MAX_MS);
      logger.warn("rlark-net nodeserver-data exited, restarting", { code, signal, inMs: backoff });
      restartTimer = setTimeout(() => {
        restarts++;
        start();
      }, backoff);
    });
  };
  start();

  const flowOf = (id: number): Flow => ({
    answer: (status, reason) => send({ op: "answer", id, status, reason }),
    cancel: () => send({ op: "cancel", id }),
  });

  /** A connection the process cannot take now ends at once, as if it had failed. */
  const refuseNow = (events: FlowEvents) => {
    queueMicrotask(() => {
      events.fail("rlark-net nodeserver-data is not running");
      events.done(0, 0);
    });
  };

  return {
    setDomain(domain, creds) {
      const message = { cert: creds.certPem, keyPem: creds.keyPem, ca: creds.caPem };
      domains.set(domain, message);
      send({ op: "domain", domain, ...message });
    },
    forget(domain) {
      domains.delete(domain);
      send({ op: "forget", domain });
    },
    dial(socket, target, events) {
      const id = ++nextId;
      // Node's handle passing treats a socket of a net.Server as the server's worker's (it would
      // ask this process to count it at close): this one is handed off for good.
      (socket as unknown as { server: unknown }).server = null;
      flows.set(id, events);
      const message = { op: "dial", id, ...target, head: target.head.toString("base64") };
      if (!send(message, socket)) {
        flows.delete(id);
        refuseNow(events);
      }
      return flowOf(id);
    },
    serve(target, events) {
      const id = ++nextId;
      flows.set(id, events);
      if (!send({ op: "serve", id, ...target, preamble: target.preamble.toString("base64") })) {
        flows.delete(id);
        refuseNow(events);
      }
      return flowOf(id);
    },
    get running() {
      return child?.connected === true;
    },
    get pid() {
      return child?.pid;
    },
    get restarts() {
      return restarts;
    },
    async close() {
      stopping = true;
      if (restartTimer) clearTimeout(restartTimer);
      const proc = child;
      if (!proc) return;
      await new Promise<void>((resolve) => {
        proc.once("exit", () => resolve());
        proc.kill("SIGTERM");
      });
    },
  };
}
