// Leader election on a coordination.k8s.io/v1 Lease, as client-go does it: the leader renews
// the Lease every retry period and gives up leading when it could not renew for renewDeadline;
// a candidate takes the Lease over when its record has not changed for leaseDuration by the
// candidate's own clock (it never compares its clock with the leader's). Every write carries
// the Lease's resourceVersion, so two candidates cannot both win.
//
// The defaults, 30 s / 20 s / 2 s (client-go's are 15 s / 10 s / 2 s), are for a hub on a busy
// machine and apiserver: with 10 s / 7 s / 1 s, two hubs on a loaded 2-core machine (load average
// above 35, the chaos soak) took turns, the leader missing its deadline every 20–60 s and exiting;
// with 30 s / 20 s / 2 s they hold (docs/ha.md). The price is the takeover after a leader's kill -9:
// at most lease + 2 × retry after its last renewal (a standby sees a renewal up to one retry late
// and checks once per retry), 34 s; a hub stopped with SIGTERM releases the Lease at once. Safety
// does not rest on the tick: the leader's deadline runs from when its last successful renewal was
// *sent*, on a timer of its own, and every Lease request (429 resends included) is cut after a
// third of the renew deadline, so a hung apiserver cannot keep a leader leading past it and a
// hung connection leaves time for two more tries. lease − renew deadline (10 s) is the margin for
// a late timer (a blocked event loop) and the two clocks' rates. A candidate that lost the lead
// never leads again: the hub exits and its supervisor starts a fresh candidate.

import { hostname } from "node:os";
import type { KubeConfig } from "@kubernetes/client-node";
import { KubeHttp, KubeHttpError } from "./kube-http.ts";
import type { Logger } from "./logger.ts";

export interface LeaderElectionOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  /** The Lease's name, e.g. "rlark-hub". */
  name: string;
  /** This candidate, unique among them (default: hostname and pid). */
  identity?: string;
  /** How long a Lease not renewed stays the holder's. Default 30 s. */
  leaseMs?: number;
  /** How long the leader keeps trying to renew before it stops leading. Default 20 s. */
  renewDeadlineMs?: number;
  /** How often candidates try to acquire and the leader renews. Default 2 s. */
  retryMs?: number;
  logger: Logger;
  onStartedLeading: () => void | Promise<void>;
  /**
   * The leader lost the Lease (could not renew in time, or another holder took it). It stops
   * trying: this candidate never leads again (the hub exits; a new process is a new candidate).
   */
  onStoppedLeading: () => void;
}

interface Lease {
  apiVersion: "coordination.k8s.io/v1";
  kind: "Lease";
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

const microTime = (ms: number) => new Date(ms).toISOString().replace("Z", "000Z");

/** Lease duration, renew deadline and retry period when none are given (see the top comment). */
export const leaderElectionDefaults = { leaseMs: 30_000, renewDeadlineMs: 20_000, retryMs: 2_000 } as const;

export class LeaderElection {
  readonly identity: string;
  #o: Required<Omit<LeaderElectionOptions, "identity">>;
  #http: KubeHttp;
  #leading = false;
  #stopped = false;
  #timer: NodeJS.Timeout | undefined;
  /** Fires when the leader's renew deadline passes without a renewal. */
  #deadline: NodeJS.Timeout | undefined;
  /** The last Lease record seen, and when (by this process's clock) it was first seen. */
  #observed: { key: string; at: number } | undefined;
  #lastRenew = 0;
  /** The Lease as this candidate last wrote it. */
  #held: Lease | undefined;

  constructor(options: LeaderElectionOptions) {
    this.identity = options.identity ?? `${hostname()}-${process.pid}`;
    this.#o = { ...leaderElectionDefaults, ...options };
    if (!(this.#o.leaseMs > this.#o.renewDeadlineMs && this.#o.renewDeadlineMs > this.#o.retryMs)) {
      throw new Error("leader election needs lease duration > renew deadline > retry period");
    }
    this.#http = new KubeHttp({ kubeConfig: options.kubeConfig, maxSockets: 2 });
  }

  get leading(): boolean {
    return this.#leading;
  }

  /** Starts trying; returns at once. */
  start(): void {
    void this.#tick();
  }

  /** Stops; a leader releases the Lease so a standby takes over without waiting for it to expire. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    clearTimeout(this.#deadline);
    if (this.#leading) {
      this.#leading = false;
      const lease = await this.#read().catch(() => undefined);
      if (lease?.spec.holderIdentity === this.identity) {
        lease.spec = {
          ...lease.spec,
          holderIdentity: "",
          leaseDurationSeconds: 1,
          renewTime: microTime(Date.now()),
        };
        // Bounded like every Lease request: a hub stopping while its apiserver hangs still exits
        // (the Lease then runs out instead).
        await this.#http
          .request("PUT", this.#path(), { body: lease, timeoutMs: this.#requestTimeoutMs() })
          .catch(() => undefined);
      }
    }
    this.#http.close();
  }

  /**
   * A third of the renew deadline, 429 resends included: a request that hangs (a dead keep-alive
   * connection, a frozen apiserver) leaves time for two more tries before the deadline, on the
   * next retries' fresh connections.
   */
  #requestTimeoutMs(): number {
    return Math.floor(this.#o.renewDeadlineMs / 3);
  }

  #path(): string {
    return `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(this.#o.namespace)}/leases/${encodeURIComponent(this.#o.name)}`;
  }

  async #read(): Promise<Lease | undefined> {
    try {
      return await this.#http.request<Lease>("GET", this.#path(), { timeoutMs: this.#requestTimeoutMs() });
    } catch (error) {
      if (error instanceof KubeHttpError && error.code === 404) return undefined;
      throw error;
    }
  }

  async #tick(): Promise<void> {
    if (this.#stopped) return;
    // Before the request: a standby counts the lease from when it saw the write, never earlier.
    const sent = Date.now();
    try {
      const held = await this.#tryAcquireOrRenew();
      if (held) this.#renewed(sent);
      if (held && !this.#leading && !this.#stopped) {
        this.#leading = true;
        this.#o.logger.info("leading", {
          lease: `${this.#o.namespace}/${this.#o.name}`,
          identity: this.identity,
        });
        // Not awaited: the leader goes on renewing while it starts (a large revision may take
        // longer to apply than the renew deadline).
        void this.#startLeading();
      } else if (!held && this.#leading) this.#lose("another candidate holds the lease");
    } catch (error) {
      this.#o.logger.warn("leader election: the lease could not be read or written", {
        error: error instanceof Error ? error.message : String(error),
      });
    }
    if (!this.#stopped) this.#timer = setTimeout(() => void this.#tick(), this.#o.retryMs);
  }

  async #startLeading(): Promise<void> {
    try {
      await this.#o.onStartedLeading();
    } catch (error) {
      // A leader that holds the Lease but did not start would keep every standby out while
      // doing nothing: it gives the lead up instead (the hub exits and is restarted).
      if (this.#leading && !this.#stopped) {
        this.#lose(`starting to lead failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  }

  /** A renewal sent at `sent` succeeded: the leader leads until sent + renewDeadline at most. */
  #renewed(sent: number): void {
    this.#lastRenew = Math.max(this.#lastRenew, sent);
    clearTimeout(this.#deadline);
    this.#deadline = setTimeout(
      () => {
        if (this.#leading && !this.#stopped) {
          this.#lose(`the lease was not renewed for ${this.#o.renewDeadlineMs} ms`);
        }
      },
      this.#lastRenew + this.#o.renewDeadlineMs - Date.now(),
    );
  }

  #lose(why: string): void {
    clearTimeout(this.#deadline);
    this.#leading = false;
    // Done for good: a renewal still in flight, or one the apiserver answers later, must not make
    // this candidate lead again while what it started may still be stopping.
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#o.logger.warn("stopped leading", { why, identity: this.identity });
    this.#o.onStoppedLeading();
  }

  async #tryAcquireOrRenew(): Promise<boolean> {
    const now = Date.now();
    const spec = {
      holderIdentity: this.identity,
      leaseDurationSeconds: Math.ceil(this.#o.leaseMs / 1000),
      renewTime: microTime(now),
    };
    // The leader renews with one write of the Lease as it last wrote it (as client-go does): a
    // busy apiserver answers one request sooner than two. A Conflict means someone else wrote
    // it: read it then, as a candidate does.
    const held = this.#leading ? this.#held : undefined;
    if (held && (await this.#write("PUT", this.#path(), { ...held, spec: { ...held.spec, ...spec } }))) {
      return true;
    }
    const lease = await this.#read();
    if (!lease) {
      const body: Lease = {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name: this.#o.name, namespace: this.#o.namespace },
        spec: { ...spec, acquireTime: microTime(now), leaseTransitions: 0 },
      };
      return this.#write(
        "POST",
        `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(this.#o.namespace)}/leases`,
        body,
      );
    }
    const holder = lease.spec.holderIdentity ?? "";
    const key = `${holder}|${lease.spec.renewTime ?? ""}|${lease.metadata.resourceVersion}`;
    if (this.#observed?.key !== key) this.#observed = { key, at: now };
    if (holder === this.identity) {
      lease.spec = { ...lease.spec, ...spec };
      return this.#write("PUT", this.#path(), lease);
    }
    const duration = (lease.spec.leaseDurationSeconds ?? 0) * 1000;
    const expired = holder === "" || now - this.#observed.at > duration;
    if (!expired) return false;
    lease.spec = {
      ...lease.spec,
      ...spec,
      acquireTime: microTime(now),
      leaseTransitions: (lease.spec.leaseTransitions ?? 0) + 1,
    };
    return this.#write("PUT", this.#path(), lease);
  }

  /** true when the write won; a Conflict means another candidate wrote first. */
  async #write(method: "POST" | "PUT", path: string, lease: Lease): Promise<boolean> {
    try {
      this.#held = await this.#http.request<Lease>(method, path, {
        body: lease,
        timeoutMs: this.#requestTimeoutMs(),
      });
      return true;
    } catch (error) {
      this.#held = undefined;
      if (error instanceof KubeHttpError && error.code === 409) return false;
      throw error;
    }
  }
}
