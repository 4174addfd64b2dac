// The decisions behind the bastion's Go SSH front (ADR 0011): `rlark-net ssh-front` terminates
// users' SSH and asks here about every key and every channel; this module answers with the same
// checks the ssh2 bastion makes (bastion.ts): the key must be one of the login's User's keys,
// every SFTP session and forward passes the session service's admission (AccessPolicy, team,
// limits), is tracked (revocation, idle time, byte rate) and audited. A granted channel's bytes
// come back on a data connection of their own, which is relayed to the pod's agent stream here.
import { randomBytes } from "node:crypto";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { ACCESS_FILES_PURPOSE, ACCESS_FORWARD_PURPOSE } from "../../lib/access-stream/index.ts";
import type { Logger } from "../../lib/logger.ts";
import { AGENT_USER_PREFIX, ENROLL_USER, StreamRefused } from "../../lib/tunnel/index.ts";
import type { Bastion } from "../bastion.ts";
import { type LoginName, parseLoginName, parsePodSelector } from "../login-name.ts";
import { relayBytes } from "../relay-bytes.ts";
import { type AccessSessions, type LiveAccess, type Requester, targetName } from "../sessions.ts";
import { createFrontEngine, type FrontEngine, type FrontMessage } from "./engine.ts";

/** A granted stream the Go side has this long to bring its data connection for. */
const STREAM_TTL_MS = 10_000;

export interface SshFrontOptions {
  sessions: AccessSessions;
  /** The ssh2 bastion: its key check is the one this front asks. */
  bastion: Bastion;
  /** The rlark-net binary. */
  binary: string;
  dataDir: string;
  /** PEM of the hub's SSH host key (the same key the ssh2 port presents). */
  hostKeyPath: string;
  logger: Logger;
}

export interface SshFront {
  listen(port: number, host: string): Promise<number>;
  readonly pid: number | undefined;
  readonly restarts: number;
  close(): Promise<void>;
}

interface Login {
  name: LoginName;
  who: Requester;
}

interface Granted {
  live: LiveAccess;
  agent: Duplex;
  verb: "files" | "forward";
  timer: NodeJS.Timeout;
}

const str = (v: unknown): string => (typeof v === "string" ? v : "");

export function createSshFront(options: SshFrontOptions): SshFront {
  const { sessions, bastion, logger } = options;
  const logins = new Map<number, Login>();
  const granted = new Map<string, Granted>();
  let engine: FrontEngine;

  const refused = (who: Requester, verb: "files" | "forward" | "shell", target: string, error: string) =>
    sessions.audit(who, { verb, target, start: new Date().toISOString(), result: "refused", error });

  const acceptsKey = async (m: FrontMessage): Promise<boolean> => {
    const login = str(m.login);
    // The agents' and enrollment's logins are the ssh2 port's; this port serves people only.
    if (login.startsWith(AGENT_USER_PREFIX) || login === ENROLL_USER) return false;
    const data = Buffer.from(str(m.key), "base64");
    if (data.length === 0) return false;
    return bastion.acceptsKey(login, { algo: str(m.algo), data });
  };

  const grant = (verb: "files" | "forward", live: LiveAccess, agent: Duplex): string => {
    const stream = randomBytes(16).toString("hex");
    const timer = setTimeout(() => {
      if (!granted.delete(stream)) return;
      agent.destroy();
      live.end("error", "the SSH front did not take the stream");
    }, STREAM_TTL_MS);
    granted.set(stream, { live, agent, verb, timer });
    live.onEnd(() => {
      const waiting = granted.get(stream);
      if (waiting) {
        clearTimeout(waiting.timer);
        granted.delete(stream);
      }
      agent.destroy();
    });
    return stream;
  };

  const open = async (m: FrontMessage): Promise<Record<string, unknown>> => {
    const login = logins.get(Number(m.conn));
    if (!login) return { error: "no such connection" };
    const { name, who } = login;
    const cut = { stream: "" };
    const close = () => {
      if (cut.stream) engine.cut(cut.stream);
    };
    if (m.kind === "files") {
      const admission = await sessions.admit(who, "files", name.target);
      if ("denied" in admission) return { error: admission.denied };
      const { pod, target, slot } = admission;
      const live = sessions.track(who, "files", target, close, {
        ...(name.container ? { container: name.container } : {}),
        slot,
      });
      let agent: Duplex;
      try {
        agent = await sessions.openStream(pod.cluster, {
          purpose: ACCESS_FILES_PURPOSE,
          meta: {
            namespace: pod.namespace,
            name: pod.name,
            ...(name.container ? { container: name.container } : {}),
          },
        });
      } catch (error) {
        live.end("error", (error as Error).message);
        return { error: (error as Error).message };
      }
      if (live.ended) {
        agent.destroy();
        return { error: live.error ?? "access ended" };
      }
      cut.stream = grant("files", live, agent);
      return { stream: cut.stream };
    }
    if (m.kind === "forward") {
      const destination = str(m.host);
      const port = typeof m.port === "number" ? m.port : 0;
      let selector: ReturnType<typeof parsePodSelector>;
      try {
        selector = parsePodSelector(destination);
      } catch (error) {
        refused(who, "forward", destination, (error as Error).message);
        return { error: (error as Error).message };
      }
      const admission = await sessions.admit(who, "forward", selector);
      if ("denied" in admission) return { error: admission.denied };
      const { pod, target, slot } = admission;
      let agent: Duplex;
      try {
        agent = await sessions.openStream(pod.cluster, {
          purpose: ACCESS_FORWARD_PURPOSE,
          meta: { namespace: pod.namespace, name: pod.name, port },
        });
      } catch (error) {
        slot.release();
        sessions.audit(who, {
          verb: "forward",
          target: `${targetName(target)}:${port}`,
          start: new Date().toISOString(),
          // The agent's own check (a port the pod does not hold) refuses; anything else failed.
          result: error instanceof StreamRefused ? "refused" : "error",
          error: (error as Error).message,
        });
        return { error: (error as Error).message };
      }
      const live = sessions.track(who, "forward", target, close, { port, slot });
      if (live.ended) {
        agent.destroy();
        return { error: live.error ?? "access ended" };
      }
      cut.stream = grant("forward", live, agent);
      return { stream: cut.stream };
    }
    return { error: "not served" };
  };

  /** The data connection of a granted stream: relayed to the agent, counted, bounded, tracked. */
  const data = (stream: string, socket: Socket): void => {
    const entry = granted.get(stream);
    if (!entry) {
      socket.destroy();
      return;
    }
    granted.delete(stream);
    clearTimeout(entry.timer);
    const { live, agent } = entry;
    // An access ended by the service (revoked, idle, limits) or by an error goes at once; one that
    // ended by itself keeps its socket until the last bytes are written.
    live.onEnd((result) => {
      if (result !== "ok") socket.destroy();
    });
    relayBytes(socket, agent, (n) => live.count("in", n));
    relayBytes(agent, socket, (n) => live.count("out", n));
    socket.resume();
    socket.on("close", () => live.end("ok"));
    agent.on("error", (error: Error) => live.end("error", error.message));
    agent.on("close", () => {
      // Ended cleanly, the socket carries its last bytes to the front, which then ends the
      // channel (with exit status 0 for SFTP); closed abruptly, the channel is cut.
      if (!socket.writableEnded) {
        engine.cut(stream);
        socket.destroy();
        live.end("ok");
      } else if (socket.writableFinished) live.end("ok");
      else socket.once("finish", () => live.end("ok"));
    });
  };

  engine = createFrontEngine({
    binary: options.binary,
    dataDir: options.dataDir,
    hostKeyPath: options.hostKeyPath,
    logger,
    handlers: {
      async ask(m) {
        if (m.op === "key") return { ok: await acceptsKey(m) };
        return open(m);
      },
      tell(m) {
        const conn = Number(m.conn);
        if (m.op === "login") {
          let name: LoginName;
          try {
            name = parseLoginName(str(m.login));
          } catch {
            engine.end(conn);
            return;
          }
          const key = Buffer.from(str(m.key), "base64");
          logins.set(conn, { name, who: { user: name.user, ip: str(m.remote), via: "ssh", key } });
        } else if (m.op === "refused") {
          const login = logins.get(conn);
          const verb = m.verb === "files" || m.verb === "forward" ? m.verb : "shell";
          if (login) refused(login.who, verb, "", str(m.reason));
        } else if (m.op === "closed") logins.delete(conn);
      },
      data,
      down() {
        logins.clear();
        for (const [stream, entry] of granted) {
          granted.delete(stream);
          clearTimeout(entry.timer);
          entry.live.end("error", "the SSH front restarted");
        }
      },
    },
  });
  return {
    listen: (port, host) => engine.listen(port, host),
    get pid() {
      return engine.pid;
    },
    get restarts() {
      return engine.restarts;
    },
    close: () => engine.close(),
  };
}
