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
import { AGENT_USER_PREFIX, ENROLL_USER, StreamRefused, streamAnswer } from "../../lib/tunnel/index.ts";
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
  /**
   * The agents' byte hop for forwards (ADR 0011): the front's TLS data port (host:port), the
   * hub's certificate over the host key and the CA certificate (PEM files). Off when unset.
   */
  hop?: { listen: string; certPath: string; caPath: string };
}

/** What the agents' byte hop has done since the front started (tests, metrics). */
export interface HopStats {
  /** Forwards joined over the hop. */
  joined: number;
  /** Data-port connections refused (unknown, replayed, expired or foreign tickets; bad TLS). */
  refused: number;
  /** The last refusal's reason. */
  lastRefusal: string | undefined;
  /** Bytes the front reported for joined hops, from the user (in) and to the user (out). */
  bytesIn: number;
  bytesOut: number;
  /** Bytes that came on the agents' tunnel streams of joined hops (none should). */
  streamBytes: number;
}

export interface SshFront {
  listen(port: number, host: string): Promise<number>;
  /** The agents' TLS data port, when the hop is on. */
  readonly hopPort: number | undefined;
  readonly hopStats: HopStats;
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
  const hops = new Map<string, { live: LiveAccess }>();
  const hopStats: HopStats = {
    joined: 0,
    refused: 0,
    lastRefusal: undefined,
    bytesIn: 0,
    bytesOut: 0,
    streamBytes: 0,
  };
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

  /**
   * A ticket for the agent's byte hop, given to the front before the agent hears of it; none when
   * the hop is off or this user's bytes are held to a rate (the hub's relay must then see each
   * byte before it moves: they stay on the data socket).
   */
  const offerHop = (who: Requester, cluster: string): string => {
    if (engine.hopPort === undefined || sessions.rated(who.user)) return "";
    const ticket = randomBytes(16).toString("hex");
    engine.expect(ticket, cluster);
    return ticket;
  };

  /** Whether the agent took the hop it was offered; if not, the front forgets the ticket. */
  const tookHop = (ticket: string, agent: Duplex): boolean => {
    const hop = ticket !== "" && streamAnswer(agent).hop === true;
    if (ticket && !hop) engine.forget(ticket);
    return hop;
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
      const ticket = offerHop(who, pod.cluster);
      let agent: Duplex;
      try {
        agent = await sessions.openStream(pod.cluster, {
          purpose: ACCESS_FILES_PURPOSE,
          meta: {
            namespace: pod.namespace,
            name: pod.name,
            ...(name.container ? { container: name.container } : {}),
            ...(ticket ? { hop: { port: engine.hopPort, ticket } } : {}),
          },
        });
      } catch (error) {
        if (ticket) engine.forget(ticket);
        live.end("error", (error as Error).message);
        return { error: (error as Error).message };
      }
      const hop = tookHop(ticket, agent);
      if (live.ended) {
        agent.destroy();
        return { error: live.error ?? "access ended" };
      }
      if (hop) {
        cut.stream = ticket;
        joinHop(ticket, live, agent);
        return { ticket };
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
      const ticket = offerHop(who, pod.cluster);
      let agent: Duplex;
      try {
        agent = await sessions.openStream(pod.cluster, {
          purpose: ACCESS_FORWARD_PURPOSE,
          meta: {
            namespace: pod.namespace,
            name: pod.name,
            port,
            ...(ticket ? { hop: { port: engine.hopPort, ticket } } : {}),
          },
        });
      } catch (error) {
        if (ticket) engine.forget(ticket);
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
      const hop = tookHop(ticket, agent);
      const live = sessions.track(who, "forward", target, close, { port, slot });
      if (live.ended) {
        agent.destroy();
        return { error: live.error ?? "access ended" };
      }
      if (hop) {
        cut.stream = ticket;
        joinHop(ticket, live, agent);
        return { ticket };
      }
      cut.stream = grant("forward", live, agent);
      return { stream: cut.stream };
    }
    return { error: "not served" };
  };

  /**
   * A forward or SFTP session whose bytes the agent's hop carries to the front: the agent's stream carries none
   * and only marks the hop's life; the front reports the bytes and the end (`hop-closed`).
   */
  const joinHop = (ticket: string, live: LiveAccess, agent: Duplex): void => {
    hops.set(ticket, { live });
    hopStats.joined++;
    live.onEnd(() => {
      hops.delete(ticket);
      agent.destroy();
    });
    // Ended cleanly (EOF first), the hop's last bytes may still be on their way to a slow client:
    // the front's `hop-closed` ends the access. Broken (the agent's hop process died), it is cut.
    let clean = false;
    agent.on("end", () => {
      clean = true;
    });
    agent.on("data", (chunk: Buffer) => {
      hopStats.streamBytes += chunk.length;
    });
    agent.on("error", () => {});
    agent.on("close", () => {
      if (clean || live.ended) return;
      engine.cut(ticket);
      live.end("error", "the agent's hop broke off");
    });
    agent.resume();
  };

  const hopBytes = (m: FrontMessage): LiveAccess | undefined => {
    const entry = hops.get(str(m.ticket));
    const bytesIn = typeof m.in === "number" && m.in > 0 ? m.in : 0;
    const bytesOut = typeof m.out === "number" && m.out > 0 ? m.out : 0;
    hopStats.bytesIn += bytesIn;
    hopStats.bytesOut += bytesOut;
    if (!entry) return undefined;
    if (bytesIn) entry.live.count("in", bytesIn);
    if (bytesOut) entry.live.count("out", bytesOut);
    return entry.live;
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
    ...(options.hop ? { hop: options.hop } : {}),
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
        else if (m.op === "bytes") hopBytes(m);
        else if (m.op === "hop-closed") hopBytes(m)?.end("ok");
        else if (m.op === "hop-refused") {
          hopStats.refused++;
          hopStats.lastRefusal = str(m.reason);
          logger.warn("ssh front: an agent data connection was refused", { reason: str(m.reason) });
        }
      },
      data,
      down() {
        logins.clear();
        for (const entry of hops.values()) entry.live.end("error", "the SSH front restarted");
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
    get hopPort() {
      return engine.hopPort;
    },
    hopStats,
    get pid() {
      return engine.pid;
    },
    get restarts() {
      return engine.restarts;
    },
    close: () => engine.close(),
  };
}
