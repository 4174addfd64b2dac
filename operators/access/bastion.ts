// The user role of the hub's SSH endpoint: OpenSSH clients log in with a key from their User
// object, name a pod in the login (`alice+trainer-0`), and get a shell, an allowlisted command,
// SFTP or TCP forwarding to it, carried over the pod's cluster's agent tunnel. Every request is
// authorized against git's AccessPolicies, audited, and checked again whenever git changes.
import type { Duplex, Writable } from "node:stream";
import type { Connection, ServerChannel, Session } from "ssh2";
import { ACCESS_FILES_PURPOSE, ACCESS_FORWARD_PURPOSE } from "../lib/access-stream/index.ts";
import { StreamRefused, type UserLogins } from "../lib/tunnel/index.ts";
import type { ResolvedPod } from "./access-control.ts";
import type { AccessTarget, AccessVerb } from "./authorize.ts";
import { type LoginName, type PodSelector, parseLoginName, parsePodSelector } from "./login-name.ts";
import { publicKeyBlob } from "./public-key.ts";
import { relayBytes } from "./relay-bytes.ts";
import {
  type AccessSessions,
  describePod,
  type Requester,
  type SessionControl,
  type SessionSlot,
  targetName,
} from "./sessions.ts";

export interface BastionOptions {
  /** The session service the bastion shares with the web terminal and the API's access routes. */
  sessions: AccessSessions;
}

const LEGACY_SCP = /^\s*scp(\s|$)/;

export class Bastion implements UserLogins {
  readonly #sessions: AccessSessions;

  constructor(options: BastionOptions) {
    this.#sessions = options.sessions;
  }

  /** Open accesses now, of every entry point (for tests and metrics). */
  get open(): number {
    return this.#sessions.open();
  }

  async acceptsKey(login: string, key: { algo: string; data: Buffer }): Promise<boolean> {
    let name: LoginName;
    try {
      name = parseLoginName(login);
    } catch {
      return false;
    }
    const user = await this.#sessions.access.user(name.user);
    return (user?.spec.sshPublicKeys ?? []).some((line) => publicKeyBlob(line)?.equals(key.data) ?? false);
  }

  onConnection(conn: Connection, login: string, ip: string, key: { algo: string; data: Buffer }): void {
    const name = parseLoginName(login);
    // Every access of this connection carries its login key: removed from the User, it ends them.
    const who: Requester = { user: name.user, ip, via: "ssh", key: key.data };
    conn.on("session", (accept) => this.#session(accept(), name, who));
    conn.on("tcpip", (accept, reject, info) => {
      void this.#forward(accept, reject, info.destIP, info.destPort, who);
    });
    conn.on("request", (_accept, reject, request) => {
      reject?.();
      if (request === "tcpip-forward")
        this.#refused(who, "forward", "", "remote forwarding (-R) is not served");
    });
    conn.on("openssh.streamlocal", (_accept, reject) => reject());
  }

  #session(session: Session, name: LoginName, who: Requester): void {
    let pty: { term: string; cols: number; rows: number } | undefined;
    let control: SessionControl | undefined;
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
      this.#refused(who, "shell", describe(name), "X11 forwarding is not served");
    });
    session.on("auth-agent", (_accept, reject) => {
      reject?.();
      this.#refused(who, "shell", describe(name), "agent forwarding is not served");
    });
    const run = (
      verb: "shell" | "exec",
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
      void this.#run(channel, verb, name, who, pty, command).then((c) => {
        control = c;
      });
    };
    session.on("shell", (accept, reject) => run("shell", accept, reject));
    session.on("exec", (accept, reject, info) => {
      if (LEGACY_SCP.test(info.command)) {
        reject();
        this.#refused(
          who,
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
      void this.#files(accept(), name, who);
    });
  }

  /** Admits through the session service; a refusal is told on the channel (when there is one). */
  async #admit(
    channel: ServerChannel | undefined,
    who: Requester,
    verb: AccessVerb,
    selector: PodSelector | undefined,
    command?: string,
  ): Promise<{ pod: ResolvedPod; target: AccessTarget; slot: SessionSlot } | undefined> {
    const admission = await this.#sessions.admit(who, verb, selector, command);
    if ("denied" in admission) {
      if (channel) {
        channel.stderr.write(`rlark: ${admission.denied}\r\n`);
        channel.exit(1);
        channel.end();
      }
      return undefined;
    }
    return admission;
  }

  async #run(
    channel: ServerChannel,
    verb: "shell" | "exec",
    name: LoginName,
    who: Requester,
    pty: { term: string; cols: number; rows: number } | undefined,
    command?: string,
  ): Promise<SessionControl | undefined> {
    const admitted = await this.#admit(channel, who, verb, name.target, command);
    if (!admitted) return undefined;
    let control: SessionControl | undefined;
    control = await this.#sessions.runSession(
      {
        ...who,
        verb,
        ...admitted,
        ...(name.container ? { container: name.container } : {}),
        ...(command === undefined ? {} : { command }),
        ...(pty ? { pty } : {}),
      },
      {
        output: (kind, data) => {
          const out: Writable = kind === "stdout" ? channel : channel.stderr;
          const more = out.write(data);
          if (!more) out.once("drain", () => control?.resume());
          return more;
        },
        exit: (status) => {
          if (status.signal) channel.exit(status.signal, false, "");
          else channel.exit(status.code ?? 255);
          channel.end();
        },
        broken: (error) => tell(channel, error),
      },
    );
    if (!control) return undefined;
    const session = control;
    channel.on("data", (chunk: Buffer) => {
      if (!session.input(chunk)) {
        channel.pause();
        session.drained(() => channel.resume());
      }
    });
    channel.on("end", () => session.eof());
    channel.on("close", () => session.close());
    return session;
  }

  async #files(channel: ServerChannel, name: LoginName, who: Requester): Promise<void> {
    const admitted = await this.#admit(channel, who, "files", name.target);
    if (!admitted) return;
    const { pod, target, slot } = admitted;
    await this.#relay(
      channel,
      "files",
      who,
      target,
      { ...(name.container ? { container: name.container } : {}), slot },
      () =>
        this.#sessions.openStream(pod.cluster, {
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
    who: Requester,
  ): Promise<void> {
    let selector: PodSelector;
    try {
      selector = parsePodSelector(destination);
    } catch (error) {
      reject();
      this.#refused(who, "forward", destination, (error as Error).message);
      return;
    }
    const admitted = await this.#admit(undefined, who, "forward", selector);
    if (!admitted) return reject();
    const { pod, target, slot } = admitted;
    let stream: Duplex;
    try {
      stream = await this.#sessions.openStream(pod.cluster, {
        purpose: ACCESS_FORWARD_PURPOSE,
        meta: { namespace: pod.namespace, name: pod.name, port },
      });
    } catch (error) {
      slot.release();
      reject();
      this.#sessions.audit(who, {
        verb: "forward",
        target: `${targetName(target)}:${port}`,
        start: new Date().toISOString(),
        // The agent's own check (a port the pod does not hold) refuses; anything else failed.
        result: error instanceof StreamRefused ? "refused" : "error",
        error: (error as Error).message,
      });
      return;
    }
    const channel = accept();
    await this.#relay(channel, "forward", who, target, { port, slot }, async () => stream);
  }

  /** Pipes a channel and an agent stream both ways, counted, bounded and tracked. */
  async #relay(
    channel: ServerChannel,
    verb: AccessVerb,
    who: Requester,
    target: AccessTarget,
    extra: { container?: string; port?: number; slot?: SessionSlot },
    open: () => Promise<Duplex>,
  ): Promise<void> {
    let stream: Duplex | undefined;
    const live = this.#sessions.track(
      who,
      verb,
      target,
      () => {
        channel.close();
        stream?.destroy();
      },
      extra,
    );
    try {
      stream = await open();
    } catch (error) {
      if (verb === "files") channel.stderr.write(`rlark: ${(error as Error).message}\r\n`);
      live.end("error", (error as Error).message);
      return;
    }
    const agent = stream;
    if (live.ended) {
      agent.destroy();
      return;
    }
    live.onEnd(() => agent.destroy());
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

  #refused(who: Requester, verb: AccessVerb, target: string, error: string): void {
    this.#sessions.audit(who, { verb, target, start: new Date().toISOString(), result: "refused", error });
  }
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

function describe(name: LoginName): string {
  return name.target ? describePod(name.target) : "";
}
