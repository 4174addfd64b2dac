// The hub's side of the agent tunnels: hands each connected agent its cluster's desired set (a
// snapshot on connect, then deltas as the store changes), writes its reports back into the store,
// keeps Cluster status (Online/Offline, heartbeat, capabilities), and releases the cleanup
// finalizer of a deleted Task (or AddonRelease) once the agent has acknowledged the removal and
// reports nothing of it any more.
import { createHash } from "node:crypto";
import { AGENT_CLEANUP_FINALIZER, clusterOf, namespaceFor } from "../api/index.ts";
import { type Clock, systemClock, type TimerId } from "../lib/clock.ts";
import { type KubeObject, kindKey, kindKeyOf, parseKindKey } from "../lib/kube-object.ts";
import type { Logger } from "../lib/logger.ts";
import type { SealKeyring } from "../lib/seal/index.ts";
import type { KeptWatch, Store } from "../lib/store/index.ts";
import { keepWatching, modify } from "../lib/store/index.ts";
import type { AgentMessage, AgentSession, ClusterState, ConnectivityTest } from "../lib/tunnel/index.ts";
import { desiredForCluster, hasCleanupFinalizer } from "./desired-set.ts";
import { pingMeshOf, withCondition } from "./pingmesh.ts";

export { DEGRADED_LOSS, DEGRADED_P99_MS, degraded } from "./pingmesh.ts";

import { writeReport } from "./report-writer.ts";
import { sealedSecretsFor, secretsForCluster } from "./sealed-secrets.ts";

export interface AgentSyncOptions {
  store: Store;
  artifactDir: string;
  logger: Logger;
  /** Quiet time before a burst of store changes becomes one delta. */
  debounceMs?: number;
  /**
   * Every this often each connected agent's desired set is compared with what it was sent, and a
   * delta goes out if they differ (none if not): the sync converges even on a change whose store
   * event never came. Default 30 s; 0: never.
   */
  resyncMs?: number;
  /** Drives the delta debounce and the status timestamps; tests pass a FakeClock. */
  clock?: Clock;
  /**
   * Opens SealedSecrets into the Secrets sent to kubernetes agents; without it none are sent.
   * Process agents get none either way (docs/secrets.md).
   */
  sealKeys?: Pick<SealKeyring, "unseal">;
}

export interface AgentSync {
  onAgentSession(session: AgentSession): void;
  onClusterState(cluster: string, state: ClusterState): void;
  start(): Promise<void>;
  close(): void;
}

const WATCHED_KINDS = ["Task", "DomainPeer", "AddonRelease", "BundleRelease", "Node"] as const;

/** Only the kubernetes runtime applies Secrets: other agents are never sent a plain value. */
const SENT_SECRETS_RUNTIME = "kubernetes";

export function createAgentSync(options: AgentSyncOptions): AgentSync {
  const { store, logger } = options;
  const clock = options.clock ?? systemClock;
  const sessions = new Map<string, ClusterSession>();
  const watches: KeptWatch[] = [];
  // A store watch opened again after it ended: what changed meanwhile came as no event.
  const resyncAll = () => {
    for (const session of sessions.values()) session.schedule();
  };
  let resyncTimer: TimerId | undefined;
  const resyncMs = options.resyncMs ?? 30_000;
  const scheduleResync = () => {
    if (!(resyncMs > 0)) return;
    resyncTimer = clock.setTimeout(() => {
      resyncAll();
      scheduleResync();
    }, resyncMs);
  };

  const changed = (object: KubeObject) => {
    const cluster = clusterOf(object.metadata.namespace);
    if (cluster) sessions.get(cluster)?.schedule();
  };
  // A cluster-wide SealedSecret may reach any cluster; a Cluster's labels decide which.
  const clusterLabels = new Map<string, string>();
  const sealedChanged = (object: KubeObject) => {
    const cluster = clusterOf(object.metadata.namespace);
    if (cluster) sessions.get(cluster)?.schedule();
    else for (const session of sessions.values()) session.schedule();
  };
  const clusterChanged = (object: KubeObject) => {
    const labels = JSON.stringify(object.metadata.labels ?? {});
    if (clusterLabels.get(object.metadata.name) === labels) return;
    clusterLabels.set(object.metadata.name, labels);
    sessions.get(object.metadata.name)?.schedule();
  };

  return {
    async start() {
      const resourceVersion = await store.resourceVersion();
      // Kept open: a watch that ends (an apiserver restart) used to leave every agent that did
      // not reconnect without deltas for good.
      const keep = { logger, resourceVersion, onResync: resyncAll };
      for (const kind of WATCHED_KINDS) {
        watches.push(await keepWatching(store, kind, (event) => changed(event.object), keep));
      }
      if (options.sealKeys) {
        watches.push(await keepWatching(store, "SealedSecret", (e) => sealedChanged(e.object), keep));
        watches.push(await keepWatching(store, "Cluster", (e) => clusterChanged(e.object), keep));
      }
      scheduleResync();
    },
    onAgentSession(session) {
      sessions.get(session.cluster)?.dispose();
      const cluster = new ClusterSession(session, options, clock);
      sessions.set(session.cluster, cluster);
      session.on("close", () => {
        if (sessions.get(session.cluster) === cluster) sessions.delete(session.cluster);
        cluster.dispose();
      });
      void cluster.begin();
    },
    onClusterState(cluster, state) {
      void setClusterStatus(store, cluster, (status) => {
        if (status.phase !== state) status.lastTransitionTime = new Date(clock.now()).toISOString();
        status.phase = state;
      }).catch((error: unknown) =>
        logger.warn("cluster status not written", { cluster, error: String(error) }),
      );
    },
    close() {
      if (resyncTimer) clock.clearTimeout(resyncTimer);
      for (const watch of watches) watch.stop();
      for (const session of sessions.values()) session.dispose();
      sessions.clear();
    },
  };
}

async function setClusterStatus(
  store: Store,
  cluster: string,
  change: (status: Record<string, unknown>) => void,
) {
  const existing = await store.get("Cluster", undefined, cluster);
  if (!existing) return;
  await modify(
    store,
    "Cluster",
    "",
    cluster,
    (object) => {
      const status = { ...((object.status as Record<string, unknown> | undefined) ?? {}) };
      change(status);
      object.status = status;
    },
    { status: true },
  );
}

/** Cluster status.lastTestedAt / lastTestOk / lastTestMessage from one connectivity test. */
export function setLastTest(status: Record<string, unknown>, test: ConnectivityTest): void {
  status.lastTestedAt = test.testedAt;
  status.lastTestOk = test.ok;
  if (test.message === undefined) delete status.lastTestMessage;
  else status.lastTestMessage = test.message;
}

class ClusterSession {
  #session: AgentSession;
  #options: AgentSyncOptions;
  #generation = 0;
  /** What the agent was last sent, by object key → fingerprint (what the agent acts on). */
  #sent = new Map<string, string>();
  /** Task key → generation of the delta that removed it from the agent's set. */
  #removedAt = new Map<string, number>();
  #clock: Clock;
  #timer: TimerId | undefined;
  #running: Promise<void> = Promise.resolve();
  #disposed = false;
  #lastHeartbeatWrite = 0;
  /** The SealedSecrets last said not to reach this (non-kubernetes) agent, so it is said once. */
  #undelivered = "";

  constructor(session: AgentSession, options: AgentSyncOptions, clock: Clock) {
    this.#session = session;
    this.#options = options;
    this.#clock = clock;
    session.on("message", (message) => void this.#onMessage(message));
    session.on("resync", () => void this.#serialise(() => this.#send(true)));
  }

  get cluster(): string {
    return this.#session.cluster;
  }

  async begin(): Promise<void> {
    const { hello } = this.#session;
    await setClusterStatus(this.#options.store, this.cluster, (status) => {
      status.agentVersion = hello.agentVersion;
      status.runtime = hello.runtime;
      status.bootId = hello.bootId;
      status.capabilities = hello.capabilities;
      status.lastHeartbeatTime = new Date(this.#clock.now()).toISOString();
    }).catch(() => {});
    await this.#serialise(() => this.#send(true));
  }

  schedule(): void {
    if (this.#disposed || this.#timer) return;
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      void this.#serialise(() => this.#send(false));
    }, this.#options.debounceMs ?? 50);
  }

  dispose(): void {
    this.#disposed = true;
    if (this.#timer) this.#clock.clearTimeout(this.#timer);
  }

  /** One send or report at a time, in order, so generations and finalizer checks never interleave. */
  #serialise(work: () => Promise<void>): Promise<void> {
    this.#running = this.#running.then(work).catch((error: unknown) => {
      this.#options.logger.error("agent sync failed", { cluster: this.cluster, error: String(error) });
    });
    return this.#running;
  }

  async #send(full: boolean): Promise<void> {
    if (this.#disposed) return;
    const objects = await desiredForCluster(this.#options.store, this.cluster, {
      artifactDir: this.#options.artifactDir,
    });
    const { sealKeys } = this.#options;
    if (sealKeys && this.#session.hello.runtime === SENT_SECRETS_RUNTIME) {
      objects.push(
        ...(await secretsForCluster(this.#options.store, this.cluster, {
          keys: sealKeys,
          logger: this.#options.logger,
        })),
      );
    } else if (sealKeys) await this.#sayUndelivered();
    const next = new Map(objects.map((o) => [kindKeyOf(o), o]));
    const generation = ++this.#generation;
    if (full) {
      for (const k of this.#sent.keys()) if (!next.has(k)) this.#removedAt.set(k, generation);
      this.#session.send({ type: "snapshot", generation, objects });
    } else {
      const upserts = objects.filter((o) => this.#sent.get(kindKeyOf(o)) !== fingerprint(o));
      const deletes = [...this.#sent.keys()].filter((k) => !next.has(k)).map(parseKindKey);
      if (upserts.length === 0 && deletes.length === 0) {
        this.#generation--;
        return;
      }
      for (const ref of deletes) this.#removedAt.set(kindKey(ref.kind, ref.namespace, ref.name), generation);
      this.#session.send({ type: "delta", generation, upserts, deletes });
    }
    this.#sent = new Map(objects.map((o) => [kindKeyOf(o), fingerprint(o)]));
  }

  async #sayUndelivered(): Promise<void> {
    const names = (await sealedSecretsFor(this.#options.store, this.cluster))
      .map((s) => `${s.metadata.namespace ?? ""}/${s.metadata.name}`)
      .sort()
      .join(", ");
    if (names === this.#undelivered) return;
    this.#undelivered = names;
    if (names)
      this.#options.logger.warn(
        "SealedSecrets are not delivered to this cluster: its runtime takes no Secrets",
        {
          cluster: this.cluster,
          runtime: this.#session.hello.runtime,
          sealedSecrets: names,
        },
      );
  }

  async #onMessage(message: AgentMessage): Promise<void> {
    if (message.type === "report") {
      await this.#serialise(async () => {
        const now = new Date(this.#clock.now()).toISOString();
        const pingMesh = await pingMeshOf(
          this.#options.store,
          this.cluster,
          message,
          now,
          this.#options.logger,
        );
        await writeReport(
          this.#options.store,
          this.cluster,
          pingMesh ? { ...message, nodes: pingMesh.nodes } : message,
          this.#options.logger,
        );
        await this.#releaseFinalizers(message.pods, message.tasks);
        await this.#releaseReleaseFinalizers("AddonRelease", message.addons ?? []);
        await this.#releaseReleaseFinalizers("BundleRelease", message.bundles ?? []);
        await setClusterStatus(this.#options.store, this.cluster, (status) => {
          status.capabilities = message.capabilities;
          status.nodeCount = message.nodes.length;
          if (message.kubernetesVersion) status.kubernetesVersion = message.kubernetesVersion;
          if (message.storageClasses) status.storageClasses = message.storageClasses;
          if (message.lastTest) setLastTest(status, message.lastTest);
          // an agent restarted without a member leaves no stale view behind
          if (message.agentGroup) status.agentGroup = message.agentGroup;
          else delete status.agentGroup;
          if (pingMesh) {
            status.pingMesh = pingMesh.figures;
            status.conditions = withCondition(
              status.conditions as unknown[] | undefined,
              pingMesh.clusterCondition(status.conditions as unknown[] | undefined),
            );
          }
        });
      });
    } else if (message.type === "heartbeat") {
      // Heartbeats arrive every 10 s per agent: write at most one per 30 s to spare the store.
      const now = this.#clock.now();
      if (now - this.#lastHeartbeatWrite < 30_000) return;
      this.#lastHeartbeatWrite = now;
      await setClusterStatus(this.#options.store, this.cluster, (status) => {
        status.lastHeartbeatTime = new Date(now).toISOString();
        if (message.capabilities) status.capabilities = message.capabilities;
      }).catch(() => {});
    } else if (message.type === "ack") {
      // An acknowledged removal may already be complete: look again at the next report.
    }
  }

  /** A deleted Task goes once the agent acknowledged its removal and reports none of its pods. */
  async #releaseFinalizers(reportedPods: KubeObject[], reportedTasks: KubeObject[]): Promise<void> {
    const store = this.#options.store;
    const acked = this.#session.ackedGeneration ?? 0;
    const namespace = namespaceFor(this.cluster);
    // Anything the agent still names (a pod, or a Task whose workloads or claims linger) stays.
    const running = new Set([
      ...reportedPods.map((p) => (p.spec as { task?: string } | undefined)?.task),
      ...reportedTasks.map((t) => t.metadata.name),
    ]);
    for (const task of (await store.list("Task", { namespace })).items) {
      if (!task.metadata.deletionTimestamp || !hasCleanupFinalizer(task)) continue;
      if (!this.#removalAcknowledged(task, acked)) continue;
      if (running.has(task.metadata.name)) continue;
      await store.update({
        ...task,
        metadata: {
          ...task.metadata,
          finalizers: (task.metadata.finalizers ?? []).filter((f) => f !== AGENT_CLEANUP_FINALIZER),
        },
      });
      this.#removedAt.delete(kindKeyOf(task));
    }
  }

  /**
   * A deleted AddonRelease or BundleRelease goes once the agent acknowledged its removal and no
   * longer reports it.
   */
  async #releaseReleaseFinalizers(
    kind: "AddonRelease" | "BundleRelease",
    reported: KubeObject[],
  ): Promise<void> {
    const store = this.#options.store;
    const acked = this.#session.ackedGeneration ?? 0;
    const present = new Set(reported.map((r) => r.metadata.name));
    for (const release of (await store.list(kind, { namespace: namespaceFor(this.cluster) })).items) {
      if (!release.metadata.deletionTimestamp || !hasCleanupFinalizer(release)) continue;
      if (!this.#removalAcknowledged(release, acked) || present.has(release.metadata.name)) continue;
      await store.update({
        ...release,
        metadata: {
          ...release.metadata,
          finalizers: (release.metadata.finalizers ?? []).filter((f) => f !== AGENT_CLEANUP_FINALIZER),
        },
      });
      this.#removedAt.delete(kindKeyOf(release));
    }
  }

  /** The agent was never sent `object`, or has acknowledged the delta that took it away. */
  #removalAcknowledged(object: KubeObject, acked: number): boolean {
    const removedAt = this.#removedAt.get(kindKeyOf(object));
    const neverSent = removedAt === undefined && !this.#sent.has(kindKeyOf(object));
    return neverSent || (removedAt !== undefined && acked >= removedAt);
  }
}

/**
 * What an agent acts on, without what changes on every status write (resourceVersion): a Task
 * whose status the hub just wrote from the agent's own report is not sent back to it. A digest,
 * so the memory of what was sent holds no Secret's data.
 */
function fingerprint(object: KubeObject): string {
  const { resourceVersion: _rv, ...metadata } = object.metadata;
  const { data } = object as { data?: unknown };
  return createHash("sha256")
    .update(JSON.stringify({ metadata, spec: object.spec ?? null, data: data ?? null }))
    .digest("base64");
}
