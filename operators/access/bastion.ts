// The user role of the hub's SSH endpoint: OpenSSH clients log in with a key from their User
// object, name a pod in the login (`alice+trainer-0`), and get a shell, an allowlisted command,
// SFTP or TCP forwarding to it, carried over the pod's cluster's agent tunnel. Every request is
// authorized against git's AccessPolicies, audited, and checked again whenever git changes.
import type { Duplex, Readable, Writable } from "node:stream";
import type { Connection, ServerChannel, Session } from "ssh2";
import {
  ACCESS_FILES_PURPOSE,
  ACCESS_FORWARD_PURPOSE,
  ACCESS_SESSION_PURPOSE,
  encodeFrame,
  FrameDecoder,
  FrameType,
  parseExit,
} from "../lib/access-stream/index.ts";
import { type Logger, silentLogger } from "../lib/logger.ts";
import type { UserLogins } from "../lib/tunnel/index.ts";
import { type AccessControl, AccessDenied, type ResolvedPod } from "./access-control.ts";
import type { AuditLog, AuditRecord, AuditResult } from "./audit.ts";
import { type AccessTarget, type AccessVerb, execArgv } from "./authorize.ts";
import { type LoginName, type PodSelector, parseLoginName, parsePodSelector } from "./login-name.ts";
import { publicKeyBlob } from "./public-key.ts";

export interface BastionOptions {
  access: AccessControl;
  audit: AuditLog;
  /** Opens a stream to a cluster's agent (TunnelServer.openStream). */
  openStream(cluster: string, options: { purpose: string; meta: Record<string, unknown> }): Promise<Duplex>;
  logger?: Logger;
  /** Open sessions and forwards per user; the next is refused. Default 16. */
  maxSessionsPerUser?: number;
  /** A session or forward with no bytes either way for this long is closed. Default 30 min. */
  idleTimeoutMs?: number;
}

/** One open access: a session channel or a forwarded connection. */
interface LiveAccess {
  user: string;
  verb: AccessVerb;
  target: AccessTarget;
  command?: string;
  lastActivity: number;
  /** Ends the access (idempotent); writes its audit line. */
  end(result: AuditResult, error?: string): void;
}

const LEGACY_SCP = /^\s*scp(\s|$)/;

export class Bastion implements UserLogins {
  readonly #options: BastionOptions;
  readonly #log: Logger;
  readonly #live = new Set<LiveAccess>();
  #idleTimer: NodeJS.Timeout | undefined;
  #stopWatching: (() => void) | undefined;
  #rechecking: Promise<void> | undefined;
  #recheckAgain = false;

  constructor(options: BastionOptions) {
    this.#options = options;
    this.#log = options.logger ?? silentLogger;
  }

  /** Starts watching git's objects (revocations end sessions) and idle sessions. */
  async start(): Promise<void> {
    this.#stopWatching = await this.#options.access.onChange(() => this.#scheduleRecheck());
    const idle = this.#options.idleTimeoutMs ?? 30 * 60_000;
    this.#idleTimer = setInterval(
      () => {
        const now = Date.now();
        for (const live of this.#live) {
          if (now - live.lastActivity > idle)
            live.end("error", `idle for more than ${Math.round(idle / 1000)} s`);
        }
      },
      Math.min(10_000, Math.max(100, idle / 4)),
    );
    this.#idleTimer.unref();
  }

  stop(): void {
    this.#stopWatching?.();
    if (this.#idleTimer) clearInterval(this.#idleTimer);
    for (const live of this.#live) live.end("error", "the hub is stopping");
  }

  /** Open accesses now (for tests and metrics). */
  get open(): number {
    return this.#live.size;
  }

  async acceptsKey(login: string, key: { algo: string; data: Buffer }): Promise<boolean> {
    let name: LoginName;
    try {
      name = parseLoginName(login);
    } catch {
      return false;
    }
    const user = await this.#options.access.user(name.user);
    return (user?.spec.sshPublicKeys ?? []).some((line) => publicKeyBlob(line)?.equals(key.data) ?? false);
  }

  onConnection(conn: Connection, login: string, ip: string): void {
    const name = parseLoginName(login);
    conn.on("session", (accept) => this.#session(accept(), name, ip));
    conn.on("tcpip", (accept, reject, info) => {
      void this.#forward(accept, reject, info.destIP, info.destPort, name, ip);
    });
    conn.on("request", (_accept, reject, request) => {
      reject?.();
      if (request === "tcpip-forward")
        this.#refused(name.user, ip, "forward", "", "remote forwarding (-R) is not served");
    });
    conn.on("openssh.streamlocal", (_accept, reject) => reject());
  }

  #session(session: Session, name: LoginName, ip: string): void {
    let pty: { term: string; cols: number; rows: number } | undefined;
    let control: { resize(cols: number, rows: number): void; signal(name: string): void } | undefined;
    let requested = false;
    session.on("pty", (accept, _reject, info) => {
      pty = { term: info.term || "xterm", cols: info.cols || 80, rows: info.rows || 24 };
      accept?.();
    });
    session.on("window-change", (accept, _reject, info) => {
      if (pty) pty = { ...pty, cols: info.cols, rows: info.rows };
      control?.resize(info.cols, info.rows);
      accept?.();
    });
    session.on("signal", (accept, _reject, info) => {
      control?.signal(info.name);
      accept?.();
    });
    session.on("env", (_accept, reject) => reject?.());
    session.on("x11", (_accept, reject) => {
      reject?.();
      this.#refused(name.user, ip, "shell", describe(name), "X11 forwarding is not served");
    });
    session.on("auth-agent", (_accept, reject) => {
      reject?.();
      this.#refused(name.user, ip, "shell", describe(name), "agent forwarding is not served");
    });
    const run = (
      verb: AccessVerb,
      accept: () => ServerChannel,
      reject: () => void,
      command?: string,
    ): void => {
      if (requested) {
        reject();
        return;
      }
      requested = true;
      const channel = accept();
      void this.#run(channel, verb, name, ip, pty, command).then((c) => {
        control = c;
      });
    };
    session.on("shell", (accept, reject) => run("shell", accept, reject));
    session.on("exec", (accept, reject, info) => {
      if (LEGACY_SCP.test(info.command)) {
        reject();
        this.#refused(
          name.user,
          ip,
          "files",
          describe(name),
          "legacy scp (-O) is not served; scp's default SFTP mode is",
        );
        return;
      }
      run("exec", accept, reject, info.command);
    });
    session.on("subsystem", (accept, reject, info) => {
      if (info.name !== "sftp" || requested) return reject();
      requested = true;
      void this.#files(accept(), name, ip);
    });
  }

  /** Resolves and authorizes a pod for `verb`; on refusal tells the channel why, audits, and returns undefined. */
  async #admit(
    channel: ServerChannel | undefined,
    verb: AccessVerb,
    user: string,
    selector: PodSelector | undefined,
    ip: string,
    command?: string,
  ): Promise<{ pod: ResolvedPod; target: AccessTarget } | undefined> {
    const start = new Date().toISOString();
    const deny = (message: string, targetText: string) => {
      this.#audit({
        actor: user,
        ip,
        verb,
        target: targetText,
        start,
        result: "denied",
        error: message,
        command,
      });
      if (channel) {
        channel.stderr.write(`rlark: ${message}\r\n`);
        channel.exit(1);
        channel.end();
      }
      return undefined;
    };
    if (!selector) return deny("name a pod in the login: <user>+<pod>[+<container>]", "");
    const open = [...this.#live].filter((l) => l.user === user).length;
    if (open >= (this.#options.maxSessionsPerUser ?? 16)) {
      return deny(`too many open sessions (${open}); close one first`, describeSelector(selector));
    }
    let pod: ResolvedPod;
    let target: AccessTarget;
    try {
      pod = await this.#options.access.resolvePod(selector);
      target = await this.#options.access.target(pod);
    } catch (error) {
      if (!(error instanceof AccessDenied))
        this.#log.warn("resolving an access target failed", { error: (error as Error).message });
      return deny((error as Error).message, describeSelector(selector));
    }
    const decision = await this.#options.access.decide(user, verb, target, command);
    if (!decision.allowed) return deny(`access denied: ${decision.reason}`, targetName(target));
    return { pod, target };
  }

  async #run(
    channel: ServerChannel,
    verb: AccessVerb,
    name: LoginName,
    ip: string,
    pty: { term: string; cols: number; rows: number } | undefined,
    command?: string,
  ): Promise<{ resize(cols: number, rows: number): void; signal(name: string): void } | undefined> {
    const admitted = await this.#admit(channel, verb, name.user, name.target, ip, command);
    if (!admitted) return undefined;
    const { pod, target } = admitted;
    const argv = command === undefined ? undefined : execArgv(command);
    let stream: Duplex;
    const live = this.#track(name.user, verb, target, ip, name.container, command, () => {
      tell(channel, live.error ?? "session ended");
      stream?.destroy();
    });
    try {
      stream = await this.#options.openStream(pod.cluster, {
        purpose: ACCESS_SESSION_PURPOSE,
        meta: {
          namespace: pod.namespace,
          name: pod.name,
          ...(name.container ? { container: name.container } : {}),
          ...(argv ? { command: argv } : {}),
          ...(pty ? { pty } : {}),
        },
      });
    } catch (error) {
      live.end("error", (error as Error).message);
      return undefined;
    }
    if (live.ended) {
      stream.destroy();
      return undefined;
    }
    live.onClose = () => stream.destroy();
    const send = (type: FrameType, payload?: Buffer | string) => stream.write(encodeFrame(type, payload));
    channel.on("data", (chunk: Buffer) => {
      live.count("in", chunk.length);
      if (!send(FrameType.Stdin, chunk)) {
        channel.pause();
        stream.once("drain", () => channel.resume());
      }
    });
    channel.on("end", () => send(FrameType.Eof));
    channel.on("close", () => live.end("ok"));
    const decoder = new FrameDecoder();
    let exited = false;
    stream.on("data", (chunk: Buffer) => {
      let frames: ReturnType<FrameDecoder["push"]>;
      try {
        frames = decoder.push(chunk);
      } catch (error) {
        live.end("error", (error as Error).message);
        return;
      }
      for (const frame of frames) {
        if (frame.type === FrameType.Stdout || frame.type === FrameType.Stderr) {
          live.count("out", frame.payload.length);
          const out: Writable = frame.type === FrameType.Stdout ? channel : channel.stderr;
          if (!out.write(frame.payload)) {
            stream.pause();
            out.once("drain", () => stream.resume());
          }
        } else if (frame.type === FrameType.Exit) {
          exited = true;
          const status = parseExit(frame.payload);
          if (status.signal) channel.exit(status.signal, false, "");
          else channel.exit(status.code ?? 255);
          channel.end();
          live.end("ok", undefined, status.code);
        }
      }
    });
    stream.on("error", () => {});
    stream.on("close", () => {
      if (!exited) live.end("error", "the agent ended the session");
    });
    return {
      resize: (cols, rows) => send(FrameType.Resize, JSON.stringify({ cols, rows })),
      signal: (signal) => send(FrameType.Signal, signal),
    };
  }

  async #files(channel: ServerChannel, name: LoginName, ip: string): Promise<void> {
    const admitted = await this.#admit(channel, "files", name.user, name.target, ip);
    if (!admitted) return;
    const { pod, target } = admitted;
    await this.#relay(channel, "files", name.user, ip, target, name.container, () =>
      this.#options.openStream(pod.cluster, {
        purpose: ACCESS_FILES_PURPOSE,
        meta: {
          namespace: pod.namespace,
          name: pod.name,
          ...(name.container ? { container: name.container } : {}),
        },
      }),
    );
  }

  async #forward(
    accept: () => ServerChannel,
    reject: () => void,
    destination: string,
    port: number,
    name: LoginName,
    ip: string,
  ): Promise<void> {
    let selector: PodSelector;
    try {
      selector = parsePodSelector(destination);
    } catch (error) {
      reject();
      this.#refused(name.user, ip, "forward", destination, (error as Error).message);
      return;
    }
    const admitted = await this.#admit(undefined, "forward", name.user, selector, ip);
    if (!admitted) return reject();
    const { pod, target } = admitted;
    let stream: Duplex;
    try {
      stream = await this.#options.openStream(pod.cluster, {
        purpose: ACCESS_FORWARD_PURPOSE,
        meta: { namespace: pod.namespace, name: pod.name, port },
      });
    } catch (error) {
      reject();
      this.#audit({
        actor: name.user,
        ip,
        verb: "forward",
        target: `${targetName(target)}:${port}`,
        start: new Date().toISOString(),
        result: "error",
        error: (error as Error).message,
      });
      return;
    }
    const channel = accept();
    await this.#relay(
      channel,
      "forward",
      name.user,
      ip,
      { ...target, pod: `${target.pod}:${port}` },
      undefined,
      async () => stream,
    );
  }

  /** Pipes a channel and an agent stream both ways, counted, bounded and tracked. */
  async #relay(
    channel: ServerChannel,
    verb: AccessVerb,
    user: string,
    ip: string,
    target: AccessTarget,
    container: string | undefined,
    open: () => Promise<Duplex>,
  ): Promise<void> {
    let stream: Duplex | undefined;
    const live = this.#track(user, verb, target, ip, container, undefined, () => {
      channel.close();
      stream?.destroy();
    });
    try {
      stream = await open();
    } catch (error) {
      if (verb === "files") channel.stderr.write(`rlark: ${(error as Error).message}\r\n`);
      live.end("error", (error as Error).message);
      return;
    }
    if (live.ended) {
      stream.destroy();
      return;
    }
    const agent = stream;
    live.onClose = () => agent.destroy();
    relayBytes(channel, agent, (n) => live.count("in", n));
    relayBytes(
      agent,
      channel,
      (n) => live.count("out", n),
      () => {
        // A subsystem ends like OpenSSH's, with status 0 before EOF (scp fails without one).
        if (verb === "files") channel.exit(0);
      },
    );
    channel.on("close", () => live.end("ok"));
    agent.on("error", (error: Error) => live.end("error", error.message));
    agent.on("close", () => {
      // After a clean end the channel may still hold bytes waiting for the client's window:
      // closing it now would drop them, so it closes once they are all written.
      if (channel.writableEnded && !channel.writableFinished) channel.once("finish", () => channel.close());
      else channel.close();
      live.end("ok");
    });
  }

  #track(
    user: string,
    verb: AccessVerb,
    target: AccessTarget,
    ip: string,
    container: string | undefined,
    command: string | undefined,
    close: () => void,
  ): TrackedAccess {
    const start = new Date().toISOString();
    const live: TrackedAccess = {
      user,
      verb,
      target,
      ...(command === undefined ? {} : { command }),
      lastActivity: Date.now(),
      ended: false,
      bytesIn: 0,
      bytesOut: 0,
      count: (direction, n) => {
        live.lastActivity = Date.now();
        if (direction === "in") live.bytesIn += n;
        else live.bytesOut += n;
      },
      end: (result, error, exitCode) => {
        if (live.ended) return;
        live.ended = true;
        if (error) live.error = error;
        this.#live.delete(live);
        this.#audit({
          actor: user,
          ip,
          verb,
          target: `${targetName(target)}${container ? `/${container}` : ""}`,
          ...(command === undefined ? {} : { command }),
          start,
          result,
          bytesIn: live.bytesIn,
          bytesOut: live.bytesOut,
          ...(exitCode === undefined ? {} : { exitCode }),
          ...(error ? { error } : {}),
        });
        if (result !== "ok") close();
        live.onClose?.();
      },
    };
    this.#live.add(live);
    return live;
  }

  #refused(user: string, ip: string, verb: AccessVerb, target: string, error: string): void {
    this.#audit({ actor: user, ip, verb, target, start: new Date().toISOString(), result: "refused", error });
  }

  #audit(entry: {
    actor: string;
    ip: string;
    verb: AccessVerb;
    target: string;
    command?: string;
    start: string;
    result: AuditResult;
    bytesIn?: number;
    bytesOut?: number;
    exitCode?: number;
    error?: string;
  }): void {
    const { command, ...rest } = entry;
    const record: AuditRecord = {
      ...rest,
      ...(command ? { program: execArgv(command)?.[0] ?? command.split(/\s/)[0] ?? "" } : {}),
      via: "ssh",
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

  /** Asks again for every open access; what git no longer grants ends now. */
  async #recheck(): Promise<void> {
    for (const live of [...this.#live]) {
      try {
        const decision = await this.#options.access.decide(live.user, live.verb, live.target, live.command);
        if (!decision.allowed) live.end("revoked", `access revoked: ${decision.reason}`);
      } catch (error) {
        this.#log.warn("re-checking an access failed", { error: (error as Error).message });
      }
    }
  }
}

interface TrackedAccess extends LiveAccess {
  ended: boolean;
  error?: string;
  bytesIn: number;
  bytesOut: number;
  count(direction: "in" | "out", n: number): void;
  end(result: AuditResult, error?: string, exitCode?: number): void;
  onClose?: () => void;
}

/** Copies bytes with backpressure: a slow reader pauses its own writer, nobody else. */
function relayBytes(from: Readable, to: Writable, count: (n: number) => void, beforeEnd = () => {}): void {
  from.on("data", (chunk: Buffer) => {
    count(chunk.length);
    if (!to.write(chunk)) {
      from.pause();
      to.once("drain", () => from.resume());
    }
  });
  from.on("end", () => {
    beforeEnd();
    to.end();
  });
}

/** Tells the client why its session ends, then closes the channel (it may be half gone already). */
function tell(channel: ServerChannel, message: string): void {
  try {
    channel.stderr.write(`\r\nrlark: ${message}\r\n`);
    channel.exit(255);
  } catch {
    // The client went first.
  }
  channel.close();
}

function targetName(target: AccessTarget): string {
  return `${target.cluster}/${target.namespace}/${target.pod}`;
}

function describeSelector(selector: PodSelector): string {
  if (selector.kind === "task") return `task/${selector.task}`;
  return selector.namespace ? `${selector.namespace}/${selector.name}` : selector.name;
}

function describe(name: LoginName): string {
  return name.target ? describeSelector(name.target) : "";
}
