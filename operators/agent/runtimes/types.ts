// The contract between the agent and whatever runs its Tasks on this cluster. The agent's pull
// loop hands a runtime the full desired set; its push loop reads back one Node view and the Pods.
// Kept free of Kubernetes client types so a process runtime, the kubernetes runtime and a future
// Docker runtime all fit behind it.
import type { Duplex, Readable } from "node:stream";
import type { DomainTasks, ImagePull, PeersState } from "../../api/index.ts";
import type { AccessPodRef, AccessSessionRequest } from "../../lib/access-stream/index.ts";
import type { BrowseAnswer, BrowseRequest, StorageClassSummary } from "../../lib/tunnel/index.ts";

/** The workload kinds a Task can ask for; they decide the restart policy. */
export type WorkloadKind = "Deployment" | "StatefulSet" | "DaemonSet" | "Job";

export type AgentType = "Raw" | "Kubernetes" | "Docker";

export interface EnvVar {
  name: string;
  /** Empty when omitted. */
  value?: string;
}

/** A downloadable executable or bundle, trusted only if its content matches the digest. */
export interface RawArtifact {
  /** https://, http:// (for local mirrors and tests) or file:// */
  url: string;
  /** Lower-case hex SHA-256 of the artifact's bytes. */
  sha256: string;
}

/** The seeds' "Raw" agent type: processes run directly on the machine. */
export interface RawWorkload {
  artifact?: RawArtifact;
  /** argv[0] and any leading arguments; `./x` is resolved against the artifact's directory. */
  command: string[];
  args?: string[];
  env?: EnvVar[];
  workingDir?: string;
  /** Run as the agent's user rather than the Task's own uid (process runtime on a root agent). */
  runAsRoot?: boolean;
  /** Number of processes; each is a pod named `<task>-<index>`. Default 1. */
  replicas?: number;
  /** Restart policy: Deployment and StatefulSet restart always; a Job runs once. Default Job, as in the schema. */
  kind?: "Deployment" | "StatefulSet" | "Job";
  /** Seconds between SIGTERM and SIGKILL when the pod is stopped; overrides the runtime's default. */
  terminationGracePeriodSeconds?: number;
}

/** The seeds' "Docker" agent type: containers on the machine's Docker engine. */
export interface DockerWorkload {
  image: string;
  /** Replaces the image's entrypoint. */
  command?: string[];
  /** Replaces the image's command. */
  args?: string[];
  env?: EnvVar[];
  mounts?: { hostPath: string; containerPath: string; readOnly?: boolean }[];
  /** Host device paths, passed at the same path. */
  devices?: string[];
  /** Default Never: the container runs once to completion. */
  restartPolicy?: "Never" | "OnFailure" | "Always";
  resources?: { cpus?: number; memoryMiB?: number };
  /** Number of containers; each is a pod named `<task>-<index>`. Default 1. */
  replicas?: number;
}

/**
 * The part of a Task (API group rlinf.io/v1alpha1) a runtime needs. Structural, so the generated
 * Task type is assignable to it; a runtime ignores the agent types it does not serve.
 */
export interface RuntimeTask {
  metadata: {
    name: string;
    /** agent-<cluster>; a Task without one is rejected by the runtime. */
    namespace?: string;
    /** Assigned by the hub's store; a Task recreated under the same name has a new one. */
    uid?: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec: {
    /** The owning Job's name (also in the label rlinf.io/job). */
    job?: string;
    /** The task template's name within the Job. */
    task?: string;
    role?: string;
    /** true for the Job's main task. */
    head?: boolean;
    agentType: AgentType;
    domain?: string;
    /** The Domain's CIDR, set with domain by the hub. */
    domainCIDR?: string;
    /** Task annotations, including the Ray keys (rlinf.io/ray-role, ...). */
    annotations?: Record<string, string | undefined>;
    /** An OpenSSH public key line made available to the workload. */
    sshPublicKey?: string;
    nodeSelector?: Record<string, string>;
    raw?: RawWorkload;
    docker?: DockerWorkload;
    kubernetes?: unknown;
  };
}

export type PodPhase = "Pending" | "Running" | "Succeeded" | "Failed" | "Unknown";

/** Like a container's state in Kubernetes: what the pod's main process is doing right now. */
export type ContainerState = "Waiting" | "Running" | "Terminated";

/** A data-plane pod (or process) as observed; the agent mirrors it as a Pod object on the hub. */
export interface ObservedPod {
  name: string;
  namespace: string;
  /** The Task's metadata.name. */
  task: string;
  /** The Task's uid: a Task recreated under the same name owns different pods. */
  taskUid: string;
  /** The Task generation the pod runs. */
  generation?: number;
  /** The Job the Task belongs to (spec.job, else the label rlinf.io/job), "" when unknown. */
  job: string;
  /** The Node the pod runs on. */
  node: string;
  /** Replica index within the Task. */
  index: number;
  phase: PodPhase;
  state: ContainerState;
  /** True while the pod is running and not being stopped. */
  ready: boolean;
  /** Set while the runtime is stopping the pod (it disappears from observe() once gone). */
  terminating?: boolean;
  podIP?: string;
  hostIP?: string;
  restarts: number;
  /** Exit code of the last termination, when known. */
  exitCode?: number;
  /** Signal that ended the last run, e.g. "SIGKILL", when known. */
  signal?: string;
  /** Machine-readable cause: Completed, Error, Signaled, CrashLoopBackOff, ArtifactChecksumMismatch, ... */
  reason?: string;
  /** Human-readable detail for reason. */
  message?: string;
  /** RFC 3339: when the current (or last) run started. */
  startTime?: string;
  /** RFC 3339: when the last run ended. */
  finishTime?: string;
  /** Process id of the pod's main process, for the process runtime. */
  pid?: number;
  /** Its container's name when the runtime knows it; else the report uses the task template's name. */
  container?: string;
  /**
   * Each container as the cluster reports it, in the pod's order (runtimes with real containers);
   * without it the pod is reported as one container, named `container`, with the fields above.
   */
  containers?: ObservedContainer[];
}

/** One container of a pod, with the fields of the Pod schema's containerStatuses. */
export interface ObservedContainer {
  name: string;
  image?: string;
  ready: boolean;
  restartCount: number;
  state: ContainerState;
  reason?: string;
  message?: string;
  /** Of the current or, while restarting, the last termination. */
  exitCode?: number;
  /** RFC 3339. */
  startedAt?: string;
  finishedAt?: string;
}

export interface NodeAddress {
  type: "InternalIP" | "ExternalIP" | "Hostname" | "InternalDNS" | "ExternalDNS";
  address: string;
}

export interface NodeCondition {
  type: string;
  status: "True" | "False" | "Unknown";
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

/** A machine as observed; quantities use Kubernetes notation ("4", "16318732Ki"). */
export interface ObservedNode {
  name: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  capacity: Record<string, string>;
  allocatable: Record<string, string>;
  /** The same fields as the Node schema's nodeInfo, so it can be copied over as it is. */
  nodeInfo: {
    architecture: string;
    operatingSystem: string;
    kernelVersion: string;
    osImage: string;
    agentVersion: string;
    containerRuntimeVersion?: string;
    kubeletVersion?: string;
  };
  /** Disk use of the filesystem workloads write to. */
  disk?: { usedBytes: number; totalBytes: number };
  /** Image pre-pull results, one per image wanted on the node (docs/adr/0012-image-pre-pull.md). */
  images?: ImagePull[];
  addresses: NodeAddress[];
  conditions: NodeCondition[];
  /**
   * Capability states the node's components publish as conditions (lib/capability-condition.ts),
   * kept apart from `conditions`, with their heartbeat so the agent can tell a stale one.
   */
  capabilityConditions?: { type: string; reason?: string; message?: string; lastHeartbeatTime?: string }[];
  unschedulable?: boolean;
  /** Sum of resources.requests of the non-terminated pods bound to the node (reserved, not measured use). */
  requested?: Record<string, string>;
  /** Carries a Kubernetes control-plane (or master) role label: shown to admins, not counted as a worker. */
  controlPlane?: boolean;
}

/**
 * A Task's workload as the cluster reports it (runtimes with a native workload object), so the
 * agent can compute the Task's phase beyond what its pods show.
 */
export interface ObservedWorkload {
  /** The Task's metadata.name. */
  task: string;
  taskUid: string;
  /** The Task generation last applied to the workload. */
  generation?: number;
  job: string;
  kind: WorkloadKind;
  namespace: string;
  name: string;
  /** Desired pods (parallelism for a Job, scheduled nodes for a DaemonSet). */
  replicas: number;
  readyReplicas: number;
  /** Job only: pods that succeeded, failed, are running. */
  succeeded?: number;
  failed?: number;
  active?: number;
  /** Job only: Complete or Failed once the Job has finished. */
  finished?: "Complete" | "Failed";
  /** Job only: exit code of the failed (or, when none failed, the last succeeded) pod's main container. */
  exitCode?: number;
  reason?: string;
  message?: string;
  /** Being deleted: the Task is not desired any more, or is being replaced. */
  terminating?: boolean;
}

/** A volume claim created for a Task's pods; a stopped Task is done only once they are gone. */
export interface ObservedVolume {
  name: string;
  namespace: string;
  task: string;
  /** Pending, Bound, Lost. */
  phase?: string;
  terminating?: boolean;
}

/** A Secret opened from a SealedSecret: its place and its data (key to base64). Never log data. */
export interface RuntimeSecret {
  metadata: { name: string; namespace: string };
  data: Record<string, string>;
}

/** An Addon rendered for this cluster: the part of an AddonRelease a runtime needs. */
export interface RuntimeAddon {
  metadata: { name: string; generation?: number };
  spec: {
    version: string;
    /** In-cluster namespace of the Addon's namespaced objects (created when missing). */
    namespace: string;
    /** "major.minor" the cluster must run at least. */
    minKubernetesVersion?: string;
    /** The rendered objects, in apply order. */
    objects: ReadonlyArray<Record<string, unknown>>;
  };
}

export type AddonPhase = "Pending" | "Installing" | "Ready" | "Failed" | "Upgrading" | "Uninstalling";

/** An Addon's installation on this cluster as the runtime sees it. */
export interface ObservedAddon {
  /** The release's (the Addon's) name. */
  name: string;
  /** The release generation the phase is about; absent while uninstalling. */
  generation?: number;
  phase: AddonPhase;
  /** The version the objects in the cluster come from. */
  version?: string;
  /** What is not ready, or why it failed. */
  message?: string;
}

/** A Bundle for this cluster: the part of a BundleRelease a runtime needs (docs/bundles.md). */
export interface RuntimeBundle {
  metadata: { name: string; generation?: number };
  spec: {
    namespace: string;
    revision: string;
    prune: boolean;
    selfHeal: boolean;
    objects: ReadonlyArray<Record<string, unknown>>;
  };
}

export type BundlePhase = "Pending" | "Progressing" | "Ready" | "Drifted" | "Failed" | "Removing";

/** One object of a Bundle on this cluster. */
export interface ObservedBundleObject {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
  health: "Healthy" | "Progressing" | "Degraded" | "Missing";
  /** Fields the Bundle owns that differ on the cluster, when not corrected. */
  drifted?: string[];
  message?: string;
}

/** A Bundle on this cluster as the runtime sees it. */
export interface ObservedBundle {
  name: string;
  generation?: number;
  phase: BundlePhase;
  /** The revision last applied in full. */
  revision?: string;
  message?: string;
  objects: ObservedBundleObject[];
  /** The last drift seen: what and when; `corrected` when self-heal put it back. */
  drift?: { message: string; at: string; corrected: boolean; active: boolean };
}

export interface RuntimeSnapshot {
  nodes: ObservedNode[];
  pods: ObservedPod[];
  /**
   * Runtimes with native workload objects (kubernetes) report them here. A Task is gone from the
   * cluster once no pod, workload or volume names it.
   */
  workloads?: ObservedWorkload[];
  volumes?: ObservedVolume[];
  /** The API server's gitVersion (kubernetes runtime), e.g. "v1.34.4". */
  kubernetesVersion?: string;
  /** The cluster's StorageClasses, sorted by name (kubernetes runtime). */
  storageClasses?: StorageClassSummary[];
  /** The runtime's last try of its cluster's API (kubernetes: the Version API); absent: none of its own. */
  lastTest?: ConnectivityTest;
  /** Runtimes that install Addons (kubernetes): each one desired or still being uninstalled. */
  addons?: ObservedAddon[];
  /** Runtimes that apply Bundles (kubernetes): each one desired or still being removed. */
  bundles?: ObservedBundle[];
  /**
   * Tasks whose objects the runtime could not apply (kubernetes): refused as invalid
   * (ApplyRefused, until the Task changes) or failed for now (ApplyFailed: the API server down,
   * out of space, forbidden; tried again). A Pending Task shows it as its reason and message.
   */
  applyProblems?: TaskApplyProblem[];
}

/** A Task whose objects could not be applied (RuntimeSnapshot.applyProblems). */
export interface TaskApplyProblem {
  task: string;
  /** ApplyRefused: invalid as given, until the Task changes; ApplyFailed: tried again. */
  reason: "ApplyRefused" | "ApplyFailed";
  message: string;
}

/** One try of a cluster's API. */
export interface ConnectivityTest {
  /** RFC 3339. */
  testedAt: string;
  ok: boolean;
  /** Why it failed (one line, no credentials); absent when ok. */
  message?: string;
}

/** Git's admin overlay for one node (the Node object's labels, annotations and spec.unschedulable). */
export interface NodeOverlay {
  name: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** true cordons, false uncordons; undefined leaves the node's own setting alone. */
  unschedulable?: boolean;
}

/** A running local pod as an access session sees it: its working directory and environment. */
export interface AccessEnvironment {
  cwd: string;
  env: Record<string, string>;
  /**
   * A pod with a network of its own: the command that runs a session's program in it (its
   * namespace, its user). Port-forwards go through LocalAccess.connect, which checks the port.
   */
  enter?: { prefix: string[] };
}

export interface LogOptions {
  /** Only the last N lines. */
  tail?: number;
}

/** What a log stream asks for (the Kubernetes logs API's options; the hub validates them). */
export interface LogStreamOptions extends LogOptions {
  /** Keep streaming what the pod writes until the reader stops. */
  follow?: boolean;
  /** Stop after this many bytes. */
  limitBytes?: number;
  /** Only lines newer than this many seconds. */
  sinceSeconds?: number;
  /** The output of the container's previous run. */
  previous?: boolean;
  /** Prefix each line with its RFC 3339 time. */
  timestamps?: boolean;
  /** The container (default: the pod's first). */
  container?: string;
}

export interface StopOptions {
  /** Also stop every pod (SIGTERM, then SIGKILL after the grace period). Default false: pods keep running for the next agent to adopt. */
  terminatePods?: boolean;
}

/** An sftp-server running in a container, and the policy root it was started in. */
export interface ContainerFiles {
  /** The server's stdin and stdout, as one byte stream. */
  server: Duplex;
  /** An absolute path inside the container, symlinks resolved there: the server's working directory. */
  root: string;
}

/**
 * One cluster's (or machine's) workload runner: the workloads part every runtime implements, and
 * optional facets (objects hanging off it) for what only some runtimes offer. A runtime sets a
 * facet exactly when it implements all of it; the agent looks at the facet, never at single
 * methods. Level-triggered: apply() is handed the complete desired set each time and converges
 * towards it in the background; observe() and the "change" event report progress.
 */
export interface Runtime {
  /** Which Tasks this runtime runs (by spec.agentType); others handed to apply() are ignored. */
  readonly agentTypes: readonly AgentType[];
  /**
   * Declares the complete desired set: starts what is missing, restarts what changed (uid or
   * spec), stops and then forgets what is no longer listed. Resolves once the work is started,
   * not when it is finished: pods being stopped stay visible (terminating) until they are gone.
   */
  apply(desired: readonly RuntimeTask[]): Promise<void>;
  /** The current view, cheap and synchronous: one entry per node, every pod this runtime owns. */
  observe(): RuntimeSnapshot;
  /** Called (coalesced) after anything observe() returns has changed. Returns an unsubscribe function. */
  onChange(listener: () => void): () => void;
  /**
   * The pod's output as a byte stream, read only as fast as it is consumed; with `follow` it ends
   * when the reader destroys it. Rejects options the runtime cannot honour, saying which.
   */
  logStream(pod: { namespace: string; name: string }, options: LogStreamOptions): Promise<Readable>;
  /** Stops supervising. By default leaves workloads running, to be adopted by the next runtime. */
  stop(options?: StopOptions): Promise<void>;

  /** Sessions, files and port-forwards into its pods (agent/access). Absent: none. */
  readonly access?: RuntimeAccess;
  /** The pod network of Tasks with a domain. Absent: Tasks with a domain get no peers. */
  readonly network?: RuntimeNetwork;
  /** A cluster API of its own (kubernetes): nodes, Addons, Secrets, browsing. Absent: none. */
  readonly cluster?: RuntimeCluster;
}

/** The access facet: either the agent runs sessions beside local pods, or the runtime runs them. */
export type RuntimeAccess = LocalAccess | ContainerAccess;

/**
 * Access facet of runtimes whose pods are local processes (process): the agent runs a session's
 * shell and sftp-server itself, where environment() says, after the agent's own last check.
 */
export interface LocalAccess {
  readonly kind: "local";
  /** Where a session into the pod runs: undefined when the pod is not on this agent or not running. */
  environment(pod: { namespace: string; name: string }): AccessEnvironment | undefined;
  /**
   * A TCP connection to one of the pod's ports (port-forwards and the hub's HTTP proxies); rejects
   * a pod that is not running here or a port none of its processes listens on.
   */
  connect(pod: { namespace: string; name: string }, port: number): Promise<Duplex>;
  /**
   * Where connect() would connect, after the same checks (rejects as it does), for the agent's
   * byte hop to connect itself (ADR 0011); undefined when only connect() reaches the port (a pod
   * in a network of its own).
   */
  forwardAddress?(pod: { namespace: string; name: string }, port: number): Promise<string | undefined>;
}

/**
 * Access facet of runtimes whose pods are containers the agent cannot enter itself (kubernetes; a
 * Docker runtime): the runtime runs each stream, after its own last check that the pod is one of
 * its own and running. The agent puts the SFTP path policy in front of openFiles' server
 * (runtimes/shared/sftp-filter.ts), the same as for local pods.
 */
export interface ContainerAccess {
  readonly kind: "container";
  /** A shell or command in the pod, speaking lib/access-stream's frames, as a local session does. */
  openSession(request: AccessSessionRequest): Promise<Duplex>;
  /** OpenSSH's sftp-server started in the container; rejects, saying why, a container without one. */
  openFiles(request: AccessPodRef): Promise<ContainerFiles>;
  /** A TCP connection to one of the pod's ports (port-forwards and the hub's HTTP proxies). */
  connect(pod: { namespace: string; name: string }, port: number): Promise<Duplex>;
}

/** Network facet: runtimes that give Tasks with a domain their pod network (process, kubernetes). */
export interface RuntimeNetwork {
  /**
   * Hands the pods' network its peers state, made from the agent's DomainPeers, each time (the
   * kubernetes runtime writes the Secret rlark-domain-peers). Resolves once they have it.
   */
  applyPeersState(state: PeersState): Promise<void>;
  /**
   * The Domains' Task addresses (DomainPeer spec.tasks), each time, for runtimes that render them
   * into a Task (kubernetes: a Ray worker's head address in another cluster).
   */
  applyDomainTasks?(domains: readonly DomainTasks[]): void;
}

/**
 * Cluster facet: runtimes with a cluster API of their own (kubernetes). Each apply takes the
 * complete set each time and converges in the background.
 */
export interface RuntimeCluster {
  /**
   * Git's Node overlays on the real nodes: keys an earlier overlay set and this one drops are
   * removed, nothing else is touched.
   */
  applyNodeOverlays(overlays: readonly NodeOverlay[]): Promise<void>;
  /**
   * Installs the Addons; one no longer listed is uninstalled. observe().addons reports progress.
   * Without this facet the agent reports each Addon Failed (agent.ts).
   */
  applyAddons(addons: readonly RuntimeAddon[]): Promise<void>;
  /**
   * Applies the Bundles; one no longer listed has its objects removed (when it prunes).
   * observe().bundles reports them. Without it the agent reports each Bundle Failed (agent.ts).
   */
  applyBundles?(bundles: readonly RuntimeBundle[]): Promise<void>;
  /**
   * The Secrets opened from SealedSecrets for this cluster: applies them as Opaque Secrets and
   * deletes the ones it made that are no longer in the set. The hub sends Secrets only to
   * kubernetes agents (docs/secrets.md).
   */
  applySecrets(secrets: readonly RuntimeSecret[]): Promise<void>;
  /**
   * The hub's read-only browsing: one page of one resource, projected (lib/tunnel/browse.ts: a
   * Secret is its key names).
   */
  browse(request: BrowseRequest): Promise<BrowseAnswer>;
}
