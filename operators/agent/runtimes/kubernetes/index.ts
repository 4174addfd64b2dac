// The kubernetes runtime: runs the agent's Tasks as native workloads on one cluster. This class
// only wires the steps, each in the folder of what it does: watch/ keeps caches of Nodes, Pods,
// the workloads and the Tasks' volume claims (watches.ts), maps them to the runtime contract
// (snapshot.ts, observe.ts) and tells the agent (change-feed.ts); workloads/ renders every Task
// (render.ts), server-side applies the result with field manager rlark-agent and prunes what
// carries our labels but is no longer desired (reconciler.ts); access/ is the access facet
// (pods/exec, pods/portforward, pods/log); cluster/ the cluster facet's node overlays and
// browsing, and what the watches do not see (disk-poller.ts, kubernetes-version.ts); secrets/
// keeps the nodeservers' Secret rlark-domain-peers and the Secrets opened from SealedSecrets;
// addons/ installs Addons; images/ pulls the Tasks' images onto their placed nodes ahead of the
// pods (docs/adr/0012-image-pre-pull.md). Everything the runtime owns is found again by label, so a new runtime
// on the same cluster adopts it: no state of its own.

import type { Readable } from "node:stream";
import type { KubeConfig } from "@kubernetes/client-node";
import { AGENT_INSTANCE_LABEL, type DomainTasks } from "../../../api/index.ts";
import { type Clock, systemClock } from "../../../lib/clock.ts";
import { KubeHttp } from "../../../lib/kube-http.ts";
import { type Logger, silentLogger } from "../../../lib/logger.ts";
import type {
  AgentType,
  ContainerAccess,
  LogStreamOptions,
  Runtime,
  RuntimeCluster,
  RuntimeNetwork,
  RuntimeSnapshot,
  RuntimeTask,
  StopOptions,
} from "../types.ts";
import { containerAccess, type PodFilesOptions } from "./access/container-access.ts";
import { checkPodAccess } from "./access/pod-access.ts";
import { podLogStream } from "./access/pod-logs.ts";
import { AddonInstaller } from "./addons/addon-installer.ts";
import { type ApiClients, apiClients } from "./api-clients.ts";
import { BundleApplier } from "./bundles/bundle-applier.ts";
import { kubernetesBrowse } from "./cluster/browse.ts";
import { DiskPoller } from "./cluster/disk-poller.ts";
import { KubernetesVersion } from "./cluster/kubernetes-version.ts";
import { NodeOverlaySync } from "./cluster/node-overlay-sync.ts";
import { type ImagePrePullOptions, KubernetesImagePrePull } from "./images/index.ts";
import { MANAGED_SELECTOR } from "./labels.ts";
import { ClusterOpenApi } from "./openapi/index.ts";
import { DomainPeersWriter } from "./secrets/domain-peers-secret.ts";
import { SealedSecretsWriter } from "./secrets/sealed-secrets.ts";
import { ChangeFeed } from "./watch/change-feed.ts";
import { buildSnapshot } from "./watch/snapshot.ts";
import { type ClusterWatches, watchCluster } from "./watch/watches.ts";
import { type RejectedTask, WorkloadReconciler } from "./workloads/reconciler.ts";
import { DEFAULT_NAMESPACE, type SidecarOptions } from "./workloads/render.ts";

export { loadKubeConfig } from "../../../lib/kube-config.ts";
export { overlayPatch } from "./cluster/node-overlays.ts";
export {
  IDENTITY_SECRET,
  type SecretCredentialStoreOptions,
  secretCredentialStore,
} from "./secrets/credential-secret.ts";
export {
  DOMAIN_PEERS_KEY,
  DOMAIN_PEERS_SECRET,
  domainPeersSecret,
} from "./secrets/domain-peers-secret.ts";
export { requestedByNode } from "./watch/observe.ts";
export { kubernetesDryRun } from "./workloads/dry-run.ts";
export type { RejectedTask } from "./workloads/reconciler.ts";
export {
  DEFAULT_NAMESPACE,
  DEFAULT_SIDECAR_IMAGE,
  RenderError,
  renderTask,
  type SidecarOptions,
} from "./workloads/render.ts";

export interface KubernetesRuntimeOptions {
  kubeConfig: KubeConfig;
  /**
   * The agent's namespace: Tasks whose template names none, and the Secret rlark-domain-peers.
   * Created when missing. Default rlark-system.
   */
  defaultNamespace?: string;
  /** The image of the network init container and sidecar injected into pods of Tasks with a domain. */
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
  /** How often the Version API is read: the cluster's periodic connectivity test. Default 60 s. */
  versionIntervalMs?: number;
  /** How often each watch relists in full. Default 10 min. */
  relistIntervalMs?: number;
  /**
   * How soon a failed apply, or a Job waiting to be replaced, is first retried; each retry in a
   * row doubles it (with jitter), up to a minute. Default 5 s.
   */
  retryIntervalMs?: number;
  /** How often an Addon (or Bundle) that is not Ready yet is looked at again. Default 2 s. */
  addonPollIntervalMs?: number;
  /** How often a settled Bundle is checked for drift (docs/bundles.md). Default 30 s. */
  bundleDriftIntervalMs?: number;
  /** Time for retries and polls (tests pass a FakeClock). */
  clock?: Clock;
  /** SFTP into pods (shared/exec-files.ts). */
  files?: PodFilesOptions;
  /** Image pre-pull's bounds (images/index.ts); on by default, `{ concurrency: 0 }` turns it off. */
  imagePrePull?: ImagePrePullOptions;
}

/** Runs Kubernetes Tasks on one cluster. Create with {@link KubernetesRuntime.start}. */
export class KubernetesRuntime implements Runtime {
  readonly agentTypes: readonly AgentType[] = ["Kubernetes"];
  readonly #options: KubernetesRuntimeOptions;
  readonly #clients: ApiClients;
  readonly #feed: ChangeFeed;
  readonly #watches: ClusterWatches;
  readonly #reconciler: WorkloadReconciler;
  readonly #overlays: NodeOverlaySync;
  readonly #disk: DiskPoller;
  readonly #prePull: KubernetesImagePrePull;
  readonly #version: KubernetesVersion;
  readonly #peers: DomainPeersWriter;
  /** DomainPeer spec.tasks by Domain (JSON, to tell a change): a Ray worker's head address. */
  #domainTasks = new Map<string, Map<string, readonly string[]>>();
  #domainTasksJson = "";
  readonly #addons: AddonInstaller;
  readonly #bundles: BundleApplier;
  readonly #secrets: SealedSecretsWriter;
  readonly #openApi: ClusterOpenApi;
  readonly #openApiHttp: KubeHttp;
  /** Sessions, files and port-forwards through the pods' subresources (access/). */
  readonly access: ContainerAccess;
  /** The nodeservers' peers state, in the Secret rlark-domain-peers (secrets/domain-peers-secret.ts). */
  readonly network: RuntimeNetwork;
  /** Node overlays, Addons, Secrets from SealedSecrets and browsing, on the cluster's API. */
  readonly cluster: RuntimeCluster;

  /**
   * A Bundle object's violations of this cluster's own OpenAPI schema (fetched once per
   * Kubernetes version, openapi/); [] when it cannot be read. Used before applying a Bundle and
   * by plans' dry-runs (workloads/dry-run.ts).
   */
  checkSchema(object: Record<string, unknown>): Promise<string[]> {
    return this.#openApi.check(object);
  }

  private constructor(options: KubernetesRuntimeOptions) {
    this.#options = options;
    const logger = options.logger ?? silentLogger;
    const clock = options.clock ?? systemClock;
    this.#clients = apiClients(options.kubeConfig);
    const { objects, core } = this.#clients;
    this.#feed = new ChangeFeed(logger);
    const changed = () => this.#feed.changed();
    // without an instance, what an instance made (a test's runtime on a shared cluster) is not ours
    const selector = `${MANAGED_SELECTOR},${options.instance ? `${AGENT_INSTANCE_LABEL}=${options.instance}` : `!${AGENT_INSTANCE_LABEL}`}`;
    this.#watches = watchCluster({
      kubeConfig: options.kubeConfig,
      logger,
      relistIntervalMs: options.relistIntervalMs,
      selector,
      onChange: changed,
      onNodeChange: () => this.#overlays.nodesChanged(),
    });
    this.#reconciler = new WorkloadReconciler({
      objects,
      core,
      watches: this.#watches,
      selector,
      logger,
      onProblemsChange: changed,
      defaultNamespace: options.defaultNamespace,
      sidecar: options.sidecar,
      instance: options.instance,
      domainTasks: (domain, task) => this.#domainTasks.get(domain)?.get(task),
      retryIntervalMs: options.retryIntervalMs,
      clock,
    });
    this.#overlays = new NodeOverlaySync(objects, this.#watches.nodes, logger, {
      retryIntervalMs: options.retryIntervalMs,
      clock,
    });
    this.#disk = new DiskPoller(core, this.#watches.nodes, logger, changed, clock);
    this.#prePull = new KubernetesImagePrePull({
      core,
      nodes: this.#watches.nodes,
      namespace: options.defaultNamespace ?? DEFAULT_NAMESPACE,
      instance: options.instance,
      options: options.imagePrePull ?? {},
      logger,
      clock,
      onChange: changed,
    });
    this.#version = new KubernetesVersion(this.#clients.version, logger, changed, clock);
    this.#openApiHttp = new KubeHttp({ kubeConfig: options.kubeConfig, maxSockets: 2 });
    this.#openApi = new ClusterOpenApi({
      http: this.#openApiHttp,
      version: () => this.#version.current,
      logger,
      clock,
    });
    this.#peers = new DomainPeersWriter({
      objects,
      core,
      namespace: options.defaultNamespace ?? DEFAULT_NAMESPACE,
      instance: options.instance,
      logger,
      retryIntervalMs: options.retryIntervalMs,
      clock,
    });
    this.#addons = new AddonInstaller({
      objects,
      core,
      namespace: options.defaultNamespace ?? DEFAULT_NAMESPACE,
      instance: options.instance,
      logger,
      kubernetesVersion: () => this.#version.current,
      onChange: changed,
      pollIntervalMs: options.addonPollIntervalMs,
      clock,
    });
    this.#bundles = new BundleApplier({
      objects,
      core,
      namespace: options.defaultNamespace ?? DEFAULT_NAMESPACE,
      instance: options.instance,
      logger,
      onChange: changed,
      pollIntervalMs: options.addonPollIntervalMs,
      driftIntervalMs: options.bundleDriftIntervalMs,
      checkSchema: (object) => this.checkSchema(object as unknown as Record<string, unknown>),
      clock,
    });
    this.#secrets = new SealedSecretsWriter({
      objects,
      core,
      selector,
      instance: options.instance,
      logger,
      retryIntervalMs: options.retryIntervalMs,
      clock,
    });
    this.access = containerAccess({
      kubeConfig: options.kubeConfig,
      pods: this.#watches.pods,
      instance: options.instance,
      files: options.files,
    });
    this.network = {
      applyPeersState: (state) => this.#peers.write(state),
      applyDomainTasks: (domains) => this.#noteDomainTasks(domains),
    };
    this.cluster = {
      applyNodeOverlays: (overlays) => this.#overlays.apply(overlays),
      applyAddons: (addons) => this.#addons.apply(addons),
      applyBundles: (bundles) => this.#bundles.apply(bundles),
      applySecrets: (secrets) => this.#secrets.apply(secrets),
      browse: kubernetesBrowse(core, this.#clients.apps),
    };
  }

  /** Keeps the Domains' Task addresses; when they change, Ray workers' ConfigMaps are rendered again. */
  #noteDomainTasks(domains: readonly DomainTasks[]): void {
    const json = JSON.stringify(domains.map((d) => [d.domain, d.tasks]));
    if (json === this.#domainTasksJson) return;
    this.#domainTasksJson = json;
    this.#domainTasks = new Map(domains.map((d) => [d.domain, new Map(d.tasks.map((t) => [t.name, t.ips]))]));
    this.#reconciler.refresh().catch(() => undefined);
  }

  /**
   * Starts the watches and resolves once every cache has its first list. Fails, with every watch
   * stopped, when RBAC forbids one of those lists; other failures are retried with backoff.
   */
  static async start(options: KubernetesRuntimeOptions): Promise<KubernetesRuntime> {
    const runtime = new KubernetesRuntime(options);
    const all = runtime.#watches.all;
    for (const c of all) c.start();
    try {
      await Promise.all([
        ...all.map((c) => c.synced),
        runtime.#version.start(options.versionIntervalMs ?? 60_000),
      ]);
    } catch (err) {
      await runtime.stop();
      throw err;
    }
    if (options.diskStatsIntervalMs) runtime.#disk.poll(options.diskStatsIntervalMs);
    return runtime;
  }

  /** Tasks handed to apply() that cannot run as given, with the reason. */
  get rejected(): readonly RejectedTask[] {
    return this.#reconciler.rejected;
  }

  apply(desired: readonly RuntimeTask[]): Promise<void> {
    const tasks = desired.filter((t) => t.spec.agentType === "Kubernetes");
    // beside the workloads, never before them: a pre-pull holds no pod back
    this.#prePull.apply(tasks);
    return this.#reconciler.apply(tasks);
  }

  onChange(listener: () => void): () => void {
    return this.#feed.onChange(listener);
  }

  observe(): RuntimeSnapshot {
    return this.#feed.snapshot(() => ({
      ...buildSnapshot({
        watches: this.#watches,
        disk: this.#disk.figures,
        images: (node) => this.#prePull.images(node),
        kubernetesVersion: this.#version.current,
        agentVersion: this.#options.agentVersion ?? "0.0.0",
        instance: this.#options.instance,
      }),
      addons: this.#addons.observe(),
      bundles: this.#bundles.observe(),
      applyProblems: this.#reconciler.problems,
      ...(this.#version.lastTest ? { lastTest: this.#version.lastTest } : {}),
    }));
  }

  /**
   * The logs API through this agent's own credentials, for pods of its Tasks (pod-logs.ts):
   * streamed, read as fast as the caller reads, and ended by destroying what it returns.
   */
  async logStream(pod: { namespace: string; name: string }, options: LogStreamOptions): Promise<Readable> {
    const container = checkPodAccess(
      this.#watches.pods,
      this.#options.instance,
      { ...pod, ...(options.container ? { container: options.container } : {}) },
      "logs",
    );
    return podLogStream(this.#options.kubeConfig, { ...pod, container }, options);
  }

  async stop(options: StopOptions = {}): Promise<void> {
    if (options.terminatePods) await this.#reconciler.apply([]);
    const stopping = [
      this.#reconciler.stop(),
      this.#overlays.stop(),
      this.#disk.stop(),
      this.#prePull.stop(),
      this.#version.stop(),
    ];
    await this.#addons.stop();
    await this.#bundles.stop();
    this.#openApiHttp.close();
    this.#feed.stop();
    await this.#peers.stop();
    await this.#secrets.stop();
    await Promise.all(stopping);
    for (const c of this.#watches.all) c.stop();
    this.#feed.clearListeners();
    await this.#clients.close();
  }
}
