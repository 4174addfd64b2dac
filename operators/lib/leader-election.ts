// Leader election on a coordination.k8s.io/v1 Lease, as client-go does it: the leader renews
// the Lease every retry period and gives up leading when it could not renew for renewDeadline;
// a candidate takes the Lease over when its record has not changed for leaseDuration by the
// candidate's own clock (it never compares its clock with the leader's). Every write carries
// the Lease's resourceVersion, so two candidates cannot both win.

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
  /** How long a Lease not renewed stays the holder's. Default 15 s. */
  leaseMs?: number;
  /** How long the leader keeps trying to renew before it stops leading. Default 10 s. */
  renewDeadlineMs?: number;
  /** How often candidates try to acquire and the leader renews. Default 2 s. */
  retryMs?: number;
  logger: Logger;
  onStartedLeading: () => void | Promise<void>;
  /** The leader lost the Lease (could not renew in time, or another holder took it). */
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

export class LeaderElection {
  readonly identity: string;
  #o: Required<Omit<LeaderElectionOptions, "identity">>;
  #http: KubeHttp;
  #leading = false;
  #stopped = false;
  #timer: NodeJS.Timeout | undefined;
  /** The last Lease record seen, and when (by this process's clock) it was first seen. */
  #observed: { key: string; at: number } | undefined;
  #lastRenew = 0;

  constructor(options: LeaderElectionOptions) {
    this.identity = options.identity ?? `${hostname()}-${process.pid}`;
    this.#o = { leaseMs: 15_000, renewDeadlineMs: 10_000, retryMs: 2_000, ...options };
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
        await this.#http.request("PUT", this.#path(), { body: lease }).catch(() => undefined);
      }
    }
    this.#http.close();
  }

  #path(): string {
    return `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(this.#o.namespace)}/leases/${encodeURIComponent(this.#o.name)}`;
  }

  async #read(): Promise<Lease | undefined> {
    try {
      return await this.#http.request<Lease>("GET", this.#path());
    } catch (error) {
      if (error instanceof KubeHttpError && error.code === 404) return undefined;
      throw error;
    }
  }

  async #tick(): Promise<void> {
    if (this.#stopped) return;
    try {
      const held = await this.#tryAcquireOrRenew();
      if (held) this.#lastRenew = Date.now();
      if (held && !this.#leading && !this.#stopped) {
        this.#leading = true;
        this.#o.logger.info("leading", {
          lease: `${this.#o.namespace}/${this.#o.name}`,
          identity: this.identity,
        });
        try {
          await this.#o.onStartedLeading();
        } catch (error) {
          // A leader that holds the Lease but did not start would keep every standby out while
          // doing nothing: it gives the lead up instead (the hub exits and is restarted).
          this.#lose(`starting to lead failed: ${error instanceof Error ? error.message : String(error)}`);
        }
      } else if (!held && this.#leading) this.#lose("another candidate holds the lease");
    } catch (error) {
      this.#o.logger.warn("leader election: the lease could not be read or written", {
        error: error instanceof Error ? error.message : String(error),
      });
    }
    if (this.#leading && Date.now() - this.#lastRenew > this.#o.renewDeadlineMs) {
      this.#lose(`the lease was not renewed for ${this.#o.renewDeadlineMs} ms`);
    }
    if (!this.#stopped) this.#timer = setTimeout(() => void this.#tick(), this.#o.retryMs);
  }

  #lose(why: string): void {
    this.#leading = false;
    this.#o.logger.warn("stopped leading", { why, identity: this.identity });
    this.#o.onStoppedLeading();
  }

  async #tryAcquireOrRenew(): Promise<boolean> {
    const now = Date.now();
    const lease = await this.#read();
    const spec = {
      holderIdentity: this.identity,
      leaseDurationSeconds: Math.ceil(this.#o.leaseMs / 1000),
      renewTime: microTime(now),
    };
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
      await this.#http.request(method, path, { body: lease });
      return true;
    } catch (error) {
      if (error instanceof KubeHttpError && error.code === 409) return false;
      throw error;
    }
  }
}
