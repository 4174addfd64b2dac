import { type AddressInfo, createServer, type Server as NetServer, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import ssh2, { type AuthContext, type Connection, type PublicKeyAuthContext, type ServerChannel } from "ssh2";
import { type Clock, systemClock, type TimerId } from "../clock.ts";
import { type Logger, silentLogger } from "../logger.ts";
import {
  type CertificateAuthority,
  type Identity,
  type IssuedCertificate,
  sshPublicKeyBlob,
  sshPublicKeyLine,
} from "../pki/index.ts";
import { AgentSession } from "./agent-session.ts";
import { coalesceWrites } from "./coalesce-writes.ts";
import { DEFAULT_MAX_STARTUPS, dropsStartup, type MaxStartups } from "./max-startups.ts";
import { MessageChannel } from "./message-channel.ts";
import { encodeLine, readLine } from "./ndjson.ts";
import {
  type AgentMessage,
  type EnrollRequest,
  type EnrollResponse,
  type HubMessage,
  parseAgentMessage,
  parseEnrollRequest,
} from "./protocol.ts";
import { type RequestOptions, requestOverStream } from "./request-stream.ts";
import {
  AGENT_SUBSYSTEM,
  AGENT_USER_PREFIX,
  CIPHERS,
  certFromAgentUsername,
  DEFAULT_HEARTBEAT_MS,
  DEFAULT_KEEPALIVE_COUNT_MAX,
  DEFAULT_KEEPALIVE_MS,
  DEFAULT_MISSED_HEARTBEATS,
  ENROLL_SUBSYSTEM,
  ENROLL_USER,
  IDENTITY_MARKER,
  MACS,
  STREAM_BIND_ADDR,
  STREAM_BIND_PORT,
} from "./ssh-options.ts";
import { STREAM_ANSWER, STREAM_HEADER_LIMIT, StreamRefused } from "./streams.ts";

export type ClusterState = "Online" | "Offline";

/** What the hub's enrollment glue provides (operators/hub/enrollment.ts). */
export interface EnrollmentHandler {
  /** Checks a bootstrap token; returns its cluster or throws. */
  redeem(token: string): Promise<string> | string;
  /**
   * Issues the agent certificate for `cluster` over `publicKeyPem` with `token` (redeemed): the
   * token's first key is certified, again with the same certificate on a retry; other keys throw.
   */
  issue(cluster: string, publicKeyPem: string, token: string): Promise<string> | string;
}

/**
 * The user role of the endpoint (the SSH bastion, operators/access): logins that are neither an
 * agent's certificate nor enrollment. Agents keep their own namespace: a login with the agent
 * prefix never reaches this handler.
 */
export interface UserLogins {
  /** Whether `login` may log in with this public key (SSH wire format). */
  acceptsKey(login: string, key: { algo: string; data: Buffer }): Promise<boolean> | boolean;
  /**
   * A user has logged in with `key`: from now on the handler serves the connection's channels and
   * requests (and may end what it opens when that key is no longer the user's).
   */
  onConnection(conn: Connection, login: string, ip: string, key: { algo: string; data: Buffer }): void;
}

export interface TunnelServerOptions {
  /** PKCS#1 PEM of the SSH host key. */
  hostKey: string;
  /** Role `hub` certificate over the host key, sent to agents so they can check it against the CA. */
  hostCert: string;
  ca: Pick<CertificateAuthority, "certPem" | "verify" | "issue">;
  /** Defaults to `ca.verify`; the hook lets the hub add its own checks (e.g. cluster still declared). */
  verify?: CertificateAuthority["verify"];
  /** Called after a valid hello; the hub sends the snapshot and wires the session to the store. */
  onAgentSession(session: AgentSession): void;
  onClusterState?(cluster: string, state: ClusterState): void;
  enrollment?: EnrollmentHandler;
  users?: UserLogins;
  /** Lifetime of certificates issued on renewal. */
  renewTtlMs?: number;
  /** At most one renewal per session in this interval: signing is CPU the agent must not burn. */
  renewMinIntervalMs?: number;
  /** An authenticated channel that does not say hello within this time is closed. */
  helloTimeoutMs?: number;
  /**
   * A connection that has not logged in within this time is closed (OpenSSH's LoginGraceTime;
   * default 20 s: room for a person to type a key's passphrase, which happens before login).
   */
  authTimeoutMs?: number;
  /** Failed logins per connection; the next attempt ends it (default 6, as OpenSSH's MaxAuthTries). */
  maxAuthTries?: number;
  /** Connections not yet logged in per source address (OpenSSH's PerSourceMaxStartups; default 3). */
  maxUnauthenticatedPerAddress?: number;
  /** Connections not yet logged in, in all: random early drop (OpenSSH's MaxStartups; default 40:30:120). */
  maxStartups?: MaxStartups;
  /** The draw of the random early drop (tests pin it). */
  random?: () => number;
  clock?: Clock;
  logger?: Logger;
  heartbeatIntervalMs?: number;
  missedHeartbeats?: number;
  keepaliveIntervalMs?: number;
  keepaliveCountMax?: number;
  maxLineBytes?: number;
  maxQueuedBytes?: number;
}

export interface OpenStreamOptions {
  purpose: string;
  meta?: Record<string, unknown>;
}

interface AgentAuth {
  kind: "agent";
  identity: Identity;
  certPem: string;
}
interface UserAuth {
  kind: "user";
  login: string;
  key: { algo: string; data: Buffer };
}
interface EnrollAuth {
  kind: "enroll";
  cluster: string;
  /** Kept for issue(), which binds the token to the key it certifies. */
  token: string;
  used: boolean;
}
type ConnState = {
  auth?: AgentAuth | EnrollAuth | UserAuth;
  streams: boolean;
  agentChannel: boolean;
  failedLogins: number;
  preAuth: PreAuth | undefined;
};

/** A socket that has not logged in yet: it holds a slot until it does, closes, or times out. */
interface PreAuth {
  key: string;
  socket: Socket;
  ip: string;
  timer: NodeJS.Timeout;
}

interface Liveness {
  lastSeen: number;
  state: ClusterState;
}

const DAY = 24 * 60 * 60 * 1000;

/**
 * The hub's SSH endpoint: one ssh2 server for every role. Agents authenticate with their
 * certificate's key (the certificate rides in the username); enrollment uses
 * keyboard-interactive under the user `enroll`. See docs/adr/0002-tunnel.md.
 */
export class TunnelServer {
  #options: TunnelServerOptions;
  #verify: CertificateAuthority["verify"];
  #clock: Clock;
  #log: Logger;
  #heartbeatMs: number;
  #missed: number;
  #ssh: InstanceType<typeof ssh2.Server>;
  #net: NetServer;
  #sockets = new Set<Socket>();
  /** By `ip:port`, the key ssh2's connection info lets us find again. */
  #preAuth = new Map<string, PreAuth>();
  #preAuthPerIp = new Map<string, number>();
  #lastLimitWarning = Number.NEGATIVE_INFINITY;
  #sessions = new Map<string, AgentSession>();
  #streamConns = new Map<string, Connection>();
  #liveness = new Map<string, Liveness>();
  #tick: TimerId | undefined;
  #closed = false;

  constructor(options: TunnelServerOptions) {
    this.#options = options;
    this.#verify = options.verify ?? ((cert, expect) => options.ca.verify(cert, expect));
    this.#clock = options.clock ?? systemClock;
    this.#log = options.logger ?? silentLogger;
    this.#heartbeatMs = options.heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_MS;
    this.#missed = options.missedHeartbeats ?? DEFAULT_MISSED_HEARTBEATS;
    this.#ssh = new ssh2.Server(
      {
        hostKeys: [options.hostKey],
        algorithms: { cipher: CIPHERS, hmac: MACS },
        keepaliveInterval: options.keepaliveIntervalMs ?? DEFAULT_KEEPALIVE_MS,
        keepaliveCountMax: options.keepaliveCountMax ?? DEFAULT_KEEPALIVE_COUNT_MAX,
        ident: "rlark-hub",
      },
      (conn, info) => this.#onConnection(conn, info.ip, info.port),
    );
    // Our own listener so every socket gets TCP_NODELAY: without it Nagle delays ssh2's window
    // adjustments and throughput drops from ~230 to ~40 MB/s (measured, ARCHITECTURE.md).
    this.#net = createServer((socket) => {
      if (!this.#admit(socket)) return;
      socket.setNoDelay(true);
      coalesceWrites(socket);
      this.#sockets.add(socket);
      socket.once("close", () => this.#sockets.delete(socket));
      this.#ssh.injectSocket(socket);
    });
  }

  /**
   * Takes a pre-login slot for a new socket, or destroys it at once when its address or the
   * whole endpoint holds too many: a flood of idle or half-handshake connections would
   * otherwise hold file descriptors and memory without ever logging in.
   */
  #admit(socket: Socket): boolean {
    const ip = socket.remoteAddress ?? "";
    const key = `${ip}:${socket.remotePort}`;
    const perIp = this.#preAuthPerIp.get(ip) ?? 0;
    if (
      perIp >= (this.#options.maxUnauthenticatedPerAddress ?? 3) ||
      dropsStartup(
        this.#preAuth.size,
        this.#options.maxStartups ?? DEFAULT_MAX_STARTUPS,
        this.#options.random,
      )
    ) {
      socket.destroy();
      // One line per 10 s at most: the refusals themselves must not flood the log.
      const now = Date.now();
      if (now - this.#lastLimitWarning > 10_000) {
        this.#lastLimitWarning = now;
        this.#log.warn("refusing connections: too many not logged in", {
          ip,
          fromAddress: perIp,
          total: this.#preAuth.size,
        });
      }
      return false;
    }
    const timeoutMs = this.#options.authTimeoutMs ?? 20_000;
    const timer = setTimeout(() => {
      this.#log.warn("closing a connection that did not log in in time", { ip, timeoutMs });
      socket.destroy();
    }, timeoutMs);
    timer.unref();
    this.#preAuth.set(key, { key, socket, ip, timer });
    this.#preAuthPerIp.set(ip, perIp + 1);
    socket.once("close", () => this.#leavePreAuth(key));
    return true;
  }

  /** Frees a socket's pre-login slot: it logged in or went away. */
  #leavePreAuth(key: string): void {
    const entry = this.#preAuth.get(key);
    if (!entry) return;
    clearTimeout(entry.timer);
    this.#preAuth.delete(key);
    const left = (this.#preAuthPerIp.get(entry.ip) ?? 1) - 1;
    if (left > 0) this.#preAuthPerIp.set(entry.ip, left);
    else this.#preAuthPerIp.delete(entry.ip);
  }

  listen(port = 2222, host = "0.0.0.0"): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      this.#net.once("error", reject);
      this.#net.listen(port, host, () => {
        this.#net.off("error", reject);
        this.#scheduleTick();
        resolve(this.#net.address() as AddressInfo);
      });
    });
  }

  address(): AddressInfo {
    return this.#net.address() as AddressInfo;
  }

  /** Clusters with a live session now. */
  get clusters(): string[] {
    return [...this.#sessions.keys()].sort();
  }

  session(cluster: string): AgentSession | undefined {
    return this.#sessions.get(cluster);
  }

  clusterState(cluster: string): ClusterState | undefined {
    return this.#liveness.get(cluster)?.state;
  }

  /** Stops listening and drops every connection. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#tick) this.#clock.clearTimeout(this.#tick);
    for (const session of this.#sessions.values()) session.close();
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.#net.close(() => resolve()));
  }

  /**
   * Opens a stream channel to a cluster's agent for `purpose` (e.g. `logs`); resolves once
   * the agent has connected its end, with a Duplex carrying the raw bytes.
   */
  openStream(cluster: string, options: OpenStreamOptions): Promise<Duplex> {
    const conn = this.#streamConns.get(cluster);
    if (!conn) return Promise.reject(new Error(`cluster ${cluster} has no agent connected for streams`));
    return new Promise((resolve, reject) => {
      conn.forwardOut(STREAM_BIND_ADDR, STREAM_BIND_PORT, options.purpose, 0, (err, channel) => {
        if (err) {
          reject(new Error(`agent of ${cluster} refused a ${options.purpose} stream: ${err.message}`));
          return;
        }
        channel.write(encodeLine({ purpose: options.purpose, meta: options.meta ?? {} }));
        readLine(channel, STREAM_HEADER_LIMIT).then(
          (line) => {
            let answer: { ok?: unknown; error?: unknown; refused?: unknown } | undefined;
            try {
              answer = JSON.parse(line) as { ok?: unknown; error?: unknown; refused?: unknown };
            } catch {
              answer = undefined;
            }
            if (answer?.ok === true) {
              const {
                ok: _ok,
                error: _error,
                refused: _refused,
                ...extra
              } = answer as Record<string, unknown>;
              if (Object.keys(extra).length > 0)
                (channel as unknown as Record<symbol, unknown>)[STREAM_ANSWER] = extra;
              resolve(channel);
              return;
            }
            channel.destroy();
            const message = `agent of ${cluster} could not open ${options.purpose}: ${String(answer?.error ?? "bad answer")}`;
            reject(answer?.refused === true ? new StreamRefused(message) : new Error(message));
          },
          (e: Error) => {
            channel.destroy();
            reject(new Error(`agent of ${cluster} closed the ${options.purpose} stream: ${e.message}`));
          },
        );
      });
    });
  }

  /** Sends one JSON request to a cluster's agent for `purpose`; resolves with its answer, unparsed. */
  async request(
    cluster: string,
    purpose: string,
    body: unknown,
    options: RequestOptions = {},
  ): Promise<unknown> {
    return requestOverStream(await this.openStream(cluster, { purpose }), body, options);
  }

  #onConnection(conn: Connection, ip: string, port: number): void {
    const preAuthKey = `${ip}:${port}`;
    const state: ConnState = {
      streams: false,
      agentChannel: false,
      failedLogins: 0,
      preAuth: this.#preAuth.get(preAuthKey),
    };
    conn.on("error", (err: Error) => this.#log.warn("ssh connection error", { ip, error: err.message }));
    conn.on("authentication", (ctx) => this.#authenticate(ctx, state, ip, conn));
    conn.on("session", (accept, reject) => {
      if (!state.auth) return reject();
      if (state.auth.kind === "user") return; // the user role's handler answers
      const session = accept();
      session.on("subsystem", (acceptSub, rejectSub, info) => {
        const auth = state.auth;
        if (auth?.kind === "agent" && info.name === AGENT_SUBSYSTEM && !state.agentChannel) {
          // One session channel per connection: a cluster's state has one writer.
          state.agentChannel = true;
          this.#agentChannel(acceptSub(), conn, auth);
        } else if (auth?.kind === "enroll" && info.name === ENROLL_SUBSYSTEM && !auth.used) {
          auth.used = true;
          this.#enrollChannel(acceptSub(), conn, auth);
        } else {
          rejectSub();
        }
      });
    });
    conn.on("request", (accept, reject, name, info) => {
      const auth = state.auth;
      if (auth?.kind === "user") return; // the user role's handler answers
      const isStreams =
        name === "tcpip-forward" &&
        auth?.kind === "agent" &&
        (info as { bindAddr?: string }).bindAddr === STREAM_BIND_ADDR;
      if (!isStreams || !auth || auth.kind !== "agent") {
        reject?.();
        return;
      }
      state.streams = true;
      this.#streamConns.set(auth.identity.cluster ?? auth.identity.name, conn);
      accept?.(STREAM_BIND_PORT);
    });
    conn.on("close", () => {
      const auth = state.auth;
      if (auth?.kind === "agent") {
        const cluster = auth.identity.cluster ?? auth.identity.name;
        if (this.#streamConns.get(cluster) === conn) this.#streamConns.delete(cluster);
      }
    });
  }

  #authMethods(): Array<"publickey" | "keyboard-interactive"> {
    return this.#options.enrollment ? ["publickey", "keyboard-interactive"] : ["publickey"];
  }

  #authenticate(ctx: AuthContext, state: ConnState, ip: string, conn: Connection): void {
    if (this.#closed) {
      ctx.reject();
      return;
    }
    if (state.failedLogins >= (this.#options.maxAuthTries ?? 6)) {
      this.#log.warn("closing a connection after too many failed logins", { ip, failed: state.failedLogins });
      conn.end();
      state.preAuth?.socket.destroy();
      return;
    }
    // "none" is how clients ask which methods exist; it is not a guess.
    const reject = () => {
      if (ctx.method !== "none") state.failedLogins++;
      ctx.reject(this.#authMethods());
    };
    const accept = (auth: AgentAuth | EnrollAuth | UserAuth) => {
      state.auth = auth;
      const users = this.#options.users;
      if (auth.kind === "user" && users)
        conn.once("ready", () => users.onConnection(conn, auth.login, ip, auth.key));
      if (state.preAuth) this.#leavePreAuth(state.preAuth.key);
      ctx.accept();
    };
    if (ctx.method === "publickey") {
      const certPem = certFromAgentUsername(ctx.username);
      if (!certPem) {
        if (this.#options.users && !ctx.username.startsWith(AGENT_USER_PREFIX)) {
          this.#authenticateUser(ctx, this.#options.users, ip, reject, accept);
        } else {
          reject();
        }
        return;
      }
      let identity: Identity;
      try {
        identity = this.#verify(certPem, { role: "agent" });
        if (!identity.cluster) throw new Error("agent certificate names no cluster");
        if (!sshPublicKeyBlob(identity.publicKeyPem).equals(ctx.key.data)) {
          throw new Error("the key offered is not the certificate's key");
        }
      } catch (err) {
        this.#log.warn("agent refused", { ip, reason: (err as Error).message });
        reject();
        return;
      }
      if (!ctx.signature || !ctx.blob) {
        ctx.accept(); // key probe: "would you accept this key?"
        return;
      }
      const key = ssh2.utils.parseKey(sshPublicKeyLine(identity.publicKeyPem));
      if (key instanceof Error || !key.verify(ctx.blob, ctx.signature, ctx.hashAlgo)) {
        this.#log.warn("agent refused: bad signature", { ip, cluster: identity.cluster });
        reject();
        return;
      }
      accept({ kind: "agent", identity, certPem });
      return;
    }
    const enrollment = this.#options.enrollment;
    if (ctx.method === "keyboard-interactive" && ctx.username === ENROLL_USER && enrollment) {
      // The hub's identity goes out before the token comes back: the agent checks the CA
      // fingerprint and the host-key certificate here and hangs up on a mismatch.
      const instructions = `${IDENTITY_MARKER}\n${this.#options.ca.certPem.trim()}\n${this.#options.hostCert.trim()}\n`;
      ctx.prompt(
        [{ prompt: "bootstrap token: ", echo: false }],
        "rlark hub enrollment",
        instructions,
        (answers) => {
          const token = Array.isArray(answers) ? answers[0] : undefined;
          if (typeof token !== "string" || token === "") {
            reject();
            return;
          }
          Promise.resolve()
            .then(() => enrollment.redeem(token))
            .then(
              (cluster) => {
                this.#log.info("bootstrap token redeemed", { ip, cluster });
                accept({ kind: "enroll", cluster, token, used: false });
              },
              (err: Error) => {
                this.#log.warn("bootstrap token refused", { ip, reason: err.message });
                reject();
              },
            );
        },
      );
      return;
    }
    reject();
  }

  #authenticateUser(
    ctx: PublicKeyAuthContext,
    users: UserLogins,
    ip: string,
    reject: () => void,
    accept: (auth: UserAuth) => void,
  ): void {
    const login = ctx.username;
    Promise.resolve()
      .then(() => users.acceptsKey(login, ctx.key))
      .then(
        (known) => {
          if (!known) {
            this.#log.warn("user refused: key not listed for this user", { ip, login });
            reject();
            return;
          }
          if (!ctx.signature || !ctx.blob) {
            ctx.accept(); // key probe: "would you accept this key?"
            return;
          }
          const type = keyType(ctx.key.data);
          const key = type ? ssh2.utils.parseKey(`${type} ${ctx.key.data.toString("base64")}`) : undefined;
          if (!key || key instanceof Error || !key.verify(ctx.blob, ctx.signature, ctx.hashAlgo)) {
            this.#log.warn("user refused: bad signature", { ip, login });
            reject();
            return;
          }
          accept({ kind: "user", login, key: { algo: ctx.key.algo, data: Buffer.from(ctx.key.data) } });
        },
        (err: Error) => {
          this.#log.warn("user refused", { ip, login, reason: err.message });
          reject();
        },
      );
  }

  #agentChannel(stream: ServerChannel, conn: Connection, auth: AgentAuth): void {
    const cluster = auth.identity.cluster ?? auth.identity.name;
    const channel = new MessageChannel<AgentMessage, HubMessage>(stream, {
      parse: parseAgentMessage,
      ...(this.#options.maxLineBytes ? { maxLineBytes: this.#options.maxLineBytes } : {}),
      ...(this.#options.maxQueuedBytes ? { maxQueuedBytes: this.#options.maxQueuedBytes } : {}),
    });
    channel.send({
      type: "welcome",
      hostCert: this.#options.hostCert,
      heartbeatIntervalMs: this.#heartbeatMs,
    });
    let session: AgentSession | undefined;
    let lastRenewal = Number.NEGATIVE_INFINITY;
    const helloTimer = this.#clock.setTimeout(() => {
      if (!session) refuse("no hello in time");
    }, this.#options.helloTimeoutMs ?? 30_000);
    const refuse = (message: string) => {
      this.#log.warn("agent session refused", { cluster, reason: message });
      channel.send({ type: "error", message });
      channel.close();
      conn.end();
    };
    channel.on("invalid", (err) =>
      this.#log.warn("invalid message from agent", { cluster, error: err.message }),
    );
    channel.on("message", (message) => {
      if (!session) {
        if (message.type !== "hello") return refuse(`expected hello, got ${message.type}`);
        if (message.cluster !== cluster) {
          return refuse(`this certificate is for cluster ${cluster}; hello names ${message.cluster}`);
        }
        session = new AgentSession(channel, auth.identity, auth.certPem, message);
        this.#clock.clearTimeout(helloTimer);
        const previous = this.#sessions.get(cluster);
        this.#sessions.set(cluster, session);
        // One agent per cluster: the newest connection wins (the old one is usually half-open).
        previous?.close();
        this.#seen(cluster);
        this.#log.info("agent connected", { cluster, bootId: message.bootId, version: message.agentVersion });
        this.#options.onAgentSession(session);
        return;
      }
      if (message.type === "hello") return refuse("hello sent twice");
      this.#seen(cluster);
      if (message.type === "ack") session.recordAck(message.generation);
      if (message.type === "renew") {
        const now = this.#clock.now();
        if (now - lastRenewal < (this.#options.renewMinIntervalMs ?? 60_000)) {
          channel.send({ type: "error", message: "renewal refused: asked again too soon" });
        } else {
          lastRenewal = now;
          this.#renew(channel, auth, message.publicKey);
        }
      }
      session.emit("message", message);
    });
    channel.on("overflow", () => {
      this.#log.warn("agent too slow, dropping its queue for a resync", { cluster });
      session?.emit("resync");
    });
    channel.on("close", () => {
      this.#clock.clearTimeout(helloTimer);
      if (session && this.#sessions.get(cluster) === session) this.#sessions.delete(cluster);
      session?.emit("close");
      conn.end();
    });
  }

  #renew(channel: MessageChannel<AgentMessage, HubMessage>, auth: AgentAuth, publicKey: string): void {
    const cluster = auth.identity.cluster ?? auth.identity.name;
    let issued: IssuedCertificate;
    try {
      // The identity comes from the certificate the session authenticated with, never from the request.
      issued = this.#options.ca.issue({
        role: "agent",
        name: cluster,
        cluster,
        publicKey,
        ttlMs: this.#options.renewTtlMs ?? 30 * DAY,
      });
    } catch (err) {
      channel.send({ type: "error", message: `renewal refused: ${(err as Error).message}` });
      return;
    }
    this.#log.info("agent certificate renewed", { cluster, serial: issued.serial });
    channel.send({ type: "certificate", cert: issued.certPem });
  }

  #enrollChannel(stream: ServerChannel, conn: Connection, auth: EnrollAuth): void {
    const enrollment = this.#options.enrollment!;
    const channel = new MessageChannel<EnrollRequest, EnrollResponse>(stream, {
      parse: parseEnrollRequest,
      maxLineBytes: STREAM_HEADER_LIMIT,
    });
    const done = () => {
      channel.close();
      conn.end();
    };
    channel.on("invalid", (err) => this.#log.warn("invalid enrollment request", { error: err.message }));
    channel.once("message", (request) => {
      Promise.resolve()
        .then(() => enrollment.issue(auth.cluster, request.publicKey, auth.token))
        .then(
          (cert) => {
            this.#log.info("agent enrolled", { cluster: auth.cluster });
            channel.send({ type: "enrolled", cert, caCert: this.#options.ca.certPem });
            done();
          },
          (err: Error) => {
            channel.send({ type: "error", message: `enrollment failed: ${err.message}` });
            done();
          },
        );
    });
  }

  #seen(cluster: string): void {
    const now = this.#clock.now();
    const entry = this.#liveness.get(cluster);
    if (!entry) {
      this.#liveness.set(cluster, { lastSeen: now, state: "Online" });
      this.#options.onClusterState?.(cluster, "Online");
      return;
    }
    entry.lastSeen = now;
    if (entry.state === "Offline") {
      entry.state = "Online";
      this.#options.onClusterState?.(cluster, "Online");
    }
  }

  #scheduleTick(): void {
    if (this.#closed) return;
    this.#tick = this.#clock.setTimeout(() => {
      this.#check();
      this.#scheduleTick();
    }, this.#heartbeatMs);
  }

  #check(): void {
    const now = this.#clock.now();
    for (const [cluster, entry] of this.#liveness) {
      if (entry.state === "Online" && now - entry.lastSeen > this.#missed * this.#heartbeatMs) {
        entry.state = "Offline";
        this.#log.warn("agent missed heartbeats", { cluster, missed: this.#missed });
        this.#options.onClusterState?.(cluster, "Offline");
      }
    }
    // A certificate revoked or expired while its tunnel is open ends that tunnel.
    for (const [cluster, session] of this.#sessions) {
      try {
        this.#verify(session.certPem, { role: "agent", cluster });
      } catch (err) {
        this.#log.warn("closing session: certificate no longer valid", {
          cluster,
          reason: (err as Error).message,
        });
        session.close();
      }
    }
  }
}

export function createTunnelServer(options: TunnelServerOptions): TunnelServer {
  return new TunnelServer(options);
}

/** The key type a public key blob names first (SSH wire format), or undefined when malformed. */
function keyType(blob: Buffer): string | undefined {
  if (blob.length < 4) return undefined;
  const length = blob.readUInt32BE(0);
  if (length === 0 || length > 64 || blob.length < 4 + length) return undefined;
  return blob.subarray(4, 4 + length).toString("latin1");
}
