// Task → Kubernetes manifests, without I/O: the workload (Deployment, StatefulSet with its
// headless Service, DaemonSet or batch Job), the ssh ConfigMap, and for Ray Tasks the scripts
// ConfigMap and the head Service. Every object carries the rlark labels that the runtime's
// prune and watches select on, and comes out with sorted keys, so a re-render is byte-identical.
import type { KubernetesObject } from "@kubernetes/client-node";
import packageJson from "../../../../../package.json" with { type: "json" };
import {
  AGENT_INSTANCE_LABEL,
  COMPONENT_LABEL,
  JOB_LABEL,
  MANAGED_BY_AGENT,
  MANAGED_BY_LABEL,
  RAY_HEAD_TASK_ANNOTATION,
  RAY_ROLE_ANNOTATION,
  RAY_TOTAL_NODES_ANNOTATION,
  TASK_GENERATION_ANNOTATION,
  TASK_LABEL,
  TASK_NAME_LABEL,
  TASK_NAMESPACE_ANNOTATION,
  TASK_UID_ANNOTATION,
} from "../../../../api/index.ts";
import type { RuntimeTask, WorkloadKind } from "../../types.ts";
import {
  dnsLabel,
  headlessServiceName,
  rayConfigMapName,
  rayHeadServiceName,
  sshConfigMapName,
} from "./names.ts";
import {
  RAY_CHECK_PY,
  RAY_DASHBOARD_PORT,
  RAY_DOMAIN_IP_DIR,
  RAY_HEAD_SH,
  RAY_METRICS_PORT,
  RAY_PORT,
  RAY_SCRIPTS_DIR,
  RAY_WAIT_SECONDS,
  RAY_WORKER_SH,
} from "./ray-scripts.ts";
import { sortKeys } from "./sort-keys.ts";

export const DEFAULT_NAMESPACE = "rlark-system";
/** The image with the Domain data path (rlark-net, iptables: hack/images/build), at this package's version. */
export const DEFAULT_SIDECAR_IMAGE = `rlark/sidecar:${packageJson.version}`;
export const SSH_DIR = "/etc/rlark/ssh";
export const SIDECAR_NAME = "rlark-sidecar";
export const NET_INIT_NAME = "rlark-net-init";
/** Puts the pod's virtual IP on lo (Ray roles in a Domain): an init container after the sidecar. */
export const LO_ADDR_INIT_NAME = "rlark-lo-addr";
/** The sidecar's and nodeserver's host directory (docs/networking-kubernetes.md). */
export const NODESERVER_DIR = "/var/run/rlark";
const SIDECAR_UID = 1337;
const OUTBOUND_PORT = 15001;
const INBOUND_PORT = 5700;

/** The image of the network init container and sidecar injected into pods of Tasks with a domain. */
export interface SidecarOptions {
  image: string;
}

export interface RenderOptions {
  /** Where a Task whose template names no namespace goes. Default rlark-system. */
  defaultNamespace?: string;
  /** Default: the image {@link DEFAULT_SIDECAR_IMAGE}. */
  sidecar?: SidecarOptions;
  /**
   * Labels everything rlark.io/agent-instance=<instance>, so several runtimes (test runs) can
   * share a cluster without pruning each other's objects. Unset for a real agent: one per cluster.
   */
  instance?: string;
  /** The whole desired set: a Ray worker finds its head's namespace there. */
  desired?: readonly RuntimeTask[];
  /**
   * The virtual IPs of a Domain's Tasks in every cluster (DomainPeer spec.tasks), by Domain and
   * Task name: a Ray worker whose head runs in another cluster reaches it at the first of them.
   */
  domainTasks?: (domain: string, task: string) => readonly string[] | undefined;
}

export interface RenderedTask {
  task: string;
  namespace: string;
  kind: WorkloadKind;
  /** In apply order: ConfigMaps and Services before the workload that uses them. */
  objects: KubernetesObject[];
}

/** A Task this runtime cannot run as given; the agent reports it instead of retrying. */
export class RenderError extends Error {
  readonly task: string;
  constructor(task: string, message: string) {
    super(`Task ${task}: ${message}`);
    this.name = "RenderError";
    this.task = task;
  }
}

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const WORKLOAD_KINDS: readonly WorkloadKind[] = ["Deployment", "StatefulSet", "DaemonSet", "Job"];

interface Workload {
  kind: WorkloadKind;
  replicas: number;
  namespace?: string;
  metadata: Obj;
  spec: Obj;
}

function readWorkload(task: RuntimeTask): Workload {
  const name = task.metadata.name;
  const k = task.spec.kubernetes;
  const workload = isObj(k) ? k.workload : undefined;
  if (!isObj(workload)) throw new RenderError(name, "spec.kubernetes.workload is missing");
  const kind = workload.kind;
  if (typeof kind !== "string" || !WORKLOAD_KINDS.includes(kind as WorkloadKind))
    throw new RenderError(name, `spec.kubernetes.workload.kind must be one of ${WORKLOAD_KINDS.join(", ")}`);
  const template = workload.template;
  if (!isObj(template) || !isObj(template.spec))
    throw new RenderError(name, "spec.kubernetes.workload.template.spec is missing");
  const containers = template.spec.containers;
  if (!Array.isArray(containers) || containers.length === 0 || !containers.every(isObj))
    throw new RenderError(
      name,
      "spec.kubernetes.workload.template.spec.containers needs at least one container",
    );
  const restartPolicy = template.spec.restartPolicy;
  if (restartPolicy !== undefined) {
    const allowed = kind === "Job" ? ["Never", "OnFailure"] : ["Always"];
    if (!allowed.includes(String(restartPolicy)))
      throw new RenderError(
        name,
        `spec.kubernetes.workload.template.spec.restartPolicy must be ${allowed.join(" or ")} for a ${String(kind)}`,
      );
  }
  const replicas = workload.replicas ?? 1;
  if (typeof replicas !== "number" || !Number.isInteger(replicas) || replicas < 0)
    throw new RenderError(name, "spec.kubernetes.workload.replicas must be a whole number");
  const namespace = template.namespace;
  return {
    kind: kind as WorkloadKind,
    replicas,
    ...(typeof namespace === "string" && namespace !== "" ? { namespace } : {}),
    metadata: isObj(template.metadata) ? structuredClone(template.metadata) : {},
    spec: structuredClone(template.spec),
  };
}

/** The namespace a Task's objects go to in the cluster. */
export function taskNamespace(task: RuntimeTask, defaultNamespace = DEFAULT_NAMESPACE): string {
  const k = task.spec.kubernetes;
  const template = isObj(k) && isObj(k.workload) ? k.workload.template : undefined;
  const ns = isObj(template) ? template.namespace : undefined;
  return typeof ns === "string" && ns !== "" ? ns : defaultNamespace;
}

export const jobOf = (task: RuntimeTask): string => task.spec.job ?? task.metadata.labels?.[JOB_LABEL] ?? "";

/** The labels every object of a Task carries; also the selector of its workload (without job). */
export function taskLabels(task: RuntimeTask, instance?: string): Record<string, string> {
  const job = jobOf(task);
  const name = task.metadata.name;
  const template = task.spec.task ?? (job && name.startsWith(`${job}-`) ? name.slice(job.length + 1) : name);
  return {
    [TASK_NAME_LABEL]: name,
    [TASK_LABEL]: template,
    [MANAGED_BY_LABEL]: MANAGED_BY_AGENT,
    ...(job ? { [JOB_LABEL]: job } : {}),
    ...(instance ? { [AGENT_INSTANCE_LABEL]: instance } : {}),
  };
}

const selectorLabels = (task: string): Record<string, string> => ({
  [TASK_NAME_LABEL]: task,
  [MANAGED_BY_LABEL]: MANAGED_BY_AGENT,
});

function meta(task: RuntimeTask, name: string, namespace: string, component: string, instance?: string): Obj {
  const annotations: Record<string, string> = {};
  if (task.metadata.uid) annotations[TASK_UID_ANNOTATION] = task.metadata.uid;
  if (task.metadata.generation !== undefined)
    annotations[TASK_GENERATION_ANNOTATION] = String(task.metadata.generation);
  if (task.metadata.namespace) annotations[TASK_NAMESPACE_ANNOTATION] = task.metadata.namespace;
  return {
    name,
    namespace,
    labels: { ...taskLabels(task, instance), [COMPONENT_LABEL]: component },
    ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
  };
}

interface EnvEntry {
  name: string;
  value?: string;
  valueFrom?: Obj;
}

const fieldEnv = (name: string, fieldPath: string): EnvEntry => ({
  name,
  valueFrom: { fieldRef: { fieldPath } },
});

/** Adds `extra` to a container's env; a variable the Task defines itself wins over ours. */
function addEnv(container: Obj, extra: EnvEntry[]): void {
  const own = Array.isArray(container.env) ? (container.env as Obj[]) : [];
  const taken = new Set(own.map((e) => e.name));
  container.env = [...extra.filter((e) => !taken.has(e.name)), ...own];
}

function addMount(container: Obj, mount: Obj): void {
  const mounts = Array.isArray(container.volumeMounts) ? (container.volumeMounts as Obj[]) : [];
  if (mounts.some((m) => m.mountPath === mount.mountPath || m.name === mount.name)) return;
  container.volumeMounts = [...mounts, mount];
}

function addVolume(spec: Obj, volume: Obj): void {
  const volumes = Array.isArray(spec.volumes) ? (spec.volumes as Obj[]) : [];
  spec.volumes = [...volumes.filter((v) => v.name !== volume.name), volume];
}

type RayRole = "head" | "worker";

function rayRole(task: RuntimeTask): RayRole | undefined {
  const role =
    task.spec.annotations?.[RAY_ROLE_ANNOTATION] ?? task.metadata.annotations?.[RAY_ROLE_ANNOTATION];
  return role === "head" || role === "worker" ? role : undefined;
}

const annotation = (task: RuntimeTask, key: string): string | undefined =>
  task.spec.annotations?.[key] ?? task.metadata.annotations?.[key];

/** The head Task's metadata.name for a worker: `<job>-<rlinf.io/ray-head-task-name>`. */
function rayHeadTask(task: RuntimeTask): string {
  const head = annotation(task, RAY_HEAD_TASK_ANNOTATION);
  if (!head)
    throw new RenderError(
      task.metadata.name,
      `a Ray worker needs the annotation ${RAY_HEAD_TASK_ANNOTATION}`,
    );
  const job = jobOf(task);
  return job ? dnsLabel(job, head) : head;
}

/** Renders one Task; throws RenderError when the Task cannot run as given. */
export function renderTask(task: RuntimeTask, options: RenderOptions = {}): RenderedTask {
  const name = task.metadata.name;
  const defaultNamespace = options.defaultNamespace ?? DEFAULT_NAMESPACE;
  const workload = readWorkload(task);
  const namespace = workload.namespace ?? defaultNamespace;
  const objects: Obj[] = [];
  const podSpec = workload.spec;
  const containers = podSpec.containers as Obj[];

  // pod template metadata: the template's own labels, ours on top (the selector depends on them)
  const podLabels = {
    ...(isObj(workload.metadata.labels) ? workload.metadata.labels : {}),
    ...taskLabels(task, options.instance),
  };
  const podAnnotations: Obj = isObj(workload.metadata.annotations)
    ? { ...workload.metadata.annotations }
    : {};
  // a Task recreated under the same name (new uid) rolls its pods even with an identical spec
  if (task.metadata.uid) podAnnotations[TASK_UID_ANNOTATION] = task.metadata.uid;

  if (task.spec.nodeSelector && Object.keys(task.spec.nodeSelector).length > 0) {
    podSpec.nodeSelector = {
      ...(isObj(podSpec.nodeSelector) ? podSpec.nodeSelector : {}),
      ...task.spec.nodeSelector,
    };
  }
  if (workload.kind === "Job" && podSpec.restartPolicy === undefined) podSpec.restartPolicy = "Never";

  // ephemeral volume claims stay as given; the labels let the runtime see the PVCs Kubernetes makes
  if (Array.isArray(podSpec.volumes)) {
    for (const volume of podSpec.volumes as Obj[]) {
      const eph = volume.ephemeral;
      if (!isObj(eph) || !isObj(eph.volumeClaimTemplate)) continue;
      const vct = eph.volumeClaimTemplate;
      const m = isObj(vct.metadata) ? vct.metadata : {};
      vct.metadata = {
        ...m,
        labels: { ...(isObj(m.labels) ? m.labels : {}), ...taskLabels(task, options.instance) },
      };
    }
  }

  const common: EnvEntry[] = [
    { name: "RLARK_TASK", value: name },
    { name: "RLARK_JOB", value: jobOf(task) },
    fieldEnv("RLARK_NAMESPACE", "metadata.namespace"),
    fieldEnv("RLARK_POD_NAME", "metadata.name"),
    fieldEnv("RLARK_POD_IP", "status.podIP"),
    fieldEnv("RLARK_NODE_NAME", "spec.nodeName"),
  ];
  if (task.spec.sshPublicKey) {
    common.push({ name: "RLARK_SSH_PUBLIC_KEY", value: task.spec.sshPublicKey });
    objects.push({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: meta(task, sshConfigMapName(name), namespace, "ssh", options.instance),
      data: { authorized_keys: `${task.spec.sshPublicKey.trim()}\n` },
    });
    addVolume(podSpec, {
      name: "rlark-ssh",
      configMap: { name: sshConfigMapName(name), defaultMode: 0o644 },
    });
  }
  for (const container of containers) {
    addEnv(container, common);
    if (task.spec.sshPublicKey)
      addMount(container, { name: "rlark-ssh", mountPath: SSH_DIR, readOnly: true });
  }

  const role = rayRole(task);
  if (role) {
    const main = containers[0]!;
    const original = [
      ...(Array.isArray(main.command) ? (main.command as string[]) : []),
      ...(Array.isArray(main.args) ? (main.args as string[]) : []),
    ];
    main.command = ["bash", `${RAY_SCRIPTS_DIR}/${role === "head" ? "ray_head.sh" : "ray_worker.sh"}`];
    if (original.length > 0) main.args = original;
    else delete main.args;
    const headTask = role === "head" ? name : rayHeadTask(task);
    const head = options.desired?.find((t) => t.metadata.name === headTask);
    const headNamespace =
      role === "head" ? namespace : head ? taskNamespace(head, defaultNamespace) : namespace;
    // The head's Service when the head is in this cluster (or the Task is in no Domain). A head
    // in another cluster is reached over the Domain at its pod's virtual IP, which the hub
    // allocates once that pod exists: it goes into the scripts' ConfigMap (`head_address`, empty
    // until known, updated in place) and the worker waits for it.
    const remoteHead = role === "worker" && !head && task.spec.domain !== undefined;
    const headAddress = remoteHead ? "" : `${rayHeadServiceName(headTask)}.${headNamespace}.svc:${RAY_PORT}`;
    const headVip = remoteHead ? options.domainTasks?.(task.spec.domain as string, headTask)?.[0] : undefined;
    const rayEnv: EnvEntry[] = [
      { name: "RLARK_RAY_ROLE", value: role },
      { name: "RLARK_RAY_PORT", value: String(RAY_PORT) },
      { name: "RLARK_RAY_DASHBOARD_PORT", value: String(RAY_DASHBOARD_PORT) },
      { name: "RLARK_RAY_METRICS_PORT", value: String(RAY_METRICS_PORT) },
      { name: "RLARK_RAY_WAIT_SECONDS", value: String(RAY_WAIT_SECONDS) },
      { name: "RLARK_HEAD_ADDRESS", value: headAddress },
    ];
    // In a Domain, a Ray node advertises its virtual IP (the sidecar writes it here), so nodes in
    // other clusters reach its raylet and object manager over the Domain too.
    if (task.spec.domain) rayEnv.push({ name: "RLARK_DOMAIN_IP_FILE", value: `${RAY_DOMAIN_IP_DIR}/ip` });
    if (role === "head") {
      rayEnv.push({
        name: "RLARK_RAY_TOTAL_NODES",
        value: annotation(task, RAY_TOTAL_NODES_ANNOTATION) ?? "1",
      });
    } else {
      rayEnv.push({ name: "RLARK_RAY_HEAD_TASK", value: headTask });
    }
    addEnv(main, rayEnv);
    addMount(main, { name: "rlark-ray", mountPath: RAY_SCRIPTS_DIR, readOnly: true });
    if (task.spec.domain) {
      addMount(main, { name: "rlark-domain-ip", mountPath: RAY_DOMAIN_IP_DIR, readOnly: true });
      addVolume(podSpec, { name: "rlark-domain-ip", emptyDir: { sizeLimit: "1Mi" } });
    }
    addVolume(podSpec, {
      name: "rlark-ray",
      configMap: { name: rayConfigMapName(name), defaultMode: 0o755 },
    });
    objects.push({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: meta(task, rayConfigMapName(name), namespace, "ray-scripts", options.instance),
      data: {
        "ray_check.py": RAY_CHECK_PY,
        "ray_head.sh": RAY_HEAD_SH,
        "ray_worker.sh": RAY_WORKER_SH,
        ...(remoteHead ? { head_address: headVip ? `${headVip}:${RAY_PORT}` : "" } : {}),
      },
    });
    if (role === "head") {
      objects.push({
        apiVersion: "v1",
        kind: "Service",
        metadata: meta(task, rayHeadServiceName(name), namespace, "ray-head", options.instance),
        spec: {
          selector: selectorLabels(name),
          // workers must find the head before it reports Ready: it waits for them
          publishNotReadyAddresses: true,
          ports: [
            { name: "gcs", port: RAY_PORT, targetPort: RAY_PORT, protocol: "TCP" },
            { name: "dashboard", port: RAY_DASHBOARD_PORT, targetPort: RAY_DASHBOARD_PORT, protocol: "TCP" },
            { name: "metrics", port: RAY_METRICS_PORT, targetPort: RAY_METRICS_PORT, protocol: "TCP" },
          ],
        },
      });
    }
  }

  if (task.spec.domain) {
    addDomainNetwork(podSpec, task, options.sidecar?.image ?? DEFAULT_SIDECAR_IMAGE, role !== undefined);
  }

  const template = {
    metadata: {
      labels: podLabels,
      ...(Object.keys(podAnnotations).length > 0 ? { annotations: podAnnotations } : {}),
    },
    spec: podSpec,
  };
  const workloadMeta = meta(task, name, namespace, "workload", options.instance);
  const selector = { matchLabels: selectorLabels(name) };
  switch (workload.kind) {
    case "Deployment":
      objects.push({
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: workloadMeta,
        spec: { replicas: workload.replicas, selector, template },
      });
      break;
    case "StatefulSet":
      objects.push({
        apiVersion: "v1",
        kind: "Service",
        metadata: meta(task, headlessServiceName(name), namespace, "headless", options.instance),
        spec: { clusterIP: "None", publishNotReadyAddresses: true, selector: selectorLabels(name) },
      });
      objects.push({
        apiVersion: "apps/v1",
        kind: "StatefulSet",
        metadata: workloadMeta,
        spec: {
          replicas: workload.replicas,
          serviceName: headlessServiceName(name),
          // training roles start together: no replica waits for the one before it to be Ready
          podManagementPolicy: "Parallel",
          selector,
          template,
        },
      });
      break;
    case "DaemonSet":
      objects.push({
        apiVersion: "apps/v1",
        kind: "DaemonSet",
        metadata: workloadMeta,
        spec: { selector, template },
      });
      break;
    case "Job":
      objects.push({
        apiVersion: "batch/v1",
        kind: "Job",
        metadata: workloadMeta,
        spec: {
          parallelism: workload.replicas,
          completions: workload.replicas,
          // each pod knows its replica index (JOB_COMPLETION_INDEX), as StatefulSet pods do
          completionMode: "Indexed",
          // a Task's run is not retried by the cluster: a failure is reported, the Job decides
          backoffLimit: 0,
          template,
        },
      });
      break;
  }
  return {
    task: name,
    namespace,
    kind: workload.kind,
    objects: objects.map((o) => sortKeys(o) as KubernetesObject),
  };
}

/**
 * The Domain's data path in the pod (docs/networking-kubernetes.md): an init container that, with
 * NET_ADMIN only, redirects TCP to the Domain's CIDR to the sidecar, and the sidecar itself,
 * unprivileged. The sidecar is a native one (an init container with restartPolicy Always): it is
 * up before the Task's containers start and does not keep a finished Job's pod alive.
 */
function addDomainNetwork(podSpec: Obj, task: RuntimeTask, image: string, writesIp: boolean): void {
  const cidr = task.spec.domainCIDR;
  if (!cidr)
    throw new RenderError(
      task.metadata.name,
      `spec.domainCIDR is missing: the hub did not know Domain ${task.spec.domain}'s CIDR when it created the Task`,
    );
  const ports = [
    { name: "RLARK_OUTBOUND_PORT", value: String(OUTBOUND_PORT) },
    { name: "RLARK_INBOUND_PORT", value: String(INBOUND_PORT) },
  ];
  const init = {
    name: NET_INIT_NAME,
    image,
    command: ["rlark-net", "init"],
    env: [
      { name: "RLARK_DOMAIN_CIDR", value: cidr },
      { name: "RLARK_SIDECAR_UID", value: String(SIDECAR_UID) },
      ...ports,
    ],
    securityContext: {
      runAsUser: 0,
      runAsNonRoot: false,
      capabilities: { add: ["NET_ADMIN", "NET_RAW"], drop: ["ALL"] },
    },
  };
  const sidecar = {
    name: SIDECAR_NAME,
    image,
    restartPolicy: "Always",
    // the image's entrypoint is node with rlark.js; it has no /usr/bin/env for rlark's shebang
    args: ["sidecar"],
    env: [
      { name: "RLARK_DOMAIN", value: task.spec.domain },
      fieldEnv("RLARK_POD_NAME", "metadata.name"),
      fieldEnv("RLARK_POD_NAMESPACE", "metadata.namespace"),
      { name: "RLARK_NODESERVER_SOCKET", value: `${NODESERVER_DIR}/nodeserver.sock` },
      ...(writesIp ? [{ name: "RLARK_DOMAIN_IP_FILE", value: `${RAY_DOMAIN_IP_DIR}/ip` }] : []),
      ...ports,
    ],
    ports: [{ containerPort: INBOUND_PORT, name: "rlark-inbound", protocol: "TCP" }],
    securityContext: {
      runAsUser: SIDECAR_UID,
      runAsNonRoot: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"] },
    },
    volumeMounts: [
      { name: "rlark-nodeserver", mountPath: NODESERVER_DIR },
      ...(writesIp ? [{ name: "rlark-domain-ip", mountPath: RAY_DOMAIN_IP_DIR }] : []),
    ],
  };
  // A pod that advertises its virtual IP (a Ray node) also binds it, so it must be on an interface
  // of the pod: this init container, listed after the native sidecar, starts once the sidecar has
  // started, waits for the IP file the sidecar writes, adds <ip>/32 to lo and exits, so the Task's
  // containers start with the address in place and without NET_ADMIN of their own.
  const loAddr = {
    name: LO_ADDR_INIT_NAME,
    image,
    command: ["rlark-net", "lo-addr"],
    env: [
      { name: "RLARK_DOMAIN_IP_FILE", value: `${RAY_DOMAIN_IP_DIR}/ip` },
      { name: "RLARK_DOMAIN_CIDR", value: cidr },
      // as long as the Ray scripts would wait for the same file
      { name: "RLARK_IP_WAIT_SECONDS", value: String(RAY_WAIT_SECONDS) },
    ],
    securityContext: {
      runAsUser: 0,
      runAsNonRoot: false,
      allowPrivilegeEscalation: false,
      capabilities: { add: ["NET_ADMIN"], drop: ["ALL"] },
    },
    volumeMounts: [{ name: "rlark-domain-ip", mountPath: RAY_DOMAIN_IP_DIR, readOnly: true }],
  };
  const ours = [NET_INIT_NAME, SIDECAR_NAME, LO_ADDR_INIT_NAME];
  const own = Array.isArray(podSpec.initContainers) ? (podSpec.initContainers as Obj[]) : [];
  // ours first: the redirect is in place before any of the Task's own containers runs
  podSpec.initContainers = [
    init,
    sidecar,
    ...(writesIp ? [loAddr] : []),
    ...own.filter((c) => !ours.includes(String(c.name))),
  ];
  addVolume(podSpec, {
    name: "rlark-nodeserver",
    hostPath: { path: NODESERVER_DIR, type: "DirectoryOrCreate" },
  });
}
