// The kubernetes runtime: runs the agent's Tasks as native workloads on one cluster. apply()
// renders every Task (render.ts) and server-side applies the result with field manager
// rlark-agent, then deletes what carries our labels but is no longer desired. Watches
// (watched-collection.ts) keep caches of Nodes, Pods, the workloads and the Tasks' volume claims;
// observe() maps them to the runtime contract (observe.ts). Everything the runtime owns is found
// again by label, so a new runtime on the same cluster adopts it: no state of its own.
import {
  CoreV1Api,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  type V1DaemonSet,
  type V1Deployment,
  type V1Job,
  type V1Node,
  type V1PersistentVolumeClaim,
  type V1Pod,
  type V1StatefulSet,
  VersionApi,
} from "@kubernetes/client-node";
import { type Logger, silentLogger } from "../../../lib/logger.ts";
import type {
  AgentType,
  LogOptions,
  NodeOverlay,
  ObservedPod,
  ObservedWorkload,
  Runtime,
  RuntimeSnapshot,
  RuntimeTask,
  StopOptions,
  WorkloadKind,
} from "../types.ts";
import { apiErrorCode, describeApiError, KubeApiError } from "./api-error.ts";
import { diskUsageFromSummary } from "./disk-usage.ts";
import {
  ANNOTATION_TASK_UID,
  FIELD_MANAGER,
  LABEL_INSTANCE,
  LABEL_MANAGED_BY,
  LABEL_TASK_NAME,
  MANAGED_BY,
  MANAGED_SELECTOR,
} from "./labels.ts";
import { ensureNamespace } from "./namespace.ts";
import { hasOverlayRecord, type NodeFields, overlayPatch } from "./node-overlays.ts";
import {
  fallbackIndexes,
  observeNode,
  observePod,
  observeVolume,
  observeWorkload,
  podIndex,
  requestedByNode,
  taskGeneration,
} from "./observe.ts";
import {
  DEFAULT_NAMESPACE,
  RenderError,
  type RenderedTask,
  renderTask,
  type SidecarOptions,
} from "./render.ts";
import { WatchedCollection } from "./watched-collection.ts";

export {
  IDENTITY_SECRET,
  type SecretCredentialStoreOptions,
  secretCredentialStore,
} from "./credential-secret.ts";
export { overlayPatch } from "./node-overlays.ts";
export { requestedByNode } from "./observe.ts";
export { DEFAULT_NAMESPACE, RenderError, renderTask, type SidecarOptions } from "./render.ts";

export interface KubernetesRuntimeOptions {
  kubeConfig: KubeConfig;
  /** Namespace for Tasks whose template names none; created when missing. Default rlark-system. */
  defaultNamespace?: string;
  /** The network sidecar injected into pods of Tasks with a domain; none when unset. */
  sidecar?: SidecarOptions;
  agentVersion?: string;
  logger?: Logger;
  /** See RenderOptions.instance: only for several runtimes on one cluster (tests). */
  instance?: string;
  /**
   * Poll every node's kubelet Stats Summary (through the API server's node proxy) this often for
   * ObservedNode.disk. Off by default: it needs `nodes/proxy` get, which fleet/agent does not grant.
   */
  diskStatsIntervalMs?: number;
  /** How often each watch relists in full. Default 10 min. */
  relistIntervalMs?: number;
  /** How soon a failed apply, or a Job waiting to be replaced, is retried. Default 5 s. */
  retryIntervalMs?: number;
}

export interface RejectedTask {
  task: string;
  message: string;
}

const WORKLOADS: readonly { kind: WorkloadKind; apiVersion: string; path: string }[] = [
  { kind: "Deployment", apiVersion: "apps/v1", path: "/apis/apps/v1/deployments" },
  { kind: "StatefulSet", apiVersion: "apps/v1", path: "/apis/apps/v1/statefulsets" },
  { kind: "DaemonSet", apiVersion: "apps/v1", path: "/apis/apps/v1/daemonsets" },
  { kind: "Job", apiVersion: "batch/v1", path: "/apis/batch/v1/jobs" },
];
/** Kinds rendered next to workloads, pruned by label but not watched. */
const COMPANIONS = [
  { apiVersion: "v1", kind: "Service" },
  { apiVersion: "v1", kind: "ConfigMap" },
];

type AnyWorkload = V1Deployment | V1StatefulSet | V1DaemonSet | V1Job;

/** Server-side applies in flight at once. */
const APPLY_CONCURRENCY = 8;
/** An unchanged Task is applied again after this long anyway, to undo drift made behind our back. */
const REAPPLY_AFTER_MS = 5 * 60_000;

const objectKey = (o: KubernetesObject): string =>
  `${o.apiVersion}/${o.kind}/${o.metadata?.namespace ?? ""}/${o.metadata?.name ?? ""}`;

/** Runs Kubernetes Tasks on one cluster. Create with {@link KubernetesRuntime.start}. */
export class KubernetesRuntime implements Runtime {
  readonly agentTypes: readonly AgentType[] = ["Kubernetes"];
  readonly #options: KubernetesRuntimeOptions;
  readonly #logger: Logger;
  readonly #objects: KubernetesObjectApi;
  readonly #core: CoreV1Api;
  readonly #nodes: WatchedCollection<V1Node>;
  readonly #pods: WatchedCollection<V1Pod>;
  readonly #volumes: WatchedCollection<V1PersistentVolumeClaim>;
  readonly #workloads = new Map<WorkloadKind, WatchedCollection<AnyWorkload>>();
  readonly #listeners = new Set<() => void>();
  readonly #namespaces = new Set<string>();
  /** What was last applied for each Task, and when: unchanged Tasks are not re-sent on every delta. */
  readonly #applied = new Map<string, { objects: string; at: number }>();
  readonly #selector: string;
  #desired: readonly RuntimeTask[] | undefined;
  #overlays: readonly NodeOverlay[] | undefined;
  #rejected: RejectedTask[] = [];
  #reconciling: Promise<void> = Promise.resolve();
  #retry: NodeJS.Timeout | undefined;
  #overlayTimer: NodeJS.Timeout | undefined;
  #diskTimer: NodeJS.Timeout | undefined;
  readonly #disk = new Map<string, { usedBytes: number; totalBytes: number }>();
  /** Nodes whose stats summary could not be read last time: said once, not every round. */
  readonly #diskFailing = new Set<string>();
  #kubernetesVersion: string | undefined;
  #versionTimer: NodeJS.Timeout | undefined;
  #changePending = false;
  #snapshot: RuntimeSnapshot | undefined;
  #stopped = false;

  private constructor(options: KubernetesRuntimeOptions) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger;
    const kc = options.kubeConfig;
    this.#objects = KubernetesObjectApi.makeApiClient(kc);
    this.#core = kc.makeApiClient(CoreV1Api);
    // without an instance, what an instance made (a test's runtime on a shared cluster) is not ours
    this.#selector = `${MANAGED_SELECTOR},${options.instance ? `${LABEL_INSTANCE}=${options.instance}` : `!${LABEL_INSTANCE}`}`;
    const common = {
      kubeConfig: kc,
      logger: this.#logger,
      ...(options.relistIntervalMs ? { relistIntervalMs: options.relistIntervalMs } : {}),
    };
    this.#nodes = new WatchedCollection<V1Node>({
      ...common,
      apiVersion: "v1",
      kind: "Node",
      path: "/api/v1/nodes",
      onChange: () => {
        this.#changed();
        this.#scheduleOverlays();
      },
    });
    // every pod, not only ours: a node's requested counts whatever runs there
    this.#pods = new WatchedCollection<V1Pod>({
      ...common,
      apiVersion: "v1",
      kind: "Pod",
      path: "/api/v1/pods",
      onChange: () => this.#changed(),
    });
    this.#volumes = new WatchedCollection<V1PersistentVolumeClaim>({
      ...common,
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      path: "/api/v1/persistentvolumeclaims",
      labelSelector: this.#selector,
      onChange: () => this.#changed(),
    });
    for (const w of WORKLOADS) {
      this.#workloads.set(
        w.kind,
        new WatchedCollection<AnyWorkload>({
          ...common,
          apiVersion: w.apiVersion,
          kind: w.kind,
          path: w.path,
          labelSelector: this.#selector,
          onChange: () => this.#changed(),
        }),
      );
    }
  }

  /** Starts the watches and resolves once every cache has its first list. */
  static async start(options: KubernetesRuntimeOptions): Promise<KubernetesRuntime> {
    const runtime = new KubernetesRuntime(options);
    const all = runtime.#collections();
    for (const c of all) c.start();
    await Promise.all([...all.map((c) => c.synced), runtime.#readVersion()]);
    runtime.#pollVersion(options.relistIntervalMs ?? 600_000);
    if (options.diskStatsIntervalMs) runtime.#pollDisk(options.diskStatsIntervalMs);
    return runtime;
  }

  /** The API server's gitVersion (/version, readable by every authenticated identity). */
  async #readVersion(): Promise<void> {
    try {
      const { gitVersion } = await this.#options.kubeConfig.makeApiClient(VersionApi).getCode();
      if (gitVersion !== this.#kubernetesVersion) {
        this.#kubernetesVersion = gitVersion;
        this.#changed();
      }
    } catch (err) {
      this.#logger.warn("could not read the Kubernetes version", {
        error: describeApiError(err, "/version"),
      });
    }
  }

  /** Again now and then: the control plane may be upgraded under a running agent. */
  #pollVersion(intervalMs: number): void {
    this.#versionTimer = setTimeout(() => {
      void this.#readVersion().finally(() => {
        if (!this.#stopped) this.#pollVersion(intervalMs);
      });
    }, intervalMs);
  }

  #collections(): WatchedCollection<KubernetesObject>[] {
    return [this.#nodes, this.#pods, this.#volumes, ...this.#workloads.values()];
  }

  /** Tasks handed to apply() that cannot run as given, with the reason. */
  get rejected(): readonly RejectedTask[] {
    return this.#rejected;
  }

  // ------------------------------------------------------------------------------------------
  // apply and prune

  apply(desired: readonly RuntimeTask[]): Promise<void> {
    this.#desired = desired.filter((t) => t.spec.agentType === "Kubernetes");
    return this.#reconcile();
  }

  /** One reconcile at a time; each works from the latest desired set. */
  #reconcile(): Promise<void> {
    const next = this.#reconciling.then(() => this.#reconcileOnce());
    this.#reconciling = next.catch(() => undefined);
    return next;
  }

  #scheduleRetry(): void {
    if (this.#stopped || this.#retry) return;
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      void this.#reconcile().catch((err) =>
        this.#logger.warn("reconcile failed", { error: describeApiError(err) }),
      );
    }, this.#options.retryIntervalMs ?? 5000);
  }

  async #reconcileOnce(): Promise<void> {
    const desired = this.#desired;
    if (!desired || this.#stopped) return;
    const defaultNamespace = this.#options.defaultNamespace ?? DEFAULT_NAMESPACE;
    const rendered: RenderedTask[] = [];
    const rejected: RejectedTask[] = [];
    for (const task of desired) {
      try {
        rendered.push(
          renderTask(task, {
            defaultNamespace,
            desired,
            ...(this.#options.instance ? { instance: this.#options.instance } : {}),
            ...(this.#options.sidecar ? { sidecar: this.#options.sidecar } : {}),
          }),
        );
      } catch (err) {
        if (!(err instanceof RenderError)) throw err;
        rejected.push({ task: task.metadata.name, message: err.message });
      }
    }
    let retry = false;

    for (const namespace of new Set(rendered.map((r) => r.namespace))) {
      if (this.#namespaces.has(namespace)) continue;
      try {
        await ensureNamespace(this.#core, namespace);
        this.#namespaces.add(namespace);
      } catch (err) {
        this.#logger.warn("could not create namespace", { namespace, error: describeApiError(err) });
        retry = true;
      }
    }

    const keep = new Set<string>();
    for (const r of rendered) for (const obj of r.objects) keep.add(objectKey(obj));
    // Tasks are independent: a few applies in flight at once instead of one round trip after the
    // other (200 Tasks took 23 s one by one). A Task whose objects are as last applied, recently,
    // and whose workload the watch still sees, is not sent again on every delta.
    const pending = rendered.filter((r) => !this.#recentlyApplied(r));
    let next = 0;
    const worker = async () => {
      while (next < pending.length) {
        const r = pending[next++] as RenderedTask;
        const outcome = await this.#applyTask(r);
        if (outcome === "applied") {
          this.#applied.set(r.task, { objects: JSON.stringify(r.objects), at: Date.now() });
          continue;
        }
        this.#applied.delete(r.task);
        if (outcome === "retry") retry = true;
        else rejected.push({ task: r.task, message: outcome.invalid });
      }
    };
    await Promise.all(Array.from({ length: Math.min(APPLY_CONCURRENCY, pending.length) }, worker));
    for (const task of this.#applied.keys())
      if (!rendered.some((r) => r.task === task)) this.#applied.delete(task);
    this.#rejected = rejected;
    // a Task that cannot run as given keeps what it had: a bad edit must not wipe a running Task
    const keepTasks = new Set(rejected.map((r) => r.task));
    if (!(await this.#prune(keep, keepTasks))) retry = true;
    if (retry) this.#scheduleRetry();
  }

  /** Unchanged since the last successful apply, within the re-apply period, and still observed. */
  #recentlyApplied(r: RenderedTask): boolean {
    const last = this.#applied.get(r.task);
    if (!last || Date.now() - last.at > REAPPLY_AFTER_MS) return false;
    if (last.objects !== JSON.stringify(r.objects)) return false;
    return r.objects.every((obj) => {
      const collection = this.#workloads.get(obj.kind as WorkloadKind);
      // Companions (Services, ConfigMaps) are not watched; their workload's presence stands for them.
      return (
        !collection || collection.get(obj.metadata?.namespace ?? "", obj.metadata?.name ?? "") !== undefined
      );
    });
  }

  /** Applies one Task's objects: done, to be retried, or refused by the API server as invalid. */
  async #applyTask(r: RenderedTask): Promise<"applied" | "retry" | { invalid: string }> {
    for (const obj of r.objects) {
      if (obj.kind === "Job" && !(await this.#jobReady(obj))) return "retry";
      try {
        await this.#objects.patch(
          obj,
          undefined,
          undefined,
          FIELD_MANAGER,
          true,
          PatchStrategy.ServerSideApply,
        );
      } catch (err) {
        if (apiErrorCode(err) === 422) {
          // a Job's pod template cannot change: replace the Job; anything else is the Task's fault
          const existing =
            obj.kind === "Job"
              ? this.#workloads.get("Job")?.get(obj.metadata?.namespace ?? "", obj.metadata?.name ?? "")
              : undefined;
          if (existing) {
            await this.#delete(obj);
            return "retry";
          }
          return { invalid: `${obj.kind} ${obj.metadata?.name}: ${describeApiError(err)}` };
        }
        // the namespace was deleted behind our back: make it again on the retry
        if (apiErrorCode(err) === 404) this.#namespaces.delete(r.namespace);
        this.#logger.warn("apply failed", {
          task: r.task,
          object: objectKey(obj),
          error: describeApiError(err),
        });
        return "retry";
      }
    }
    return "applied";
  }

  /** A Job from an earlier Task under the same name (other uid) is deleted before the new one is made. */
  async #jobReady(obj: KubernetesObject): Promise<boolean> {
    const existing = this.#workloads.get("Job")?.get(obj.metadata?.namespace ?? "", obj.metadata?.name ?? "");
    if (!existing) return true;
    if (existing.metadata?.deletionTimestamp) return false;
    const uid = obj.metadata?.annotations?.[ANNOTATION_TASK_UID];
    const had = existing.metadata?.annotations?.[ANNOTATION_TASK_UID];
    if (uid && had && uid !== had) {
      await this.#delete(existing);
      return false;
    }
    return true;
  }

  async #delete(obj: KubernetesObject): Promise<boolean> {
    try {
      await this.#objects.delete(
        {
          apiVersion: obj.apiVersion,
          kind: obj.kind,
          metadata: { name: obj.metadata?.name, namespace: obj.metadata?.namespace },
        },
        undefined,
        undefined,
        undefined,
        undefined,
        // the workload stays, terminating, until its pods are gone: the Task's stop is visible
        "Foreground",
      );
      return true;
    } catch (err) {
      if (apiErrorCode(err) === 404) return true;
      this.#logger.warn("delete failed", { object: objectKey(obj), error: describeApiError(err) });
      return false;
    }
  }

  /** Deletes every labelled object not in `keep` (unless its Task is in `keepTasks`); false on failures. */
  async #prune(keep: Set<string>, keepTasks: Set<string>): Promise<boolean> {
    const candidates: KubernetesObject[] = [];
    for (const [kind, collection] of this.#workloads) {
      const apiVersion = WORKLOADS.find((w) => w.kind === kind)?.apiVersion ?? "";
      for (const obj of collection.values()) candidates.push({ ...obj, apiVersion, kind });
    }
    let ok = true;
    for (const c of COMPANIONS) {
      try {
        const list = await this.#objects.list(
          c.apiVersion,
          c.kind,
          undefined,
          undefined,
          undefined,
          undefined,
          undefined,
          this.#selector,
        );
        for (const obj of list.items) candidates.push({ ...obj, apiVersion: c.apiVersion, kind: c.kind });
      } catch (err) {
        this.#logger.warn("list failed", { kind: c.kind, error: describeApiError(err) });
        ok = false;
      }
    }
    for (const obj of candidates) {
      const task = obj.metadata?.labels?.[LABEL_TASK_NAME] ?? "";
      if (keep.has(objectKey(obj)) || keepTasks.has(task) || obj.metadata?.deletionTimestamp) continue;
      if (!(await this.#delete(obj))) ok = false;
    }
    // the claims of Tasks no longer desired: ephemeral ones go with their pods anyway, the
    // rest would outlive them; pvc-protection holds each until no pod uses it
    const desiredTaskNames = new Set<string>();
    for (const t of this.#desired ?? []) desiredTaskNames.add(t.metadata.name);
    for (const pvc of this.#volumes.values()) {
      const task = pvc.metadata?.labels?.[LABEL_TASK_NAME] ?? "";
      if (desiredTaskNames.has(task) || pvc.metadata?.deletionTimestamp) continue;
      if (!(await this.#delete({ ...pvc, apiVersion: "v1", kind: "PersistentVolumeClaim" }))) ok = false;
    }
    return ok;
  }

  // ------------------------------------------------------------------------------------------
  // observe

  #owns(obj: KubernetesObject): boolean {
    const labels = obj.metadata?.labels ?? {};
    if (labels[LABEL_MANAGED_BY] !== MANAGED_BY) return false;
    return (labels[LABEL_INSTANCE] ?? "") === (this.#options.instance ?? "");
  }

  #changed(): void {
    this.#snapshot = undefined;
    if (this.#changePending || this.#stopped) return;
    this.#changePending = true;
    setImmediate(() => {
      this.#changePending = false;
      for (const listener of [...this.#listeners]) {
        try {
          listener();
        } catch (err) {
          this.#logger.error("change listener failed", { error: describeApiError(err) });
        }
      }
    });
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  observe(): RuntimeSnapshot {
    if (!this.#snapshot) this.#snapshot = this.#buildSnapshot();
    return this.#snapshot;
  }

  #buildSnapshot(): RuntimeSnapshot {
    const agentVersion = this.#options.agentVersion ?? "0.0.0";
    const allPods = [...this.#pods.values()];
    const requested = requestedByNode(allPods);
    const nodes = [...this.#nodes.values()]
      .map((n) => {
        const name = n.metadata?.name ?? "";
        return observeNode(n, requested.get(name), agentVersion, this.#disk.get(name));
      })
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));

    const byTask = new Map<string, V1Pod[]>();
    for (const pod of allPods) {
      const task = pod.metadata?.labels?.[LABEL_TASK_NAME];
      if (!task || !this.#owns(pod)) continue;
      const key = `${pod.metadata?.namespace}/${task}`;
      let list = byTask.get(key);
      if (!list) {
        list = [];
        byTask.set(key, list);
      }
      list.push(pod);
    }

    const workloads: ObservedWorkload[] = [];
    const generations = new Map<string, number>();
    for (const [kind, collection] of this.#workloads) {
      for (const obj of collection.values()) {
        const task = obj.metadata?.labels?.[LABEL_TASK_NAME] ?? "";
        const key = `${obj.metadata?.namespace}/${task}`;
        const g = taskGeneration(obj);
        if (g !== undefined) generations.set(key, g);
        workloads.push(observeWorkload(kind, obj, byTask.get(key) ?? []));
      }
    }
    workloads.sort((a, b) =>
      `${a.namespace}/${a.name}/${a.kind}` < `${b.namespace}/${b.name}/${b.kind}` ? -1 : 1,
    );

    const pods: ObservedPod[] = [];
    for (const [key, list] of byTask) {
      const fallback = fallbackIndexes(list.filter((p) => podIndex(p) === undefined));
      for (const pod of list) pods.push(observePod(pod, fallback.get(pod) ?? 0, generations.get(key)));
    }
    pods.sort((a, b) => (`${a.namespace}/${a.name}` < `${b.namespace}/${b.name}` ? -1 : 1));

    const volumes = [...this.#volumes.values()]
      .map(observeVolume)
      .sort((a, b) => (`${a.namespace}/${a.name}` < `${b.namespace}/${b.name}` ? -1 : 1));
    return {
      nodes,
      pods,
      workloads,
      volumes,
      ...(this.#kubernetesVersion ? { kubernetesVersion: this.#kubernetesVersion } : {}),
    };
  }

  /**
   * Reads every node's Stats Summary, then again after `intervalMs`. A node that fails keeps its
   * last figures, or has none (a node without a kubelet, kwok's, never has any); its failure is
   * logged once, not every round, and its recovery once.
   */
  #pollDisk(intervalMs: number): void {
    const round = async () => {
      const nodes = [...this.#nodes.values()];
      const names = new Set(nodes.map((n) => n.metadata?.name ?? ""));
      for (const name of this.#disk.keys()) if (!names.has(name)) this.#disk.delete(name);
      for (const name of this.#diskFailing) if (!names.has(name)) this.#diskFailing.delete(name);
      for (const node of nodes) {
        const name = node.metadata?.name ?? "";
        if (this.#stopped) return;
        try {
          const text = await this.#core.connectGetNodeProxyWithPath({ name, path: "stats/summary" });
          const usage = diskUsageFromSummary(typeof text === "string" ? JSON.parse(text) : text);
          if (!usage) throw new Error("the stats summary has no node filesystem figures");
          if (this.#diskFailing.delete(name))
            this.#logger.info("disk figures available again", { node: name });
          const before = this.#disk.get(name);
          if (usage.usedBytes !== before?.usedBytes || usage.totalBytes !== before?.totalBytes) {
            this.#disk.set(name, usage);
            this.#changed();
          }
        } catch (err) {
          if (this.#diskFailing.has(name)) continue;
          this.#diskFailing.add(name);
          this.#logger.info("no disk figures for this node (its kubelet stats summary cannot be read)", {
            node: name,
            error: describeApiError(err, `nodes/${name}/proxy/stats/summary`),
          });
        }
      }
    };
    const loop = () => {
      void round().finally(() => {
        if (!this.#stopped) this.#diskTimer = setTimeout(loop, intervalMs);
      });
    };
    loop();
  }

  // ------------------------------------------------------------------------------------------
  // node overlays

  async applyNodeOverlays(overlays: readonly NodeOverlay[]): Promise<void> {
    this.#overlays = overlays;
    await this.#syncOverlays();
  }

  /** Node changes re-check the overlays (an admin's kubectl label must not undo git's). */
  #scheduleOverlays(): void {
    if (!this.#overlays || this.#overlayTimer || this.#stopped) return;
    this.#overlayTimer = setTimeout(() => {
      this.#overlayTimer = undefined;
      void this.#syncOverlays().catch((err) =>
        this.#logger.warn("node overlays failed", { error: describeApiError(err) }),
      );
    }, 200);
  }

  async #syncOverlays(): Promise<void> {
    const overlays = this.#overlays ?? [];
    const wanted = new Map(overlays.map((o) => [o.name, o]));
    const failures: string[] = [];
    for (const node of this.#nodes.values()) {
      const name = node.metadata?.name ?? "";
      const fields: NodeFields = {
        labels: node.metadata?.labels ?? {},
        annotations: node.metadata?.annotations ?? {},
        unschedulable: node.spec?.unschedulable === true,
      };
      const overlay = wanted.get(name);
      if (!overlay && !hasOverlayRecord(fields)) continue;
      const patch = overlayPatch(fields, overlay);
      if (!patch) continue;
      try {
        await this.#objects.patch(
          // merge patch: null removes a key; the client's types do not know that
          {
            apiVersion: "v1",
            kind: "Node",
            ...patch,
            metadata: { ...patch.metadata, name },
          } as unknown as KubernetesObject,
          undefined,
          undefined,
          FIELD_MANAGER,
          undefined,
          PatchStrategy.MergePatch,
        );
      } catch (err) {
        failures.push(`${name}: ${describeApiError(err)}`);
      }
    }
    for (const name of wanted.keys()) {
      if (!this.#nodes.get("", name))
        this.#logger.warn("node overlay for a node the cluster does not have", { node: name });
    }
    if (failures.length > 0) throw new Error(`node overlays: ${failures.join("; ")}`);
  }

  // ------------------------------------------------------------------------------------------

  async logs(pod: { namespace: string; name: string }, options: LogOptions = {}): Promise<string> {
    const cached = this.#pods.get(pod.namespace, pod.name);
    const container = cached?.spec?.containers[0]?.name;
    try {
      return await this.#core.readNamespacedPodLog({
        name: pod.name,
        namespace: pod.namespace,
        ...(container ? { container } : {}),
        ...(options.tail !== undefined ? { tailLines: options.tail } : {}),
      });
    } catch (err) {
      throw new KubeApiError(err, `log of pod ${pod.namespace}/${pod.name}`);
    }
  }

  async stop(options: StopOptions = {}): Promise<void> {
    if (options.terminatePods) {
      this.#desired = [];
      await this.#reconcile();
    }
    this.#stopped = true;
    clearTimeout(this.#retry);
    clearTimeout(this.#overlayTimer);
    clearTimeout(this.#diskTimer);
    clearTimeout(this.#versionTimer);
    await this.#reconciling;
    for (const c of this.#collections()) c.stop();
    this.#listeners.clear();
  }
}
