// The process runtime (the seeds' "Raw" agent type): every replica of a Raw Task is a local process
// supervised by this agent, and this machine is the one Node. State lives under `stateDir`:
//
//   pods/<namespace>_<pod>/   pod.json, exit-code, output.log[.1]   (see pod-files.ts)
//   work/<namespace>_<task>/  default working directory of a Task's processes
//   artifacts/<sha256>/<file> verified artifacts, shared by every Task naming the same digest
//
// A runtime opened on a state dir an earlier one used adopts the processes recorded there, so
// an agent restart neither duplicates nor orphans anything.
import { mkdir } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { Duplex, Readable } from "node:stream";
import type { PeersState } from "../../../api/index.ts";
import { type Clock, systemClock } from "../../../lib/clock.ts";
import { type Logger, silentLogger } from "../../../lib/logger.ts";
import type {
  AgentType,
  LocalAccess,
  LogOptions,
  LogStreamOptions,
  ObservedNode,
  Runtime,
  RuntimeNetwork,
  RuntimeSnapshot,
  RuntimeTask,
  StopOptions,
} from "../types.ts";
import { ArtifactCache } from "./artifact-cache.ts";
import { type BackoffPolicy, kubeletBackoff } from "./crash-loop-backoff.ts";
import { findLaunched, type Launched } from "./launch.ts";
import { type Gpu, probeGpus, reportNode } from "./node-report.ts";
import { loadPodRecords, PodFiles } from "./pod-files.ts";
import { type PodNetwork, type PodNetworkOptions, PodNetworks } from "./pod-network.ts";
import { PodUsers, type PodUsersOptions } from "./pod-users.ts";
import { isSameProcessAlive, signalGroup } from "./proc.ts";
import { type LaunchHooks, Replica, type ReplicaContext } from "./replica.ts";
import { type DesiredPod, desiredPods, podKey, type RejectedTask } from "./spec.ts";
import { StateLock } from "./state-lock.ts";

export type { BackoffPolicy } from "./crash-loop-backoff.ts";
export { kubeletBackoff } from "./crash-loop-backoff.ts";
export { readLogTail } from "./log-file.ts";
export type { PodNetworkOptions } from "./pod-network.ts";
export type { PodUsersOptions } from "./pod-users.ts";
export { desiredPods, podRevision } from "./spec.ts";

export interface ProcessRuntimeOptions {
  /** Owned by this runtime; reuse it across agent restarts to adopt running processes. */
  stateDir: string;
  /** Node name; default the hostname. */
  nodeName?: string;
  /** Labels and annotations from the agent's configuration, reported on the Node. */
  nodeLabels?: Record<string, string>;
  nodeAnnotations?: Record<string, string>;
  /** The address reported for the Node and its pods; default the first non-loopback IPv4. */
  internalIP?: string;
  agentVersion?: string;
  /** SIGTERM to SIGKILL when a pod stops. Default 30 s (a Task's terminationGracePeriodSeconds wins). */
  terminationGracePeriodMs?: number;
  /** Restart backoff for Deployments and StatefulSets. Default the kubelet's: 10 s doubling to 5 min, reset after 10 min. */
  backoff?: Partial<BackoffPolicy>;
  /** How often adopted processes are checked for liveness. Default 1 s. */
  pollIntervalMs?: number;
  /**
   * Output logs. Each pod keeps `output.log` and the one before, `output.log.1`, each at most
   * `maxBytes` (default 10 MiB). A tail is at most `tailMaxLines` (10,000) lines and
   * `tailMaxBytes` (1 MiB).
   */
  logs?: { maxBytes?: number; tailMaxLines?: number; tailMaxBytes?: number };
  /** The nvidia-smi executable. Default "nvidia-smi" on PATH. */
  nvidiaSmi?: string;
  /** How often the Node is re-probed (memory and disk pressure, GPUs). Default 60 s. */
  nodeRefreshIntervalMs?: number;
  /** The environment every process starts from, before RLARK_* and the Task's env. Default PATH, HOME, LANG, TZ of the agent. */
  baseEnv?: Record<string, string>;
  /** Give up an artifact download after this long. Default 10 min. */
  artifactTimeoutMs?: number;
  /** Start and exit times and crash-loop restarts run on it; tests pass a FakeClock. */
  clock?: Clock;
  logger?: Logger;
  /** Tests only: called inside a launch, to crash the runtime at the worst moments. */
  launchHooks?: LaunchHooks;
  /**
   * Gives each pod of a Task in a Domain its own network namespace, REDIRECT and sidecar (needs
   * root; docs/networking.md). Without it such pods share the machine's network.
   */
  podNetwork?: PodNetworkOptions;
  /**
   * As root: the uid range pods run as, each Task its own uid (pod-users.ts), unless its Task
   * sets raw.runAsRoot. Without it, pods run as the agent's user.
   */
  podUsers?: PodUsersOptions;
}

function defaultBaseEnv(): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
  };
  for (const name of ["HOME", "LANG", "TZ"]) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

/** Runs Raw Tasks as local processes on this machine. Create with {@link ProcessRuntime.open}. */
export class ProcessRuntime implements Runtime {
  readonly agentTypes: readonly AgentType[] = ["Raw"];
  readonly #options: ProcessRuntimeOptions;
  readonly #ctx: ReplicaContext;
  readonly #logger: Logger;
  /** The pods this runtime runs, by key; at most one process group per key. */
  readonly #replicas = new Map<string, Replica>();
  /** Pods being stopped; a replacement under the same key waits until its predecessor is gone. */
  readonly #retiring = new Map<string, Replica>();
  readonly #listeners = new Set<() => void>();
  /** Virtual IPs of this machine's Domain pods by pod key, from the last peers state. */
  readonly #virtualIPs = new Map<string, string>();
  readonly #timers: NodeJS.Timeout[] = [];
  #desired: DesiredPod[] | undefined;
  #rejected: RejectedTask[] = [];
  #node: ObservedNode;
  #gpus: Gpu[];
  #changePending = false;
  #stopped = false;
  readonly #lock: StateLock;

  /** Its pods are local processes: the agent runs sessions and sftp-server beside them. */
  readonly access: LocalAccess = {
    kind: "local",
    environment: (pod) => this.#replicas.get(podKey(pod.namespace, pod.name))?.accessEnvironment(),
    connect: (pod, port) => this.#connect(pod, port),
    forwardAddress: (pod, port) => this.#forwardAddress(pod, port),
  };

  /** Domain pods with a network of their own get their virtual IPs from the peers state. */
  readonly network: RuntimeNetwork = { applyPeersState: (state) => this.#applyPeersState(state) };

  private constructor(
    options: ProcessRuntimeOptions,
    node: ObservedNode,
    gpus: Gpu[],
    artifacts: ArtifactCache,
    lock: StateLock,
    network: PodNetworks | undefined,
    users: PodUsers | undefined,
  ) {
    this.#options = options;
    this.#lock = lock;
    this.#node = node;
    this.#gpus = gpus;
    this.#logger = options.logger ?? silentLogger;
    const stateDir = resolve(options.stateDir);
    this.#ctx = {
      podsDir: join(stateDir, "pods"),
      workDir: join(stateDir, "work"),
      artifacts,
      backoff: { ...kubeletBackoff, ...options.backoff },
      gracePeriodMs: options.terminationGracePeriodMs ?? 30_000,
      pollIntervalMs: options.pollIntervalMs ?? 1000,
      killWaitMs: 10_000,
      logMaxBytes: options.logs?.maxBytes ?? 10 * 1024 * 1024,
      tail: {
        ...(options.logs?.tailMaxLines ? { maxLines: options.logs.tailMaxLines } : {}),
        ...(options.logs?.tailMaxBytes ? { maxBytes: options.logs.tailMaxBytes } : {}),
      },
      baseEnv: options.baseEnv ?? defaultBaseEnv(),
      node: () => ({ name: this.#node.name, ip: this.#internalIP() }),
      clock: options.clock ?? systemClock,
      logger: this.#logger,
      changed: () => this.#changed(),
      ...(options.launchHooks ? { hooks: options.launchHooks } : {}),
      ...(network ? { network } : {}),
      ...(users ? { users } : {}),
      virtualIP: (key) => this.#virtualIPs.get(key),
    };
  }

  /** Probes the machine, adopts what an earlier runtime left in `stateDir`, and starts supervising. */
  static async open(options: ProcessRuntimeOptions): Promise<ProcessRuntime> {
    const stateDir = resolve(options.stateDir);
    await mkdir(join(stateDir, "pods"), { recursive: true, mode: 0o700 });
    // before the lock: a bad link range is refused with nothing to undo
    const network = options.podNetwork ? new PodNetworks(options.podNetwork, stateDir) : undefined;
    const users = options.podUsers
      ? new PodUsers(options.podUsers, join(stateDir, "work"), [options.podNetwork?.sidecarUid ?? 1337])
      : undefined;
    const lock = StateLock.acquire(join(stateDir, "runtime.lock"), stateDir);
    const nodeOptions = {
      agentVersion: options.agentVersion ?? "0.0.0",
      nvidiaSmi: options.nvidiaSmi ?? "nvidia-smi",
      stateDir,
      ...(options.nodeName ? { name: options.nodeName } : {}),
      ...(options.nodeLabels ? { labels: options.nodeLabels } : {}),
      ...(options.nodeAnnotations ? { annotations: options.nodeAnnotations } : {}),
      ...(options.internalIP ? { internalIP: options.internalIP } : {}),
    };
    let gpus: Gpu[];
    let node: ObservedNode;
    try {
      gpus = await probeGpus(nodeOptions.nvidiaSmi);
      node = await reportNode(nodeOptions, gpus);
    } catch (error) {
      lock.release();
      throw error;
    }
    const artifacts = new ArtifactCache({
      dir: join(stateDir, "artifacts"),
      ...(options.artifactTimeoutMs ? { timeoutMs: options.artifactTimeoutMs } : {}),
    });
    // Pods run as users of their own: their working and artifact directories must be reachable.
    try {
      users?.openToPods(join(stateDir, "work"), false);
      users?.openToPods(join(stateDir, "artifacts"), true);
    } catch (error) {
      lock.release();
      throw error;
    }
    const runtime = new ProcessRuntime(options, node, gpus, artifacts, lock, network, users);
    runtime.#adopt();
    runtime.#startTimers(nodeOptions);
    return runtime;
  }

  /**
   * Pods whose processes run from `stateDir` (found by their command lines, so also when the
   * directory is gone): after a stop, those left for the next runtime to adopt.
   */
  static running(stateDir: string): number {
    return findLaunched(join(resolve(stateDir), "pods")).wrappers.length;
  }

  #internalIP(): string {
    return this.#node.addresses.find((a) => a.type === "InternalIP")?.address ?? "127.0.0.1";
  }

  #adopt(): void {
    const { records, unreadable } = loadPodRecords(this.#ctx.podsDir);
    for (const dir of unreadable) this.#logger.warn("ignoring unreadable pod state", { dir });
    const { wrappers, writers } = findLaunched(this.#ctx.podsDir);
    const known = new Set<number>();
    const found = new Map<string, { wrapper?: Launched; writer?: Launched }>();
    for (const record of records) {
      if (record.pid !== undefined && isSameProcessAlive(record.pid, record.processStart))
        known.add(record.pid);
      // A launch an earlier runtime began but never recorded: its processes carry its token.
      const token = Replica.launchToken(record);
      if (token === undefined) continue;
      const files = new PodFiles(this.#ctx.podsDir, record.namespace, record.name);
      const wrapper = wrappers.find((w) => w.token === token && w.file === files.exitCode);
      const writer = writers.find((w) => w.token === token && w.file === files.log);
      if (wrapper) known.add(wrapper.pid);
      found.set(`${record.namespace}/${record.name}`, {
        ...(wrapper ? { wrapper } : {}),
        ...(writer ? { writer } : {}),
      });
    }
    // Before adopting: adoption may start processes, which are in no record yet.
    this.#reapStrays(wrappers, known);
    this.#sweepNetworks(records.flatMap((r) => (r.network ? [r.network] : [])));
    for (const record of records) {
      const replica = Replica.adopt(record, this.#ctx, found.get(`${record.namespace}/${record.name}`));
      (replica.stopping ? this.#retiring : this.#replicas).set(replica.key, replica);
      if (replica.stopping) this.#whenGone(replica);
    }
  }

  /**
   * Kills wrapper processes started under this state dir that no record accounts for (a record
   * lost or removed while its process ran): they would otherwise run unsupervised. Their log
   * writers end by themselves once the wrappers' groups are gone.
   */
  #reapStrays(wrappers: readonly Launched[], known: Set<number>): void {
    for (const wrapper of wrappers) {
      if (known.has(wrapper.pid)) continue;
      this.#logger.warn("killing a process no pod record accounts for", {
        pid: wrapper.pid,
        exitCodeFile: wrapper.file,
      });
      signalGroup(wrapper.pid, "SIGKILL");
    }
  }

  /** Removes pod networks a crashed runtime left with no pod record (namespaces, veths, their rules). */
  #sweepNetworks(kept: PodNetwork[]): void {
    if (!this.#ctx.network) return;
    try {
      const removed = this.#ctx.network.sweep(kept);
      if (removed.netns.length + removed.links.length > 0)
        this.#logger.warn("removed pod networks no pod record accounts for", removed);
    } catch (error) {
      this.#logger.error("could not sweep pod networks", { error: (error as Error).message });
    }
  }

  #startTimers(nodeOptions: Parameters<typeof reportNode>[0]): void {
    this.#timers.push(
      setInterval(() => {
        void (async () => {
          const gpus = await probeGpus(nodeOptions.nvidiaSmi);
          const node = await reportNode(nodeOptions, gpus);
          if (this.#stopped) return;
          this.#gpus = gpus;
          if (JSON.stringify(node) !== JSON.stringify(this.#node)) {
            this.#node = node;
            this.#changed();
          }
        })().catch((error: unknown) =>
          this.#logger.warn("node refresh failed", { error: (error as Error).message }),
        );
      }, this.#options.nodeRefreshIntervalMs ?? 60_000),
    );
  }

  /** GPUs found on this machine at the last probe. */
  get gpus(): readonly Gpu[] {
    return this.#gpus;
  }

  /** Raw Tasks in the last desired set that cannot run as given (bad spec), with why. */
  get rejected(): readonly RejectedTask[] {
    return this.#rejected;
  }

  async apply(desired: readonly RuntimeTask[]): Promise<void> {
    if (this.#stopped) throw new Error("ProcessRuntime.apply: the runtime was stopped");
    const { pods, rejected } = desiredPods(desired);
    for (const r of rejected) this.#logger.warn("rejected Task", { ...r });
    this.#rejected = rejected;
    this.#desired = pods;
    this.#reconcile();
  }

  /**
   * Gives each Domain pod with a network of its own its virtual IP, on its loopback: a program may
   * bind it or advertise it (Ray's node IP), and the sidecar reaches what listens only there.
   */
  async #applyPeersState(state: PeersState): Promise<void> {
    const networks = this.#ctx.network;
    if (!networks || this.#stopped) return;
    const ips = this.#virtualIPs;
    ips.clear();
    for (const domain of state.domains)
      for (const pod of domain.pods ?? [])
        if (!pod.globalNamespace || pod.globalNamespace === state.globalNamespace)
          ips.set(podKey(pod.namespace ?? "", pod.name), pod.ip);
    for (const replica of this.#replicas.values()) {
      const ip = ips.get(replica.key);
      if (!ip) continue;
      try {
        replica.assignVirtualIP(ip, networks);
      } catch (error) {
        this.#logger.warn("could not give a pod its virtual IP", {
          pod: replica.key,
          ip,
          error: (error as Error).message,
        });
      }
    }
  }

  #reconcile(): void {
    if (this.#stopped || !this.#desired) return;
    const want = new Map(this.#desired.map((pod) => [pod.key, pod]));
    for (const [key, replica] of this.#replicas) {
      const pod = want.get(key);
      if (pod && pod.revision === replica.revision) replica.update(pod);
      else this.#retire(key, replica);
    }
    for (const pod of want.values()) {
      if (this.#replicas.has(pod.key) || this.#retiring.has(pod.key)) continue;
      this.#replicas.set(pod.key, Replica.create(pod, this.#ctx));
    }
    this.#changed();
  }

  #retire(key: string, replica: Replica): void {
    this.#replicas.delete(key);
    this.#retiring.set(key, replica);
    this.#whenGone(replica);
  }

  #whenGone(replica: Replica): void {
    void replica
      .terminate()
      .catch((error: unknown) =>
        this.#logger.error("stopping pod failed", { pod: replica.key, error: (error as Error).message }),
      )
      .finally(() => {
        if (this.#retiring.get(replica.key) === replica) this.#retiring.delete(replica.key);
        this.#changed();
        // A replacement (new spec or Task uid) may have been waiting for this key.
        this.#reconcile();
      });
  }

  observe(): RuntimeSnapshot {
    const pods = [...this.#replicas.values(), ...this.#retiring.values()]
      .map((replica) => replica.observe())
      .sort((a, b) => podKey(a.namespace, a.name).localeCompare(podKey(b.namespace, b.name)));
    return { nodes: [structuredClone(this.#node)], pods };
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #changed(): void {
    if (this.#changePending) return;
    this.#changePending = true;
    queueMicrotask(() => {
      this.#changePending = false;
      for (const listener of this.#listeners) {
        try {
          listener();
        } catch (error) {
          this.#logger.error("change listener threw", { error: (error as Error).message });
        }
      }
    });
  }

  async logs(pod: { namespace: string; name: string }, options: LogOptions = {}): Promise<string> {
    const key = podKey(pod.namespace, pod.name);
    const replica = this.#replicas.get(key) ?? this.#retiring.get(key);
    if (!replica) throw new Error(`no pod ${key} on node ${this.#node.name}`);
    return replica.logs(options.tail);
  }

  async #connect(pod: { namespace: string; name: string }, port: number): Promise<Duplex> {
    const key = podKey(pod.namespace, pod.name);
    const replica = this.#replicas.get(key);
    if (!replica) throw new Error(`no pod ${key} on node ${this.#node.name}`);
    return replica.connect(port);
  }

  async #forwardAddress(pod: { namespace: string; name: string }, port: number): Promise<string | undefined> {
    const key = podKey(pod.namespace, pod.name);
    const replica = this.#replicas.get(key);
    if (!replica) throw new Error(`no pod ${key} on node ${this.#node.name}`);
    return replica.forwardAddress(port);
  }

  async logStream(pod: { namespace: string; name: string }, options: LogStreamOptions): Promise<Readable> {
    const key = podKey(pod.namespace, pod.name);
    const replica = this.#replicas.get(key) ?? this.#retiring.get(key);
    if (!replica) throw new Error(`no pod ${key} on node ${this.#node.name}`);
    return replica.logStream(options);
  }

  async stop(options: StopOptions = {}): Promise<void> {
    // A runtime an agent stopped (its pods detached, left for the next runtime) may be stopped again
    // with terminatePods by whoever opened it: the pods it knew are then ended, not left running,
    // unless another runtime has since taken the state dir and adopted them.
    const detached = this.#stopped;
    if (detached && (!options.terminatePods || this.#lock.takenOver())) return;
    this.#stopped = true;
    for (const timer of this.#timers) clearInterval(timer);
    this.#listeners.clear();
    if (options.terminatePods) {
      const all = [...this.#replicas.values(), ...this.#retiring.values()];
      await Promise.all(all.map((replica) => replica.terminate()));
      this.#replicas.clear();
      this.#retiring.clear();
    } else {
      // Pods already being stopped finish stopping; the rest keep running for the next runtime.
      for (const replica of this.#replicas.values()) replica.detach();
    }
    if (!detached) this.#lock.release();
  }
}
