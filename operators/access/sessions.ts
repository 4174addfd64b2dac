// The session service every entry point shares (the SSH bastion, the web terminal, the API's log
// follows and proxies): it admits an access (the pod resolved, the per-user limit, git's
// AccessPolicies), keeps every open access in one set, ends those git no longer grants the moment
// a User, an AccessPolicy, a Job or a Pod changes, ends idle ones, and writes one audit line each.
// It also runs shells and commands on an agent: the framed stream to the agent stays here, the
// client side (an SSH channel, a WebSocket) is the caller's.
import type { Duplex } from "node:stream";
import {
  ACCESS_SESSION_PURPOSE,
  type ExitStatus,
  encodeFrame,
  FrameDecoder,
  FrameType,
  parseExit,
} from "../lib/access-stream/index.ts";
import { type Logger, silentLogger } from "../lib/logger.ts";
import { type AccessControl, AccessDenied, type ResolvedPod } from "./access-control.ts";
import type { AuditLog, AuditRecord, AuditResult } from "./audit.ts";
import { type AccessTarget, type AccessVerb, execArgv } from "./authorize.ts";
import { ByteRate, PauseReasons } from "./byte-rate.ts";
import type { PodSelector } from "./login-name.ts";

export interface AccessSessionsOptions {
  access: AccessControl;
  audit: AuditLog;
  /** Opens a stream to a cluster's agent (TunnelServer.openStream). */
  openStream(cluster: string, options: { purpose: string; meta: Record<string, unknown> }): Promise<Duplex>;
  logger?: Logger;
  /** Open sessions, forwards and terminals per user; the next is refused. Default 16. */
  maxSessionsPerUser?: number;
  /** A session, forward or terminal with no bytes either way for this long is closed. Default 30 min. */
  idleTimeoutMs?: number;
  /**
   * Bytes per second each user may move each way, all their sessions, files, forwards and
   * terminals together; 0 or unset: no limit.
   */
  bytesPerSecondPerUser?: number;
}

export type AccessVia = AuditRecord["via"];

/** Who asks, from where, through which entry point. */
export interface Requester {
  user: string;
  ip: string;
  via: AccessVia;
  /** The SSH public key (wire format) the connection logged in with: it must stay the user's. */
  key?: Buffer;
}

/** One open access, from its admission to its audit line. */
export interface LiveAccess {
  readonly user: string;
  readonly verb: AccessVerb;
  readonly target: AccessTarget;
  readonly ended: boolean;
  /** Why it ended, when it did not end by itself. */
  readonly error: string | undefined;
  /**
   * Bytes from the client (in) and to it (out); counts as activity for the idle timeout. Returns
   * how many milliseconds the caller should hold that direction before moving more (the user's
   * byte rate; 0: carry on).
   */
  count(direction: "in" | "out", n: number): number;
  /** Ends the access once (later calls do nothing) and writes its audit line. */
  end(result: AuditResult, error?: string, exitCode?: number): void;
  /** Called once when the access ends for any reason. */
  onEnd(listener: (result: AuditResult, error: string | undefined) => void): void;
}

interface TrackedAccess extends LiveAccess {
  command?: string;
  key?: Buffer;
  lastActivity: number;
  /** A log follow is quiet when its pod is: only sessions the client drives idle out. */
  idles: boolean;
}

/** The program's side of a running session, as the client side sees it. */
export interface SessionSink {
  /** Program output; false asks the service to stop reading until `resume()`. */
  output(kind: "stdout" | "stderr", data: Buffer): boolean;
  /** The program exited: the last thing a session reports. */
  exit(status: ExitStatus): void;
  /** The session ended without an exit status: revoked, idle, the agent gone (`error` says which). */
  broken(error: string): void;
}

/** The client's side of a running session. */
export interface SessionControl {
  /** Input for the program; false: wait for `drained`. */
  input(data: Buffer): boolean;
  drained(listener: () => void): void;
  eof(): void;
  resize(cols: number, rows: number): void;
  signal(name: string): void;
  /** Resumes reading program output after `output` returned false. */
  resume(): void;
  /** The client went away. */
  close(): void;
}

export interface SessionRequest extends Requester {
  verb: "shell" | "exec";
  pod: ResolvedPod;
  target: AccessTarget;
  /** The admission's place under the per-user limit; the session takes it over. */
  slot?: SessionSlot;
  container?: string;
  command?: string;
  pty?: { term: string; cols: number; rows: number };
}

/**
 * A place under the per-user limit, taken synchronously when an access is asked for (so a burst
 * of requests cannot all pass the count before any of them is open) and held until the access is
 * tracked (track takes it over) or given up. Releasing it twice does nothing.
 */
export interface SessionSlot {
  release(): void;
}

/** A slot no access took within this time returns by itself (an admission whose client left). */
const SLOT_UNCLAIMED_MS = 60_000;

export type Admission = { pod: ResolvedPod; target: AccessTarget; slot: SessionSlot } | { denied: string };

export class AccessSessions {
  readonly #options: AccessSessionsOptions;
  readonly #log: Logger;
  readonly #live = new Set<TrackedAccess>();
  /** Slots taken by admissions whose access is not tracked yet, per user. */
  readonly #reserved = new Map<string, number>();
  /** Each user's byte rate, each way, while they have an open access. */
  readonly #rates = new Map<string, Record<"in" | "out", ByteRate>>();
  #idleTimer: NodeJS.Timeout | undefined;
  #stopWatching: (() => void) | undefined;
  #rechecking: Promise<void> | undefined;
  #recheckAgain = false;

  constructor(options: AccessSessionsOptions) {
    this.#options = options;
    this.#log = options.logger ?? silentLogger;
  }

  get access(): AccessControl {
    return this.#options.access;
  }

  /** Starts watching git's objects (revocations end accesses) and idle accesses. */
  async start(): Promise<void> {
    if (this.#stopWatching) return;
    this.#stopWatching = await this.#options.access.onChange(() => this.#scheduleRecheck());
    const idle = this.#options.idleTimeoutMs ?? 30 * 60_000;
    this.#idleTimer = setInterval(
      () => {
        const now = Date.now();
        for (const live of this.#live) {
          if (live.idles && now - live.lastActivity > idle)
            live.end("error", `idle for more than ${Math.round(idle / 1000)} s`);
        }
      },
      Math.min(10_000, Math.max(100, idle / 4)),
    );
    this.#idleTimer.unref();
  }

  stop(): void {
    this.#stopWatching?.();
    this.#stopWatching = undefined;
    if (this.#idleTimer) clearInterval(this.#idleTimer);
    for (const live of this.#live) live.end("error", "the hub is stopping");
  }

  /** A stream to a cluster's agent, for what the caller relays itself (files, forwards). */
  openStream(cluster: string, options: { purpose: string; meta: Record<string, unknown> }): Promise<Duplex> {
    return this.#options.openStream(cluster, options);
  }

  /** Open accesses now, in all or of one user (for limits, tests and metrics). */
  open(user?: string): number {
    if (user === undefined) return this.#live.size;
    let n = 0;
    for (const live of this.#live) if (live.user === user) n++;
    return n;
  }

  /** Why `user` may open nothing more now (every place under the limit taken), or undefined. */
  full(user: string): string | undefined {
    const used = this.open(user) + (this.#reserved.get(user) ?? 0);
    if (used >= (this.#options.maxSessionsPerUser ?? 16))
      return `too many open sessions (${used}); close one first`;
    return undefined;
  }

  /**
   * Takes one of `user`'s places under the per-user limit at once (no await between the count and
   * the taking), or says why not.
   */
  reserve(user: string): SessionSlot | { denied: string } {
    const full = this.full(user);
    if (full) return { denied: full };
    this.#reserved.set(user, (this.#reserved.get(user) ?? 0) + 1);
    let held = true;
    const release = () => {
      if (!held) return;
      held = false;
      clearTimeout(unclaimed);
      const left = (this.#reserved.get(user) ?? 1) - 1;
      if (left > 0) this.#reserved.set(user, left);
      else this.#reserved.delete(user);
    };
    const unclaimed = setTimeout(release, SLOT_UNCLAIMED_MS);
    unclaimed.unref();
    return { release };
  }

  /**
   * Resolves and authorizes a pod (named by a selector, or already resolved) for `verb`; a refusal
   * is audited and says why in words fit for the user.
   */
  async admit(
    who: Requester,
    verb: AccessVerb,
    pod: PodSelector | ResolvedPod | undefined,
    command?: string,
  ): Promise<Admission> {
    const start = new Date().toISOString();
    const deny = (message: string, target: string): Admission => {
      this.audit(who, { verb, target, start, result: "denied", error: message, command });
      return { denied: message };
    };
    if (!pod) return deny("name a pod in the login: <user>+<pod>[+<container>]", "");
    const slot = this.reserve(who.user);
    if ("denied" in slot) return deny(slot.denied, describePod(pod));
    let resolved: ResolvedPod;
    let target: AccessTarget;
    try {
      resolved = "cluster" in pod ? pod : await this.#options.access.resolvePod(pod);
      target = await this.#options.access.target(resolved);
    } catch (error) {
      slot.release();
      if (!(error instanceof AccessDenied))
        this.#log.warn("resolving an access target failed", { error: (error as Error).message });
      return deny((error as Error).message, describePod(pod));
    }
    const decision = await this.#options.access.decide(who.user, verb, target, command, who.key);
    if (!decision.allowed) {
      slot.release();
      if (decision.hidden) {
        // Another team's pod: audited as what it is, answered as a pod that does not exist.
        this.audit(who, {
          verb,
          target: targetName(target),
          start,
          result: "denied",
          error: `access denied: ${decision.reason}`,
          command,
        });
        return { denied: notFoundMessage(pod) };
      }
      return deny(`access denied: ${decision.reason}`, targetName(target));
    }
    return { pod: resolved, target, slot };
  }

  /**
   * Keeps an admitted access in the set until it ends: `close` is called when the service ends it
   * (revoked in git, idle, the hub stopping). `container` and `port` only name it in the audit.
   */
  track(
    who: Requester,
    verb: AccessVerb,
    target: AccessTarget,
    close: (result: AuditResult, error: string) => void,
    extra: {
      container?: string;
      port?: number;
      command?: string;
      /** False: never ended for idleness (a log follow is quiet when its pod is). */
      idles?: boolean;
      /** False: the caller writes its own, richer audit line (the API's routes). */
      audited?: boolean;
      /** The slot its admission took: this access holds the place from now on. */
      slot?: SessionSlot;
    } = {},
  ): LiveAccess {
    const start = new Date().toISOString();
    const listeners: ((result: AuditResult, error: string | undefined) => void)[] = [];
    let error: string | undefined;
    let ended = false;
    let bytesIn = 0;
    let bytesOut = 0;
    const live: TrackedAccess = {
      user: who.user,
      verb,
      target,
      ...(extra.command === undefined ? {} : { command: extra.command }),
      ...(who.key ? { key: who.key } : {}),
      lastActivity: Date.now(),
      idles: extra.idles ?? true,
      get ended() {
        return ended;
      },
      get error() {
        return error;
      },
      count: (direction, n) => {
        live.lastActivity = Date.now();
        if (direction === "in") bytesIn += n;
        else bytesOut += n;
        return this.#rateOf(who.user)?.[direction].take(n) ?? 0;
      },
      onEnd: (listener) => listeners.push(listener),
      end: (result, why, exitCode) => {
        if (ended) return;
        ended = true;
        error = why;
        this.#live.delete(live);
        if (this.open(who.user) === 0) this.#rates.delete(who.user);
        const where = `${targetName(target)}${extra.container ? `/${extra.container}` : ""}`;
        if (extra.audited !== false)
          this.audit(who, {
            verb,
            target: extra.port === undefined ? where : `${where}:${extra.port}`,
            command: extra.command,
            start,
            result,
            bytesIn,
            bytesOut,
            ...(exitCode === undefined ? {} : { exitCode }),
            ...(why ? { error: why } : {}),
          });
        if (result !== "ok") close(result, why ?? result);
        for (const listener of listeners) listener(result, why);
      },
    };
    this.#live.add(live);
    extra.slot?.release();
    return live;
  }

  /**
   * Runs an admitted shell or command on the pod's agent: output goes to `sink`, the returned
   * control carries the client's input, window size and signals. Undefined when the agent could
   * not be reached (then `sink.broken` has said why).
   */
  async runSession(request: SessionRequest, sink: SessionSink): Promise<SessionControl | undefined> {
    const { pod, target, container, command, pty, slot } = request;
    const argv = command === undefined ? undefined : execArgv(command);
    let stream: Duplex | undefined;
    let exited = false;
    const live = this.track(
      request,
      request.verb,
      target,
      (_result, error) => {
        if (!exited) sink.broken(error);
        stream?.destroy();
      },
      {
        ...(container ? { container } : {}),
        ...(command === undefined ? {} : { command }),
        ...(slot ? { slot } : {}),
      },
    );
    try {
      stream = await this.#options.openStream(pod.cluster, {
        purpose: ACCESS_SESSION_PURPOSE,
        meta: {
          namespace: pod.namespace,
          name: pod.name,
          ...(container ? { container } : {}),
          ...(argv ? { command: argv } : {}),
          ...(pty ? { pty } : {}),
        },
      });
    } catch (error) {
      live.end("error", (error as Error).message);
      return undefined;
    }
    const agent = stream;
    if (live.ended) {
      agent.destroy();
      return undefined;
    }
    const decoder = new FrameDecoder();
    // The agent's output waits for the client (the sink said "full") and for the user's byte rate.
    const holds = new PauseReasons(agent);
    const sinkFull = holds.toggle();
    agent.on("data", (chunk: Buffer) => {
      let frames: ReturnType<FrameDecoder["push"]>;
      try {
        frames = decoder.push(chunk);
      } catch (error) {
        live.end("error", (error as Error).message);
        return;
      }
      for (const frame of frames) {
        if (frame.type === FrameType.Stdout || frame.type === FrameType.Stderr) {
          const wait = live.count("out", frame.payload.length);
          if (!sink.output(frame.type === FrameType.Stdout ? "stdout" : "stderr", frame.payload))
            sinkFull.on();
          holds.holdFor(wait);
        } else if (frame.type === FrameType.Exit) {
          exited = true;
          const status = parseExit(frame.payload);
          sink.exit(status);
          live.end("ok", undefined, status.code);
        }
      }
    });
    agent.on("error", () => {});
    agent.on("close", () => {
      if (!exited) live.end("error", "the agent ended the session");
    });
    const send = (type: FrameType, payload?: Buffer | string) =>
      !agent.destroyed && agent.write(encodeFrame(type, payload));
    /** When the user's byte rate lets input flow again (performance.now()). */
    let inputFreeAt = 0;
    return {
      input: (data) => {
        const wait = live.count("in", data.length);
        if (wait > 0) inputFreeAt = performance.now() + wait;
        return send(FrameType.Stdin, data) !== false && wait === 0;
      },
      drained: (listener) => {
        const afterRate = () => {
          const left = inputFreeAt - performance.now();
          if (left > 0) setTimeout(afterRate, left);
          else listener();
        };
        if (agent.writableNeedDrain) agent.once("drain", afterRate);
        else afterRate();
      },
      eof: () => send(FrameType.Eof),
      resize: (cols, rows) => send(FrameType.Resize, JSON.stringify({ cols, rows })),
      signal: (name) => send(FrameType.Signal, name),
      resume: () => sinkFull.off(),
      close: () => {
        live.end("ok");
        agent.destroy();
      },
    };
  }

  /** Whether `user`'s bytes are held to a byte rate (their relays must then count every byte first). */
  rated(_user: string): boolean {
    return (this.#options.bytesPerSecondPerUser ?? 0) > 0;
  }

  #rateOf(user: string): Record<"in" | "out", ByteRate> | undefined {
    const limit = this.#options.bytesPerSecondPerUser ?? 0;
    if (limit <= 0) return undefined;
    let rate = this.#rates.get(user);
    if (!rate) {
      rate = { in: new ByteRate(limit), out: new ByteRate(limit) };
      this.#rates.set(user, rate);
    }
    return rate;
  }

  /** One audit line (never contents: an exec's program name, not its arguments). */
  audit(
    who: Requester,
    entry: {
      verb: AccessVerb;
      target: string;
      command?: string | undefined;
      start: string;
      result: AuditResult;
      bytesIn?: number;
      bytesOut?: number;
      exitCode?: number;
      error?: string;
    },
  ): void {
    const { command, ...rest } = entry;
    const record: AuditRecord = {
      actor: who.user,
      ip: who.ip,
      ...rest,
      ...(command ? { program: execArgv(command)?.[0] ?? command.split(/\s/)[0] ?? "" } : {}),
      via: who.via,
      end: new Date().toISOString(),
      bytesIn: entry.bytesIn ?? 0,
      bytesOut: entry.bytesOut ?? 0,
    };
    try {
      this.#options.audit.write(record);
    } catch (error) {
      this.#log.error("writing the access audit failed", { error: (error as Error).message });
    }
  }

  #scheduleRecheck(): void {
    if (this.#rechecking) {
      this.#recheckAgain = true;
      return;
    }
    this.#rechecking = this.#recheck().finally(() => {
      this.#rechecking = undefined;
      if (this.#recheckAgain) {
        this.#recheckAgain = false;
        this.#scheduleRecheck();
      }
    });
  }

  /**
   * Asks again for every open access, about the target as it is now (its Job's labels and Domain
   * today, not at admission) and the login key the user holds now; what git no longer grants ends.
   */
  async #recheck(): Promise<void> {
    const access = this.#options.access;
    for (const live of [...this.#live]) {
      try {
        const target = await access.current(live.target);
        const decision = await access.decide(live.user, live.verb, target, live.command, live.key);
        if (!decision.allowed) live.end("revoked", `access revoked: ${decision.reason}`);
      } catch (error) {
        this.#log.warn("re-checking an access failed", { error: (error as Error).message });
      }
    }
  }
}

export function targetName(target: AccessTarget): string {
  return `${target.cluster}/${target.namespace}/${target.pod}`;
}

/** What resolvePod says of a pod that does not exist (or has no ready replica), word for word. */
function notFoundMessage(pod: PodSelector | ResolvedPod): string {
  if ("cluster" in pod) return `no pod ${pod.namespace}/${pod.name}`;
  if (pod.kind === "task") return `task ${pod.task} has no ready replica`;
  return `no pod ${pod.namespace ? `${pod.namespace}/` : ""}${pod.name}`;
}

export function describePod(pod: PodSelector | ResolvedPod): string {
  if ("cluster" in pod) return `${pod.cluster}/${pod.namespace}/${pod.name}`;
  if (pod.kind === "task") return `task/${pod.task}`;
  return pod.namespace ? `${pod.namespace}/${pod.name}` : pod.name;
}
