// Messages on the `rlark-agent` and `rlark-enroll` channels. Everything that arrives is
// `unknown` until one of the parse functions below has checked it field by field.

import type { KubeObject, ObjectRef } from "../kube-object.ts";
import { type AgentGroupReport, parseAgentGroupReport } from "./agent-group-report.ts";
import { pingMeshReportProblem } from "./pingmesh-report.ts";
import { ProtocolError } from "./protocol-error.ts";

/** Objects on the wire; the agent and hub check each against its kind's schema where they use it. */
export type { KubeObject, ObjectRef };

export const PROCESS_STATES = ["STOPPED", "STARTING", "RUNNING", "BACKOFF", "FAILED"] as const;
export const HEALTH_STATES = ["STARTING", "READY", "DEGRADED", "STOPPED", "UNKNOWN"] as const;
export type ProcessState = (typeof PROCESS_STATES)[number];
export type HealthState = (typeof HEALTH_STATES)[number];

export interface Capability {
  name: string;
  process?: ProcessState;
  health?: HealthState;
  message?: string;
}

export const RUNTIMES = ["kubernetes", "process", "docker"] as const;
export type Runtime = (typeof RUNTIMES)[number];

// agent → hub
export interface Hello {
  type: "hello";
  cluster: string;
  agentVersion: string;
  bootId: string;
  runtime: Runtime;
  capabilities: Capability[];
}
export interface Ack {
  type: "ack";
  generation: number;
}
export interface Report {
  type: "report";
  nodes: KubeObject[];
  pods: KubeObject[];
  tasks: KubeObject[];
  /** DomainPeers with only status.traffic: the live figures of the cluster's nodeservers. */
  domainPeers?: KubeObject[];
  /** AddonRelease status objects: each Addon desired or still being uninstalled on the cluster. */
  addons?: KubeObject[];
  /** BundleRelease status objects: each Bundle desired or still being removed on the cluster. */
  bundles?: KubeObject[];
  capabilities: Capability[];
  /** The cluster's API server version (kubernetes runtime). */
  kubernetesVersion?: string;
  /** The cluster's StorageClasses, sorted by name (kubernetes runtime). */
  storageClasses?: StorageClassSummary[];
  /** The runtime's last try of its cluster's API (the Version API, for kubernetes). */
  lastTest?: ConnectivityTest;
  /** The AgentGroup membership as the agent's member sees it (agent-group-report.ts). */
  agentGroup?: AgentGroupReport;
  /**
   * The cluster's PingMesh figures (Cluster status.pingMesh's shape): only bounded in size here;
   * the hub checks it against the Cluster schema before it keeps any of it.
   */
  pingMesh?: Record<string, unknown>;
}
/** One StorageClass as a report carries it (Cluster status.storageClasses has the same shape). */
export interface StorageClassSummary {
  name: string;
  provisioner: string;
  default?: boolean;
  reclaimPolicy?: string;
  volumeBindingMode?: string;
  allowVolumeExpansion?: boolean;
}
/** A cluster has a handful; a report carrying more is refused rather than stored. */
const MAX_STORAGE_CLASSES = 256;
export interface ConnectivityTest {
  /** RFC 3339. */
  testedAt: string;
  ok: boolean;
  /** Why it failed; absent when ok. */
  message?: string;
}
export interface Heartbeat {
  type: "heartbeat";
  capabilities?: Capability[];
}
/** Certificate renewal over the open tunnel: a new public key, answered by `certificate`. */
export interface Renew {
  type: "renew";
  publicKey: string;
}
export type AgentMessage = Hello | Ack | Report | Heartbeat | Renew;

// hub → agent
/** The hub's first message: its host-key certificate, checked by the agent before hello. */
export interface Welcome {
  type: "welcome";
  hostCert: string;
  heartbeatIntervalMs: number;
}
export interface Snapshot {
  type: "snapshot";
  generation: number;
  objects: KubeObject[];
}
export interface Delta {
  type: "delta";
  generation: number;
  upserts: KubeObject[];
  deletes: ObjectRef[];
}
export interface CertificateMessage {
  type: "certificate";
  cert: string;
}
export interface ErrorMessage {
  type: "error";
  message: string;
}
export type HubMessage = Welcome | Snapshot | Delta | CertificateMessage | ErrorMessage;

// rlark-enroll
export interface EnrollRequest {
  type: "csr";
  publicKey: string;
}
export interface Enrolled {
  type: "enrolled";
  cert: string;
  caCert: string;
}
export type EnrollResponse = Enrolled | ErrorMessage;

export { ProtocolError };

type Obj = Record<string, unknown>;

/** A message's type for error texts. Only a string is printed: String() of an object whose
 * `toString` is not a function throws a TypeError (found by hack/fuzz). */
function typeOf(v: Obj): string {
  return typeof v.type === "string" ? v.type.slice(0, 64) : typeof v.type;
}

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function str(o: Obj, key: string, where: string, maxLength = 1 << 16): string {
  const v = o[key];
  if (typeof v !== "string" || v.length > maxLength) {
    throw new ProtocolError(`${where}: ${key} must be a string of at most ${maxLength} characters`);
  }
  return v;
}

function generation(o: Obj, where: string): number {
  const v = o.generation;
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) {
    throw new ProtocolError(`${where}: generation must be a non-negative integer`);
  }
  return v;
}

function list<T>(o: Obj, key: string, where: string, item: (v: unknown, at: string) => T): T[] {
  const v = o[key];
  if (!Array.isArray(v)) throw new ProtocolError(`${where}: ${key} must be an array`);
  return v.map((x, i) => item(x, `${where}.${key}[${i}]`));
}

export function parseKubeObject(v: unknown, where: string): KubeObject {
  if (!isObj(v)) throw new ProtocolError(`${where}: must be an object`);
  const apiVersion = str(v, "apiVersion", where, 253);
  const kind = str(v, "kind", where, 253);
  const meta = v.metadata;
  if (!isObj(meta)) throw new ProtocolError(`${where}: metadata must be an object`);
  const name = str(meta, "name", `${where}.metadata`, 253);
  const namespace =
    meta.namespace === undefined ? undefined : str(meta, "namespace", `${where}.metadata`, 253);
  // The envelope is checked here; the rest against the kind's schema where it is used.
  return {
    ...v,
    apiVersion,
    kind,
    metadata: { ...meta, name, ...(namespace === undefined ? {} : { namespace }) },
  };
}

function parseRef(v: unknown, where: string): ObjectRef {
  if (!isObj(v)) throw new ProtocolError(`${where}: must be an object`);
  const ref: ObjectRef = { kind: str(v, "kind", where, 253), name: str(v, "name", where, 253) };
  if (v.apiVersion !== undefined) ref.apiVersion = str(v, "apiVersion", where, 253);
  if (v.namespace !== undefined) ref.namespace = str(v, "namespace", where, 253);
  return ref;
}

function parseConnectivityTest(v: unknown, where: string): ConnectivityTest {
  if (!isObj(v)) throw new ProtocolError(`${where}: must be an object`);
  const testedAt = str(v, "testedAt", where, 64);
  if (Number.isNaN(Date.parse(testedAt)))
    throw new ProtocolError(`${where}: testedAt must be an RFC 3339 time`);
  if (typeof v.ok !== "boolean") throw new ProtocolError(`${where}: ok must be a boolean`);
  return {
    testedAt,
    ok: v.ok,
    ...(v.message === undefined ? {} : { message: str(v, "message", where, 1024) }),
  };
}

function parseStorageClasses(v: Obj, where: string): StorageClassSummary[] {
  if (Array.isArray(v.storageClasses) && v.storageClasses.length > MAX_STORAGE_CLASSES)
    throw new ProtocolError(`${where}: storageClasses must list at most ${MAX_STORAGE_CLASSES}`);
  return list(v, "storageClasses", where, (item, at) => {
    if (!isObj(item)) throw new ProtocolError(`${at}: must be an object`);
    const flag = (key: "default" | "allowVolumeExpansion") => {
      if (item[key] === undefined) return {};
      if (typeof item[key] !== "boolean") throw new ProtocolError(`${at}: ${key} must be a boolean`);
      return { [key]: item[key] };
    };
    const text = (key: "reclaimPolicy" | "volumeBindingMode") =>
      item[key] === undefined ? {} : { [key]: str(item, key, at, 64) };
    return {
      name: str(item, "name", at, 253),
      provisioner: str(item, "provisioner", at, 253),
      ...flag("default"),
      ...text("reclaimPolicy"),
      ...text("volumeBindingMode"),
      ...flag("allowVolumeExpansion"),
    };
  });
}

/** One capability entry, from the wire or a component's status file. */
export function parseCapability(v: unknown, where: string): Capability {
  if (!isObj(v)) throw new ProtocolError(`${where}: must be an object`);
  const cap: Capability = { name: str(v, "name", where, 253) };
  if (v.process !== undefined) {
    if (!(PROCESS_STATES as readonly unknown[]).includes(v.process)) {
      throw new ProtocolError(`${where}: process must be one of ${PROCESS_STATES.join(", ")}`);
    }
    cap.process = v.process as ProcessState;
  }
  if (v.health !== undefined) {
    if (!(HEALTH_STATES as readonly unknown[]).includes(v.health)) {
      throw new ProtocolError(`${where}: health must be one of ${HEALTH_STATES.join(", ")}`);
    }
    cap.health = v.health as HealthState;
  }
  if (v.message !== undefined) cap.message = str(v, "message", where, 4096);
  return cap;
}

function parsePingMesh(value: unknown, where: string): Record<string, unknown> {
  const problem = pingMeshReportProblem(value);
  if (problem) throw new ProtocolError(`${where}: pingMesh ${problem}`);
  return value as Record<string, unknown>;
}

export function parseAgentMessage(v: unknown): AgentMessage {
  if (!isObj(v)) throw new ProtocolError("agent message must be a JSON object");
  const where = `agent ${typeOf(v)}`;
  switch (v.type) {
    case "hello": {
      const runtime = v.runtime;
      if (!(RUNTIMES as readonly unknown[]).includes(runtime)) {
        throw new ProtocolError(`${where}: runtime must be one of ${RUNTIMES.join(", ")}`);
      }
      return {
        type: "hello",
        cluster: str(v, "cluster", where, 253),
        agentVersion: str(v, "agentVersion", where, 128),
        bootId: str(v, "bootId", where, 128),
        runtime: runtime as Runtime,
        capabilities: list(v, "capabilities", where, parseCapability),
      };
    }
    case "ack":
      return { type: "ack", generation: generation(v, where) };
    case "report":
      return {
        type: "report",
        nodes: list(v, "nodes", where, parseKubeObject),
        pods: list(v, "pods", where, parseKubeObject),
        tasks: list(v, "tasks", where, parseKubeObject),
        ...(v.domainPeers === undefined
          ? {}
          : { domainPeers: list(v, "domainPeers", where, parseKubeObject) }),
        ...(v.addons === undefined ? {} : { addons: list(v, "addons", where, parseKubeObject) }),
        ...(v.bundles === undefined ? {} : { bundles: list(v, "bundles", where, parseKubeObject) }),
        capabilities: list(v, "capabilities", where, parseCapability),
        ...(v.kubernetesVersion === undefined
          ? {}
          : { kubernetesVersion: str(v, "kubernetesVersion", where, 128) }),
        ...(v.lastTest === undefined
          ? {}
          : { lastTest: parseConnectivityTest(v.lastTest, `${where} lastTest`) }),
        ...(v.storageClasses === undefined ? {} : { storageClasses: parseStorageClasses(v, where) }),
        ...(v.agentGroup === undefined
          ? {}
          : { agentGroup: parseAgentGroupReport(v.agentGroup, `${where} agentGroup`) }),
        ...(v.pingMesh === undefined ? {} : { pingMesh: parsePingMesh(v.pingMesh, where) }),
      };
    case "heartbeat": {
      const beat: Heartbeat = { type: "heartbeat" };
      if (v.capabilities !== undefined) beat.capabilities = list(v, "capabilities", where, parseCapability);
      return beat;
    }
    case "renew":
      return { type: "renew", publicKey: str(v, "publicKey", where, 8192) };
    default:
      throw new ProtocolError(`unknown agent message type ${JSON.stringify(v.type)}`);
  }
}

export function parseHubMessage(v: unknown): HubMessage {
  if (!isObj(v)) throw new ProtocolError("hub message must be a JSON object");
  const where = `hub ${typeOf(v)}`;
  switch (v.type) {
    case "welcome": {
      const interval = v.heartbeatIntervalMs;
      if (typeof interval !== "number" || !(interval > 0)) {
        throw new ProtocolError(`${where}: heartbeatIntervalMs must be a positive number`);
      }
      return { type: "welcome", hostCert: str(v, "hostCert", where, 16384), heartbeatIntervalMs: interval };
    }
    case "snapshot":
      return {
        type: "snapshot",
        generation: generation(v, where),
        objects: list(v, "objects", where, parseKubeObject),
      };
    case "delta":
      return {
        type: "delta",
        generation: generation(v, where),
        upserts: list(v, "upserts", where, parseKubeObject),
        deletes: list(v, "deletes", where, parseRef),
      };
    case "certificate":
      return { type: "certificate", cert: str(v, "cert", where, 16384) };
    case "error":
      return { type: "error", message: str(v, "message", where, 4096) };
    default:
      throw new ProtocolError(`unknown hub message type ${JSON.stringify(v.type)}`);
  }
}

export function parseEnrollRequest(v: unknown): EnrollRequest {
  if (!isObj(v) || v.type !== "csr") throw new ProtocolError("expected a csr message");
  return { type: "csr", publicKey: str(v, "publicKey", "csr", 8192) };
}

export function parseEnrollResponse(v: unknown): EnrollResponse {
  if (!isObj(v)) throw new ProtocolError("enroll response must be a JSON object");
  if (v.type === "error") return { type: "error", message: str(v, "message", "error", 4096) };
  if (v.type !== "enrolled") throw new ProtocolError(`unexpected enroll response ${JSON.stringify(v.type)}`);
  return {
    type: "enrolled",
    cert: str(v, "cert", "enrolled", 16384),
    caCert: str(v, "caCert", "enrolled", 16384),
  };
}
