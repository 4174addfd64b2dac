// The docker runtime (the seeds' "Docker" agent type, for edge machines): every replica of a
// Docker Task is one container on the machine's Docker engine, named rlark_<namespace>_<pod> and
// labelled with its Job, Task, replica and revision. The engine is the state: a runtime opened
// later lists the containers carrying its owner label and adopts them, and the fixed name keeps
// a second container for one replica from ever being created. The engine restarts containers
// itself (restartPolicy), so they keep their policy while no agent runs.
import { PassThrough, type Readable, Transform } from "node:stream";
import Docker from "dockerode";
import type { PeersState } from "../../../api/index.ts";
import { type Logger, silentLogger } from "../../../lib/logger.ts";
import { type BackoffPolicy, restartDelay } from "../process/crash-loop-backoff.ts";
import { type PodNetwork, type PodNetworkOptions, PodNetworks } from "../process/pod-network.ts";
import { podKey, type RejectedTask } from "../process/spec.ts";
import { ImagePrePuller } from "../shared/image-pre-pull.ts";
import type {
  AgentType,
  ContainerAccess,
  LogStreamOptions,
  ObservedNode,
  ObservedPod,
  Runtime,
  RuntimeNetwork,
  RuntimeSnapshot,
  RuntimeTask,
  StopOptions,
} from "../types.ts";
import { createOptions, observedPod } from "./container.ts";
import {
  type DomainAddress,
  ensureSidecarImage,
  parseLinkLabel,
  SIDECAR_CONTAINER,
  SIDECAR_LABELS,
  sidecarCreateOptions,
  sidecarListening,
} from "./domain.ts";
import { startContainerExec } from "./exec.ts";
import { connectContainerPort, type DockerFilesOptions, openContainerFiles } from "./files-and-ports.ts";
import { type HostDevice, hostDevices } from "./host-devices.ts";
import { ensureImage } from "./image.ts";
import { type EngineInfo, engineNode, firstIPv4, type NodeOptions } from "./node.ts";
import { type DesiredContainer, desiredContainers, LABELS } from "./spec.ts";

export { containerName, desiredContainers } from "./spec.ts";

export interface DockerRuntimeOptions {
  /** The engine: unix:///path/docker.sock (default unix:///var/run/docker.sock) or tcp://host:port. */
  dockerHost?: string;
  /** Node name, and the owner label's value unless `owner` is given. */
  nodeName: string;
  /** Tells this runtime's containers from another agent's on a shared engine. Default nodeName. */
  owner?: string;
  nodeLabels?: Record<string, string>;
  nodeAnnotations?: Record<string, string>;
  internalIP?: string;
  agentVersion?: string;
  /** SIGTERM to SIGKILL when a container stops. Default 30 s. */
  terminationGracePeriodMs?: number;
  /** How often the engine's containers are listed. Default 1 s. */
  pollIntervalMs?: number;
  /** Retries of a pull or create that failed (bad image, missing device). Default 10 s doubling to 5 min. */
  backoff?: Partial<BackoffPolicy>;
  /** Each container's log is at most this many bytes plus one rotated file. Default 10 MiB. */
  logMaxBytes?: number;
  /** SFTP into containers: the policy root and where sftp-server is (files-and-ports.ts). */
  files?: DockerFilesOptions;
  /** The rlark-net binary, which port-forwards run in a container's network. Default `rlark-net` on PATH. */
  rlarkNet?: string;
  /**
   * Gives each pod of a Task in a Domain a sidecar container holding its network, the link and
   * REDIRECT of the process runtime's pods, and its virtual IP (domain.ts; needs root and the
   * engine on this machine). Without it such pods run on the engine's default network.
   */
  podNetwork?: Omit<PodNetworkOptions, "rlark" | "podUid">;
  /**
   * Where the machine's device nodes are, for the Node report (host-devices.ts). Default /dev;
   * read only with the engine on this machine (a unix socket): another machine's are not here.
   */
  devDir?: string;
  /**
   * Image pre-pull (docs/adr/0012-image-pre-pull.md): the desired containers' images are pulled
   * this many at a time, apart from the containers' own starts, with the result per image on the
   * Node. Default 2; 0 turns it off.
   */
  imagePrePullConcurrency?: number;
  logger?: Logger;
}

/** A Domain pod's sidecar container, as of the last listing. */
interface SidecarSeen {
  id: string;
  image: string;
  running: boolean;
  pid: number;
  revision: string;
  virtualIP: string;
  link: PodNetwork | undefined;
}

/** Why a pod has no container yet, and when to try again. */
interface Failure {
  reason: string;
  message: string;
  streak: number;
  retryAt: number;
}

interface Seen {
  id: string;
  revision: string;
  pod: ObservedPod;
}

function dockerClient(host: string | undefined): Docker {
  const url = new URL(host ?? "unix:///var/run/docker.sock");
  if (url.protocol === "unix:") return new Docker({ socketPath: url.pathname });
  if (url.protocol === "tcp:" || url.protocol === "http:")
    return new Docker({ host: url.hostname, port: Number(url.port || 2375), protocol: "http" });
  throw new Error(`--docker-host ${host}: only unix:// and tcp:// engines are supported`);
}

function statusCode(error: unknown): number | undefined {
  return (error as { statusCode?: number }).statusCode;
}

/** The engine's message without the HTTP framing dockerode puts around it. */
function engineMessage(error: unknown): string {
  const json = (error as { json?: { message?: string } }).json;
  const text = json?.message ?? (error as Error).message ?? String(error);
  // a streamed reply (a pull) has no JSON body: dockerode puts "(HTTP code 500) server error - " first
  return text
    .replace(/^\(HTTP code \d+\) [^-]*- /, "")
    .trim()
    .slice(0, 500);
}

/** Ends the stream after `limit` bytes. */
function limitBytes(limit: number): Transform {
  let left = limit;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      if (left <= 0) return done();
      const part = chunk.subarray(0, left);
      left -= part.length;
      this.push(part);
      if (left <= 0) this.push(null);
      done();
    },
  });
}

/** Runs Docker Tasks as containers on one engine. Create with {@link DockerRuntime.open}. */
export class DockerRuntime implements Runtime {
  readonly agentTypes: readonly AgentType[] = ["Docker"];
  readonly #client: Docker;
  readonly #logger: Logger;
  readonly #owner: string;
  readonly #nodeOptions: NodeOptions;
  readonly #graceSeconds: number;
  readonly #backoff: BackoffPolicy;
  readonly #logMaxBytes: number;
  readonly #listeners = new Set<() => void>();
  readonly #prePull: ImagePrePuller | undefined;
  readonly #dockerHost: string | undefined;
  readonly #files: DockerFilesOptions;
  readonly #rlarkNet: string;
  /** The owned containers by pod key, as of the last listing. */
  #seen = new Map<string, Seen>();
  /** The Domain pods' sidecar containers by pod key, as of the last listing. */
  #sidecars = new Map<string, SidecarSeen>();
  readonly #networks: PodNetworks | undefined;
  readonly #runDir: string;
  readonly #sidecarUid: number;
  /** Virtual IPs of this cluster's Domain pods by pod key, from the last peers state. */
  #virtualIPs = new Map<string, string>();
  /** Domain pods not started since their virtual IP is not known yet. */
  readonly #waiting = new Set<string>();
  #sidecarImage: Promise<string> | undefined;
  /** Work in flight per pod key (a create and start, or a stop and remove): one at a time. */
  readonly #busy = new Map<string, { kind: "starting" | "stopping"; done: Promise<void> }>();
  readonly #failures = new Map<string, Failure>();
  #desired: DesiredContainer[] | undefined;
  #rejected: RejectedTask[] = [];
  #info: EngineInfo;
  readonly #devDir: string | undefined;
  /** The engine is on this machine (a unix socket): its containers' pids are ours to enter. */
  readonly #engineLocal: boolean;
  #devices: HostDevice[] = [];
  #engineError: string | undefined;
  /** When the engine stopped answering: the runtime's failed connectivity test, while it lasts. */
  #engineErrorAt: string | undefined;
  #node: ObservedNode;
  #timer: NodeJS.Timeout | undefined;
  #ticking: Promise<void> | undefined;
  #again = false;
  #stopped = false;
  #lastView = "";

  /**
   * Shell and exec sessions (exec.ts), SFTP and port-forwards (files-and-ports.ts) into this
   * runtime's running containers, after its own last check: the pod is one of its containers and
   * runs.
   */
  readonly access: ContainerAccess = {
    kind: "container",
    openSession: async (request) => {
      const seen = this.#running(request, "a session");
      return startContainerExec(
        this.#client.getContainer(seen.id),
        this.#client.modem,
        this.#label(seen),
        request,
      );
    },
    openFiles: async (request) => {
      const seen = this.#running(request, "SFTP");
      const ref = { namespace: request.namespace, name: request.name };
      const container = this.#client.getContainer(seen.id);
      return openContainerFiles(container, this.#client.modem, this.#label(seen), ref, this.#files);
    },
    connect: async (pod, port) => {
      const seen = this.#running(pod, "a port-forward");
      return connectContainerPort(
        this.#client.getContainer(seen.id),
        this.#label(seen),
        this.#dockerHost,
        this.#rlarkNet,
        port,
      );
    },
  };

  /** Domain pods get their virtual IPs from the peers state: present with `podNetwork` only. */
  readonly network?: RuntimeNetwork;

  #label(seen: Seen): string {
    return `container ${seen.pod.container} of pod ${podKey(seen.pod.namespace, seen.pod.name)}`;
  }

  private constructor(options: DockerRuntimeOptions, client: Docker, info: EngineInfo) {
    this.#client = client;
    this.#dockerHost = options.dockerHost;
    this.#files = options.files ?? {};
    this.#rlarkNet = options.rlarkNet ?? "rlark-net";
    this.#logger = options.logger ?? silentLogger;
    this.#owner = options.owner ?? options.nodeName;
    this.#nodeOptions = {
      name: options.nodeName,
      agentVersion: options.agentVersion ?? "0.0.0",
      ...(options.nodeLabels ? { labels: options.nodeLabels } : {}),
      ...(options.nodeAnnotations ? { annotations: options.nodeAnnotations } : {}),
      ...(options.internalIP ? { internalIP: options.internalIP } : {}),
    };
    this.#graceSeconds = Math.max(0, Math.round((options.terminationGracePeriodMs ?? 30_000) / 1000));
    this.#backoff = { initialMs: 10_000, maxMs: 300_000, resetAfterMs: 600_000, ...options.backoff };
    this.#logMaxBytes = options.logMaxBytes ?? 10 * 1024 * 1024;
    this.#info = info;
    const local = new URL(options.dockerHost ?? "unix:///var/run/docker.sock").protocol === "unix:";
    this.#engineLocal = local;
    this.#devDir = local ? (options.devDir ?? "/dev") : undefined;
    this.#devices = this.#devDir ? hostDevices(this.#devDir) : [];
    this.#node = engineNode(this.#nodeOptions, info, undefined, this.#devices);
    const net = options.podNetwork;
    this.#runDir = net?.runDir ?? "";
    this.#sidecarUid = net?.sidecarUid ?? 1337;
    // The tag of the links' names: the owner's, so two agents on one machine never meet.
    this.#networks = net ? new PodNetworks({ ...net, rlark: [] }, `docker:${this.#owner}`) : undefined;
    if (options.imagePrePullConcurrency !== 0)
      this.#prePull = new ImagePrePuller({
        concurrency: options.imagePrePullConcurrency ?? 2,
        backoff: { initialMs: this.#backoff.initialMs, maxMs: this.#backoff.maxMs },
        logger: this.#logger,
        onChange: () => this.#changedIfDifferent(),
        pull: (_node, image, signal) =>
          ensureImage(this.#client, image, signal).catch((error: unknown) => {
            throw new Error(engineMessage(error));
          }),
      });
    if (this.#networks) this.network = { applyPeersState: async (state) => this.#applyPeersState(state) };
  }

  #applyPeersState(state: PeersState): void {
    const ips = new Map<string, string>();
    for (const domain of state.domains)
      for (const pod of domain.pods ?? [])
        if (!pod.globalNamespace || pod.globalNamespace === state.globalNamespace)
          ips.set(podKey(pod.namespace ?? "", pod.name), pod.ip);
    this.#virtualIPs = ips;
    this.#kick();
  }

  /** Reaches the engine (failing with its error when it cannot), lists what is there, and starts watching. */
  static async open(options: DockerRuntimeOptions): Promise<DockerRuntime> {
    const client = dockerClient(options.dockerHost);
    let info: EngineInfo;
    try {
      info = (await client.info()) as EngineInfo;
    } catch (error) {
      throw new Error(
        `docker runtime: the engine at ${options.dockerHost ?? "unix:///var/run/docker.sock"} does not answer: ${engineMessage(error)}`,
      );
    }
    const runtime = new DockerRuntime(options, client, info);
    await runtime.#tick();
    runtime.#timer = setInterval(() => runtime.#kick(), options.pollIntervalMs ?? 1000);
    return runtime;
  }

  /** Docker Tasks in the last desired set that cannot run as given, with why. */
  get rejected(): readonly RejectedTask[] {
    return this.#rejected;
  }

  async apply(desired: readonly RuntimeTask[]): Promise<void> {
    if (this.#stopped) throw new Error("DockerRuntime.apply: the runtime was stopped");
    const { containers, rejected } = desiredContainers(desired);
    for (const r of rejected) this.#logger.warn("rejected Task", { ...r });
    this.#rejected = rejected;
    this.#desired = containers;
    // the images of every desired container, whether it starts now or later (ADR 0012)
    this.#prePull?.want(new Map([[this.#node.name, containers.map((c) => c.docker.image)]]));
    // A failure is about a spec: one no longer desired is forgotten.
    const keys = new Set(containers.map((c) => c.key));
    for (const key of this.#failures.keys()) if (!keys.has(key)) this.#failures.delete(key);
    for (const key of this.#waiting) if (!keys.has(key)) this.#waiting.delete(key);
    this.#kick();
  }

  /** A poll or a finished piece of work asks for a listing and a reconcile; they never overlap. */
  #kick(): void {
    if (this.#stopped) return;
    if (this.#ticking) {
      this.#again = true;
      return;
    }
    this.#ticking = this.#tick().finally(() => {
      this.#ticking = undefined;
      if (this.#again) {
        this.#again = false;
        this.#kick();
      }
    });
  }

  async #tick(): Promise<void> {
    try {
      await this.#list();
      if (this.#engineError !== undefined) {
        this.#engineError = undefined;
        this.#info = (await this.#client.info()) as EngineInfo;
      }
    } catch (error) {
      this.#engineError = `the engine does not answer: ${engineMessage(error)}`;
    }
    if (this.#engineError === undefined) this.#engineErrorAt = undefined;
    else this.#engineErrorAt ??= new Date().toISOString();
    if (this.#devDir) this.#devices = hostDevices(this.#devDir);
    this.#node = engineNode(this.#nodeOptions, this.#info, this.#engineError, this.#devices);
    if (this.#engineError === undefined) this.#reconcile();
    this.#changedIfDifferent();
  }

  async #list(): Promise<void> {
    const listed = await this.#client.listContainers({
      all: true,
      filters: { label: [`${LABELS.owner}=${this.#owner}`] },
    });
    const hostIP = this.#node.addresses.find((a) => a.type === "InternalIP")?.address ?? firstIPv4() ?? "";
    const seen = new Map<string, Seen>();
    const sidecars = new Map<string, SidecarSeen>();
    for (const entry of listed) {
      let info: Docker.ContainerInspectInfo;
      try {
        info = await this.#client.getContainer(entry.Id).inspect();
      } catch (error) {
        if (statusCode(error) === 404) continue; // removed since the listing
        throw error;
      }
      const labels = info.Config.Labels ?? {};
      if (labels[SIDECAR_LABELS.sidecar]) {
        sidecars.set(podKey(labels[LABELS.namespace] ?? "", labels[LABELS.pod] ?? ""), {
          id: entry.Id,
          image: info.Config.Image,
          running: info.State.Running,
          pid: info.State.Pid,
          revision: labels[LABELS.revision] ?? "",
          virtualIP: labels[SIDECAR_LABELS.virtualIP] ?? "",
          link: parseLinkLabel(labels[SIDECAR_LABELS.link]),
        });
        continue;
      }
      const pod = observedPod(info, this.#node.name, hostIP);
      seen.set(podKey(pod.namespace, pod.name), {
        id: entry.Id,
        revision: labels[LABELS.revision] ?? "",
        pod,
      });
    }
    // A Domain pod's address is its sidecar's end of the link: the namespace is the sidecar's.
    // It is the pod's second container, as the kubernetes runtime's injected one is.
    for (const [key, s] of seen) {
      const sidecar = sidecars.get(key);
      if (!sidecar) continue;
      if (sidecar.link) s.pod.podIP = sidecar.link.localIP;
      s.pod.containers?.push({
        name: SIDECAR_CONTAINER,
        image: sidecar.image,
        ready: sidecar.running,
        restartCount: 0,
        state: sidecar.running ? "Running" : "Terminated",
      });
    }
    this.#networks?.keepLinks([...sidecars.values()].flatMap((s) => (s.link ? [s.link] : [])));
    this.#seen = seen;
    this.#sidecars = sidecars;
  }

  #reconcile(): void {
    // Before the first desired set nothing is pruned: the hub has not said what it wants yet.
    if (this.#stopped || !this.#desired) return;
    const want = new Map(this.#desired.map((c) => [c.key, c]));
    for (const [key, seen] of this.#seen) {
      if (this.#busy.has(key)) continue;
      const desired = want.get(key);
      if (!desired || desired.revision !== seen.revision || !this.#networkHolds(desired))
        this.#work(key, "stopping", () => this.#remove(seen));
    }
    // A sidecar left without its pod's container (a kill -9 between the two, a pod gone).
    for (const [key, sidecar] of this.#sidecars)
      if (!this.#seen.has(key) && !this.#busy.has(key) && !want.has(key))
        this.#work(key, "stopping", () => this.#removeSidecar(sidecar));
    const now = Date.now();
    for (const desired of want.values()) {
      if (this.#seen.has(desired.key) || this.#busy.has(desired.key)) continue;
      if ((this.#failures.get(desired.key)?.retryAt ?? 0) > now) continue;
      if (this.#domainOf(desired) === "waiting") {
        this.#waiting.add(desired.key);
        continue;
      }
      this.#waiting.delete(desired.key);
      this.#work(desired.key, "starting", () => this.#start(desired));
    }
  }

  #work(key: string, kind: "starting" | "stopping", run: () => Promise<void>): void {
    const done = run()
      .catch((error: unknown) =>
        this.#logger.error(`${kind} a container failed`, { pod: key, error: engineMessage(error) }),
      )
      .finally(() => {
        this.#busy.delete(key);
        this.#kick();
      });
    this.#busy.set(key, { kind, done });
  }

  async #start(desired: DesiredContainer): Promise<void> {
    const { image } = desired.docker;
    try {
      await ensureImage(this.#client, image);
    } catch (error) {
      this.#fail(
        desired.key,
        "ErrImagePull",
        `image ${image} is not on the engine and could not be pulled: ${engineMessage(error)}`,
      );
      return;
    }
    const options = createOptions(desired, { owner: this.#owner, logMaxBytes: this.#logMaxBytes });
    const domain = this.#domainOf(desired);
    let sidecar: SidecarSeen | undefined;
    if (domain === "waiting") return;
    if (domain) {
      try {
        sidecar = await this.#startSidecar(desired, domain);
      } catch (error) {
        this.#fail(desired.key, "CreatePodSandboxError", `the pod's network: ${engineMessage(error)}`);
        return;
      }
      options.HostConfig = { ...options.HostConfig, NetworkMode: `container:${sidecar.id}` };
    }
    let container: Docker.Container;
    try {
      container = await this.#client.createContainer(options);
    } catch (error) {
      // Its name is taken: the replica's container exists already (the next listing shows it).
      if (statusCode(error) === 409) return;
      if (sidecar) await this.#removeSidecar(sidecar).catch(() => undefined);
      this.#fail(desired.key, "CreateContainerError", engineMessage(error));
      return;
    }
    try {
      await container.start();
    } catch (error) {
      // A container that cannot start (a device missing, say) is removed, so the retry creates it anew.
      await container.remove({ force: true }).catch(() => undefined);
      if (sidecar) await this.#removeSidecar(sidecar).catch(() => undefined);
      this.#fail(desired.key, "CreateContainerError", engineMessage(error));
      return;
    }
    this.#failures.delete(desired.key);
  }

  /**
   * What network the pod gets: undefined, the engine's default (no Domain, or no pod networking);
   * "waiting" while the hub has not given it a virtual IP; else its Domain address.
   */
  #domainOf(desired: DesiredContainer): DomainAddress | "waiting" | undefined {
    const { domain, domainCIDR } = desired.task.spec;
    if (!this.#networks || !domain) return undefined;
    const virtualIP = this.#virtualIPs.get(desired.key);
    if (!virtualIP) return "waiting";
    // No CIDR: #startSidecar says so on the pod.
    return { virtualIP, cidr: domainCIDR ?? "" };
  }

  /** Whether the pod's running container still has the network its Task asks for. */
  #networkHolds(desired: DesiredContainer): boolean {
    const sidecar = this.#sidecars.get(desired.key);
    const domain = this.#domainOf(desired);
    if (domain === undefined) return sidecar === undefined;
    if (!sidecar?.running || sidecar.revision !== desired.revision) return false;
    // A virtual IP not known (yet, or any more): the pod keeps the one it has.
    return domain === "waiting" || sidecar.virtualIP === domain.virtualIP;
  }

  /**
   * The pod's sidecar container, its link and REDIRECT (the init step, run here as root in its
   * namespace) and its virtual IP on its loopback; resolves once it listens. A sidecar left from
   * an earlier try is replaced.
   */
  async #startSidecar(desired: DesiredContainer, address: DomainAddress): Promise<SidecarSeen> {
    const networks = this.#networks as PodNetworks;
    if (!this.#engineLocal)
      throw new Error(
        `Domain pods need the engine on the agent's machine (a unix socket), not ${this.#dockerHost}`,
      );
    if (!address.cidr)
      throw new Error(
        `spec.domainCIDR is missing: the hub did not know Domain ${desired.task.spec.domain}'s CIDR when it created the Task`,
      );
    const old = this.#sidecars.get(desired.key);
    if (old) await this.#removeSidecar(old);
    this.#sidecarImage ??= ensureSidecarImage(this.#client, this.#rlarkNet).catch((error: unknown) => {
      this.#sidecarImage = undefined;
      throw error;
    });
    const image = await this.#sidecarImage;
    const link = networks.reserveLink();
    let container: Docker.Container | undefined;
    try {
      container = await this.#client.createContainer(
        sidecarCreateOptions(desired, {
          owner: this.#owner,
          logMaxBytes: this.#logMaxBytes,
          image,
          runDir: this.#runDir,
          uid: this.#sidecarUid,
          address,
          link,
        }),
      );
      await container.start();
      const { State } = await container.inspect();
      if (!State.Running || !State.Pid) throw new Error(`the sidecar exited: ${State.Error || State.Status}`);
      networks.attach(link, State.Pid, address.cidr);
      networks.assignVirtualIP(link, address.virtualIP, `/proc/${State.Pid}/ns/net`);
      for (let tenths = 0; !sidecarListening(State.Pid); tenths++) {
        if (tenths >= 300) throw new Error("the sidecar did not listen within 30 s");
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const sidecar: SidecarSeen = {
        id: container.id,
        image,
        running: true,
        pid: State.Pid,
        revision: desired.revision,
        virtualIP: address.virtualIP,
        link,
      };
      return sidecar;
    } catch (error) {
      await container?.remove({ force: true }).catch(() => undefined);
      networks.releaseLink(link);
      throw error;
    }
  }

  async #removeSidecar(sidecar: SidecarSeen): Promise<void> {
    try {
      await this.#client.getContainer(sidecar.id).remove({ force: true, v: true });
    } catch (error) {
      if (statusCode(error) !== 404) throw error;
    }
    if (sidecar.link) this.#networks?.releaseLink(sidecar.link);
  }

  #fail(key: string, reason: string, message: string): void {
    const streak = (this.#failures.get(key)?.streak ?? 0) + 1;
    const retryAt = Date.now() + restartDelay(this.#backoff, streak);
    this.#failures.set(key, { reason, message, streak, retryAt });
    this.#logger.warn("container not started", { pod: key, reason, message });
  }

  async #remove(seen: Seen): Promise<void> {
    const container = this.#client.getContainer(seen.id);
    try {
      await container.stop({ t: this.#graceSeconds });
    } catch (error) {
      // 304: not running; 404: gone already.
      if (statusCode(error) !== 304 && statusCode(error) !== 404) throw error;
    }
    try {
      await container.remove({ force: true, v: true });
    } catch (error) {
      if (statusCode(error) !== 404) throw error;
    }
    // The pod's network goes after the pod's container, which lives in it.
    const sidecar = this.#sidecars.get(podKey(seen.pod.namespace, seen.pod.name));
    if (sidecar) await this.#removeSidecar(sidecar);
  }

  observe(): RuntimeSnapshot {
    const pods: ObservedPod[] = [];
    for (const [key, seen] of this.#seen) {
      const pod = structuredClone(seen.pod);
      if (this.#engineError)
        Object.assign(pod, {
          phase: "Unknown",
          ready: false,
          reason: "EngineUnreachable",
          message: this.#engineError,
        });
      const desired = this.#desired?.find((d) => d.key === key);
      if (this.#busy.get(key)?.kind === "stopping" || (this.#desired && desired?.revision !== seen.revision))
        Object.assign(pod, { terminating: true, ready: false });
      pods.push(pod);
    }
    // Desired pods with no container yet: being created, or waiting to retry a failure.
    for (const desired of this.#desired ?? []) {
      if (this.#seen.has(desired.key)) continue;
      const failure = this.#failures.get(desired.key);
      pods.push(this.#pendingPod(desired, failure));
    }
    pods.sort((a, b) => podKey(a.namespace, a.name).localeCompare(podKey(b.namespace, b.name)));
    // Only a failure is reported: a test time renewed at each poll would make every view a change.
    const lastTest =
      this.#engineError && this.#engineErrorAt
        ? { testedAt: this.#engineErrorAt, ok: false, message: this.#engineError }
        : undefined;
    const images = this.#prePull?.images(this.#node.name);
    return {
      nodes: [{ ...structuredClone(this.#node), ...(images ? { images } : {}) }],
      pods,
      ...(lastTest ? { lastTest } : {}),
    };
  }

  #pendingPod(desired: DesiredContainer, failure: Failure | undefined): ObservedPod {
    const { task } = desired;
    const reason =
      failure?.reason ?? (this.#waiting.has(desired.key) ? "WaitingForVirtualIP" : "ContainerCreating");
    return {
      name: desired.name,
      namespace: desired.namespace,
      task: task.metadata.name,
      taskUid: task.metadata.uid ?? "",
      ...(task.metadata.generation === undefined ? {} : { generation: task.metadata.generation }),
      job: task.spec.job ?? task.metadata.labels?.[LABELS.job] ?? "",
      node: this.#node.name,
      index: desired.index,
      phase: "Pending",
      state: "Waiting",
      ready: false,
      restarts: 0,
      reason,
      ...(failure ? { message: failure.message } : {}),
      container: task.spec.task ?? task.metadata.name,
    };
  }

  /** The pod's container when it is one of this runtime's and runs; throws saying why not. */
  #running(pod: { namespace: string; name: string; container?: string }, what: string): Seen {
    const key = podKey(pod.namespace, pod.name);
    const seen = this.#seen.get(key);
    if (!seen) throw new Error(`pod ${key} is not one of this agent's pods`);
    if (pod.container && pod.container !== seen.pod.container)
      throw new Error(`pod ${key} has no container ${pod.container}`);
    if (seen.pod.phase !== "Running" || this.#busy.get(key)?.kind === "stopping")
      throw new Error(`pod ${key} is not running (${seen.pod.phase}): no ${what} into it`);
    return seen;
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #changedIfDifferent(): void {
    const view = JSON.stringify(this.observe());
    if (view === this.#lastView) return;
    this.#lastView = view;
    for (const listener of this.#listeners) {
      try {
        listener();
      } catch (error) {
        this.#logger.error("change listener threw", { error: (error as Error).message });
      }
    }
  }

  async logStream(pod: { namespace: string; name: string }, options: LogStreamOptions): Promise<Readable> {
    const key = podKey(pod.namespace, pod.name);
    const seen = this.#seen.get(key);
    if (!seen) throw new Error(`no container for pod ${key} on node ${this.#node.name}`);
    if (options.previous)
      throw new Error(
        "previous is not available on the docker runtime: a container's restarts share one log",
      );
    const sidecar = options.container === SIDECAR_CONTAINER ? this.#sidecars.get(key) : undefined;
    if (options.container && options.container !== seen.pod.container && !sidecar)
      throw new Error(`pod ${key} has no container ${options.container}`);
    // The sidecar's log: rlark-net's lines (refused and failed connections).
    const container = this.#client.getContainer(sidecar?.id ?? seen.id);
    const common = {
      stdout: true,
      stderr: true,
      timestamps: options.timestamps ?? false,
      ...(options.tail !== undefined ? { tail: options.tail } : {}),
      ...(options.sinceSeconds ? { since: Math.floor(Date.now() / 1000) - options.sinceSeconds } : {}),
    };
    // The engine frames stdout and stderr (no TTY): demuxed into one byte stream, in order.
    const out = new PassThrough();
    let source: Readable;
    if (options.follow) source = (await container.logs({ ...common, follow: true })) as unknown as Readable;
    else {
      const buffer = await container.logs({ ...common, follow: false });
      source = new PassThrough().end(buffer);
    }
    this.#client.modem.demuxStream(source, out, out);
    source.on("end", () => out.end());
    source.on("error", (error) => out.destroy(error));
    out.on("close", () => source.destroy());
    if (!options.limitBytes) return out;
    const limited = out.pipe(limitBytes(options.limitBytes));
    limited.on("close", () => out.destroy());
    return limited;
  }

  async stop(options: StopOptions = {}): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.#prePull?.stop();
    await this.#ticking;
    await Promise.all([...this.#busy.values()].map((work) => work.done));
    if (options.terminatePods) {
      await this.#list();
      await Promise.all([...this.#seen.values()].map((seen) => this.#remove(seen)));
      await Promise.all(
        [...this.#sidecars].filter(([key]) => !this.#seen.has(key)).map(([, s]) => this.#removeSidecar(s)),
      );
    }
    this.#listeners.clear();
  }
}
