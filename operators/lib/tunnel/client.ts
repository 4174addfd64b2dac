import { EventEmitter } from "node:events";
import ssh2 from "ssh2";
import { type Clock, systemClock, type TimerId } from "../clock.ts";
import { type Logger, silentLogger } from "../logger.ts";
import {
  certificateFingerprint,
  generateKeyPair,
  type KeyPair,
  renewalTime,
  sshPublicKeyBlob,
  verifyCertificate,
} from "../pki/index.ts";
import { coalesceWrites } from "./coalesce-writes.ts";
import { dialNoDelay } from "./connect.ts";
import type { AgentCredentials, CredentialStore } from "./credentials.ts";
import { checkHubIdentity, parseHubAddresses } from "./hub-identity.ts";
import { MessageChannel } from "./message-channel.ts";
import type { AgentMessage, Capability, Delta, Hello, HubMessage, Report, Snapshot } from "./protocol.ts";
import { parseHubMessage } from "./protocol.ts";
import { type BackoffOptions, backoffDelay } from "./reconnect-delay.ts";
import {
  AGENT_SUBSYSTEM,
  agentUsername,
  CIPHERS,
  DEFAULT_KEEPALIVE_COUNT_MAX,
  DEFAULT_KEEPALIVE_MS,
  MACS,
  STREAM_BIND_ADDR,
} from "./ssh-options.ts";
import { type StreamHandler, serveStream } from "./streams.ts";

export interface TunnelClientOptions {
  /** `host:port` of the hub's SSH endpoint. */
  hub: string;
  credentials: AgentCredentials;
  /** Renewed credentials are saved here before they are used. */
  credentialStore?: CredentialStore;
  hello: Omit<Hello, "type" | "cluster">;
  /** Applies a snapshot or delta; the agent acknowledges its generation once this resolves. */
  onDesired?(message: Snapshot | Delta): Promise<void> | void;
  /** Capability states sent with every heartbeat. */
  capabilities?(): Capability[];
  /** Stream purposes this agent serves (e.g. `logs`, `dry-run`). */
  streams?: Record<string, StreamHandler>;
  clock?: Clock;
  random?: () => number;
  logger?: Logger;
  /** Defaults to the interval the hub announces in its welcome. */
  heartbeatIntervalMs?: number;
  backoff?: BackoffOptions;
  keepaliveIntervalMs?: number;
  keepaliveCountMax?: number;
  connectTimeoutMs?: number;
  /** Renew the certificate over the tunnel at about 2/3 of its lifetime (default true). */
  autoRenew?: boolean;
  maxQueuedBytes?: number;
  maxLineBytes?: number;
}

export interface TunnelClientEvents {
  /** The hub proved its identity and hello was sent. */
  connected: [];
  disconnected: [Error | undefined];
  snapshot: [Snapshot];
  delta: [Delta];
  /** An `error` message from the hub. */
  "hub-error": [string];
  /** The hub failed the identity check or refused our certificate. */
  refused: [Error];
  renewed: [AgentCredentials];
}

// setTimeout takes at most 2^31-1 ms; longer waits are re-armed.
const MAX_TIMER_MS = 2 ** 31 - 1;
/** Desired-set messages received but not yet applied before the agent stops reading. */
const MAX_PENDING_DESIRED = 4;

/**
 * The agent's end of the tunnel: one SSH connection to the hub, re-established with jittered
 * exponential backoff whenever it drops, with hello → snapshot → deltas/acks, reports,
 * heartbeats, certificate renewal and stream channels on top.
 */
export class TunnelClient extends EventEmitter<TunnelClientEvents> {
  #options: TunnelClientOptions;
  #credentials: AgentCredentials;
  #hubHost: string | undefined;
  #clock: Clock;
  #random: () => number;
  #log: Logger;
  #running = false;
  #attempt = 0;
  #sleep: { timer: TimerId; wake: () => void } | undefined;
  #conn: InstanceType<typeof ssh2.Client> | undefined;
  #channel: MessageChannel<HubMessage, AgentMessage> | undefined;
  #ready = false;
  #heartbeat: TimerId | undefined;
  #renewTimer: TimerId | undefined;
  #pendingKey: KeyPair | undefined;
  #latestReport: Report | undefined;
  #desiredChain: Promise<void> = Promise.resolve();
  #loop: Promise<void> | undefined;
  #connections = 0;
  #addressIndex = 0;
  #pendingDesired = 0;

  constructor(options: TunnelClientOptions) {
    super();
    this.#options = options;
    this.#credentials = options.credentials;
    this.#clock = options.clock ?? systemClock;
    this.#random = options.random ?? Math.random;
    this.#log = options.logger ?? silentLogger;
  }

  /** The host of the hub this client dialled last (its connection now, when connected). */
  get hubHost(): string | undefined {
    return this.#hubHost;
  }

  get credentials(): AgentCredentials {
    return this.#credentials;
  }

  /** True between a verified welcome and the connection's end. */
  get connected(): boolean {
    return this.#ready;
  }

  /** How many SSH connections this client has made (renewal must not add one). */
  get connections(): number {
    return this.#connections;
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#loop = this.#run();
  }

  async stop(): Promise<void> {
    this.#running = false;
    if (this.#sleep) {
      this.#clock.clearTimeout(this.#sleep.timer);
      this.#sleep.wake();
    }
    this.#conn?.end();
    await this.#loop;
  }

  /** Sends (or keeps for the next connection) the latest status report. */
  report(report: Omit<Report, "type">): void {
    this.#latestReport = { type: "report", ...report };
    if (this.#ready) this.#channel?.send(this.#latestReport, (q) => q.type === "report");
  }

  heartbeat(): void {
    if (!this.#ready) return;
    const beat: AgentMessage = { type: "heartbeat" };
    const caps = this.#options.capabilities?.();
    if (caps) beat.capabilities = caps;
    this.#channel?.send(beat, (q) => q.type === "heartbeat");
  }

  /** Asks the hub for a new certificate over a fresh key, on the open tunnel. */
  renewNow(): boolean {
    if (!this.#ready || !this.#channel) return false;
    this.#pendingKey = generateKeyPair();
    return this.#channel.send({ type: "renew", publicKey: this.#pendingKey.publicKeyPem });
  }

  async #run(): Promise<void> {
    while (this.#running) {
      let error: Error | undefined;
      try {
        await this.#connectOnce();
      } catch (err) {
        error = err as Error;
      }
      this.#teardown();
      this.emit("disconnected", error);
      if (!this.#running) break;
      // With several hubs (replicas, one leading), a refusal by one is no reason to wait: the
      // next is tried at once, and the backoff grows per round over all of them, so a standby
      // that took the lead is found within one round, not after a backoff grown on its sibling.
      const addresses = parseHubAddresses(this.#options.hub).length;
      if (this.#addressIndex % addresses !== 0) continue;
      const delay = backoffDelay(this.#attempt++, this.#options.backoff, this.#random);
      this.#log.info("reconnecting to the hub", { delayMs: delay, error: error?.message });
      await new Promise<void>((wake) => {
        this.#sleep = { timer: this.#clock.setTimeout(wake, delay), wake };
      });
      this.#sleep = undefined;
    }
  }

  #teardown(): void {
    this.#ready = false;
    this.#pendingDesired = 0;
    this.#channel = undefined;
    this.#conn = undefined;
    this.#pendingKey = undefined;
    if (this.#heartbeat) this.#clock.clearTimeout(this.#heartbeat);
    if (this.#renewTimer) this.#clock.clearTimeout(this.#renewTimer);
    this.#heartbeat = undefined;
    this.#renewTimer = undefined;
  }

  async #connectOnce(): Promise<void> {
    // Every attempt after a failure or a drop goes to the next address: a standby hub refuses
    // agents (it does not listen), the leader among them accepts.
    const addresses = parseHubAddresses(this.#options.hub);
    const { host, port } = addresses[this.#addressIndex++ % addresses.length]!;
    const timeout = this.#options.connectTimeoutMs ?? 20_000;
    const sock = await dialNoDelay(host, port, timeout);
    this.#hubHost = host;
    coalesceWrites(sock);
    const conn = new ssh2.Client();
    this.#conn = conn;
    this.#connections++;
    let hostKey: Buffer | undefined;
    const creds = this.#credentials;
    return new Promise<void>((resolve, reject) => {
      let failure: Error | undefined;
      let welcomeTimer: TimerId | undefined;
      conn.on("error", (err: Error & { level?: string }) => {
        failure ??= err;
        if (err.level === "client-authentication") this.emit("refused", err);
      });
      conn.on("close", () => {
        if (welcomeTimer) this.#clock.clearTimeout(welcomeTimer);
        failure ? reject(failure) : resolve();
      });
      conn.on("tcp connection", (info, accept, rejectStream) => {
        // Streams are asked for (forwardIn) only after the welcome proved the hub; this guards
        // against a server that opens one anyway.
        if (!this.#ready || this.#conn !== conn || info.destIP !== STREAM_BIND_ADDR) return rejectStream();
        void serveStream(accept(), this.#options.streams ?? {});
      });
      conn.on("ready", () => {
        if (!this.#running) return conn.end();
        welcomeTimer = this.#clock.setTimeout(() => {
          if (this.#ready) return;
          failure ??= new Error(`the hub sent no welcome within ${timeout} ms`);
          conn.end();
        }, timeout);
        conn.subsys(AGENT_SUBSYSTEM, (err, stream) => {
          if (err) {
            failure = new Error(`the hub refused the ${AGENT_SUBSYSTEM} subsystem: ${err.message}`);
            return conn.end();
          }
          const channel = new MessageChannel<HubMessage, AgentMessage>(stream, {
            parse: parseHubMessage,
            ...(this.#options.maxLineBytes ? { maxLineBytes: this.#options.maxLineBytes } : {}),
            ...(this.#options.maxQueuedBytes ? { maxQueuedBytes: this.#options.maxQueuedBytes } : {}),
          });
          this.#channel = channel;
          channel.on("invalid", (e) => {
            failure = e;
            this.#log.warn("invalid message from the hub", { error: e.message });
          });
          channel.on("overflow", () => {
            // Only reports and heartbeats queue up on this side; the newest report says it all.
            if (this.#latestReport) channel.send(this.#latestReport);
          });
          channel.on("close", () => conn.end());
          channel.on("message", (message) => {
            try {
              this.#onMessage(conn, channel, message, hostKey, creds);
            } catch (e) {
              failure = e as Error;
              channel.close();
            }
          });
        });
      });
      conn.connect({
        sock,
        username: agentUsername(creds.certPem),
        privateKey: creds.privateKeyPem,
        authHandler: ["publickey"],
        readyTimeout: timeout,
        algorithms: { cipher: CIPHERS, hmac: MACS },
        keepaliveInterval: this.#options.keepaliveIntervalMs ?? DEFAULT_KEEPALIVE_MS,
        keepaliveCountMax: this.#options.keepaliveCountMax ?? DEFAULT_KEEPALIVE_COUNT_MAX,
        hostVerifier: (key: Buffer) => {
          hostKey = Buffer.from(key);
          // Credentials from before the hub's certificate was pinned have nothing to check here;
          // such an agent still serves nothing until the welcome's certificate checks out.
          if (!creds.hubCertPem) return true;
          try {
            checkHubIdentity({
              caCertPem: creds.caCertPem,
              hostCertPem: creds.hubCertPem,
              handshakeHostKey: hostKey,
              clock: this.#clock,
            });
            return true;
          } catch (err) {
            failure = new Error(
              `the SSH server at ${host}:${port} is not the hub: ${(err as Error).message}`,
            );
            this.emit("refused", failure);
            return false;
          }
        },
      });
    });
  }

  #onMessage(
    conn: InstanceType<typeof ssh2.Client>,
    channel: MessageChannel<HubMessage, AgentMessage>,
    message: HubMessage,
    hostKey: Buffer | undefined,
    creds: AgentCredentials,
  ): void {
    if (!this.#ready) {
      if (message.type !== "welcome")
        throw new Error(`the hub spoke before proving its identity (${message.type})`);
      try {
        checkHubIdentity({
          caCertPem: creds.caCertPem,
          hostCertPem: message.hostCert,
          handshakeHostKey: hostKey,
          clock: this.#clock,
        });
      } catch (err) {
        this.emit("refused", err as Error);
        throw err;
      }
      this.#ready = true;
      const pinned = this.#credentials.hubCertPem;
      if (!pinned || certificateFingerprint(pinned) !== certificateFingerprint(message.hostCert)) {
        this.#pinHubCertificate(message.hostCert);
      }
      conn.forwardIn(STREAM_BIND_ADDR, 0, (err) => {
        if (err) this.#log.warn("the hub refused stream forwarding", { error: err.message });
      });
      channel.send({ type: "hello", cluster: creds.cluster, ...this.#options.hello });
      if (this.#latestReport) channel.send(this.#latestReport);
      this.#startHeartbeat(this.#options.heartbeatIntervalMs ?? message.heartbeatIntervalMs);
      if (this.#options.autoRenew !== false) this.#scheduleRenewal();
      this.emit("connected");
      return;
    }
    switch (message.type) {
      case "welcome":
        throw new Error("the hub sent a second welcome");
      case "snapshot":
      case "delta":
        this.#attempt = 0;
        this.emit(message.type === "snapshot" ? "snapshot" : "delta", message as Snapshot & Delta);
        // While the runtime is behind, stop reading: SSH flow control then pushes back on the
        // hub instead of this process buffering deltas without bound.
        if (++this.#pendingDesired >= MAX_PENDING_DESIRED) channel.pause();
        this.#desiredChain = this.#desiredChain
          .then(() => this.#options.onDesired?.(message))
          .then(
            () => {
              if (this.#channel === channel) channel.send({ type: "ack", generation: message.generation });
            },
            (err: Error) =>
              this.#log.warn("applying the desired set failed", {
                generation: message.generation,
                error: err.message,
              }),
          )
          .finally(() => {
            if (this.#channel === channel && --this.#pendingDesired < MAX_PENDING_DESIRED) channel.resume();
          });
        return;
      case "certificate":
        void this.#acceptRenewal(message.cert);
        return;
      case "error":
        this.#log.warn("the hub reported an error", { message: message.message });
        this.emit("hub-error", message.message);
        return;
    }
  }

  /** Keeps the hub's newest verified certificate, so the next handshake is checked against it. */
  #pinHubCertificate(hubCertPem: string): void {
    const next: AgentCredentials = { ...this.#credentials, hubCertPem };
    this.#credentials = next;
    this.#options.credentialStore
      ?.save(next)
      .catch((err: Error) => this.#log.warn("saving the hub's certificate failed", { error: err.message }));
  }

  async #acceptRenewal(certPem: string): Promise<void> {
    const key = this.#pendingKey;
    this.#pendingKey = undefined;
    try {
      if (!key) throw new Error("a certificate arrived that was not asked for");
      const id = verifyCertificate(
        certPem,
        { role: "agent", cluster: this.#credentials.cluster },
        {
          caCertPem: this.#credentials.caCertPem,
          clock: this.#clock,
        },
      );
      if (!sshPublicKeyBlob(id.publicKeyPem).equals(sshPublicKeyBlob(key.privateKeyPem))) {
        throw new Error("the renewed certificate is for another key");
      }
      const next: AgentCredentials = { ...this.#credentials, privateKeyPem: key.privateKeyPem, certPem };
      // Saved first: if saving fails we keep using the old, still valid, identity.
      await this.#options.credentialStore?.save(next);
      this.#credentials = next;
      this.#log.info("certificate renewed", {
        serial: id.serial,
        notAfter: new Date(id.notAfter).toISOString(),
      });
      this.emit("renewed", next);
      if (this.#options.autoRenew !== false && this.#ready) this.#scheduleRenewal();
    } catch (err) {
      this.#log.warn("certificate renewal failed", { error: (err as Error).message });
    }
  }

  #startHeartbeat(intervalMs: number): void {
    const beat = () => {
      this.heartbeat();
      this.#heartbeat = this.#clock.setTimeout(beat, intervalMs);
    };
    this.#heartbeat = this.#clock.setTimeout(beat, intervalMs);
  }

  #scheduleRenewal(): void {
    if (this.#renewTimer) this.#clock.clearTimeout(this.#renewTimer);
    const id = verifyCertificate(
      this.#credentials.certPem,
      { role: "agent" },
      {
        caCertPem: this.#credentials.caCertPem,
        clock: this.#clock,
      },
    );
    const at = renewalTime(id.notBefore, id.notAfter, this.#random);
    const wait = Math.max(0, at - this.#clock.now());
    this.#renewTimer = this.#clock.setTimeout(
      () => {
        this.#renewTimer = undefined;
        if (wait > MAX_TIMER_MS) this.#scheduleRenewal();
        else this.renewNow();
      },
      Math.min(wait, MAX_TIMER_MS),
    );
  }
}

export function createTunnelClient(options: TunnelClientOptions): TunnelClient {
  return new TunnelClient(options);
}
