// The `browse` stream purpose: the hub asks a cluster's agent for one page of one kind of object
// (namespaces, Deployments, Services, Pods, ConfigMaps, Secrets) and the agent answers with a
// projection of each, read with its own credentials. Read-only by construction: a request names
// a resource from a closed list and nothing else (no verb, no field selection), and a Secret's
// projection is its name, type and key names, so there is no request that returns a value.

export const BROWSE_PURPOSE = "browse";

export const BROWSE_RESOURCES = [
  "namespaces",
  "deployments",
  "services",
  "pods",
  "configmaps",
  "secrets",
] as const;
export type BrowseResource = (typeof BROWSE_RESOURCES)[number];

export const DEFAULT_BROWSE_LIMIT = 50;
export const MAX_BROWSE_LIMIT = 200;
/** One answer on the wire; a page that does not fit is refused with a hint to ask for fewer. */
export const MAX_BROWSE_ANSWER_BYTES = 1024 * 1024;
/** A ConfigMap value or a literal env value longer than this is cut (…). */
export const MAX_SHOWN_VALUE = 4096;

export interface BrowseRequest {
  resource: BrowseResource;
  /** Required for every resource but namespaces. */
  namespace?: string;
  /** Items per page, 1 to MAX_BROWSE_LIMIT. */
  limit: number;
  /** The API server's continue token from the previous page. */
  continue?: string;
}

export interface NamespaceItem {
  name: string;
  phase?: string;
  created?: string;
}

/** A container's env entry as written: a literal value, or a reference that is never followed. */
export interface EnvItem {
  name: string;
  value?: string;
  secretKeyRef?: { name: string; key: string };
  configMapKeyRef?: { name: string; key: string };
  fieldRef?: string;
  resourceFieldRef?: string;
}

export interface EnvFromItem {
  prefix?: string;
  secretRef?: string;
  configMapRef?: string;
}

export interface ContainerItem {
  name: string;
  image?: string;
  env: EnvItem[];
  envFrom: EnvFromItem[];
}

export interface DeploymentItem {
  name: string;
  replicas: number;
  readyReplicas: number;
  containers: ContainerItem[];
  created?: string;
}

export interface ServicePortItem {
  name?: string;
  port: number;
  targetPort?: string;
  protocol?: string;
  nodePort?: number;
}

export interface ServiceItem {
  name: string;
  type?: string;
  clusterIP?: string;
  ports: ServicePortItem[];
}

export interface PodItem {
  name: string;
  phase?: string;
  node?: string;
  podIP?: string;
  ready: string;
  restarts: number;
  created?: string;
}

export interface ConfigMapItem {
  name: string;
  data: Record<string, string>;
}

/** A Secret is its name, its type and its key names: never a value. */
export interface SecretItem {
  name: string;
  type?: string;
  keys: string[];
}

export type BrowseItem = NamespaceItem | DeploymentItem | ServiceItem | PodItem | ConfigMapItem | SecretItem;

export interface BrowseAnswer {
  resource: BrowseResource;
  namespace?: string;
  items: BrowseItem[];
  /** Present when there are more: pass it back as `continue` for the next page. */
  continue?: string;
}

export class BrowseRequestError extends Error {}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** Checks a request field by field (the agent does, whatever the hub sent); throws naming the field. */
export function parseBrowseRequest(value: unknown): BrowseRequest {
  if (!isRecord(value)) throw new BrowseRequestError("browse request: must be a JSON object");
  for (const key of Object.keys(value)) {
    if (!["resource", "namespace", "limit", "continue"].includes(key))
      throw new BrowseRequestError(`browse request: unknown field ${JSON.stringify(key)}`);
  }
  const resource = value.resource;
  if (typeof resource !== "string" || !(BROWSE_RESOURCES as readonly string[]).includes(resource)) {
    throw new BrowseRequestError(`browse request: resource must be one of ${BROWSE_RESOURCES.join(", ")}`);
  }
  const request: BrowseRequest = { resource: resource as BrowseResource, limit: DEFAULT_BROWSE_LIMIT };
  if (resource !== "namespaces") {
    if (typeof value.namespace !== "string" || !DNS1123_LABEL.test(value.namespace))
      throw new BrowseRequestError(`browse request: ${resource} need a namespace (a DNS-1123 label)`);
    request.namespace = value.namespace;
  } else if (value.namespace !== undefined) {
    throw new BrowseRequestError("browse request: namespaces take no namespace");
  }
  if (value.limit !== undefined) {
    const limit = value.limit;
    if (typeof limit !== "number" || !Number.isInteger(limit) || limit < 1 || limit > MAX_BROWSE_LIMIT)
      throw new BrowseRequestError(`browse request: limit must be an integer from 1 to ${MAX_BROWSE_LIMIT}`);
    request.limit = limit;
  }
  if (value.continue !== undefined) {
    if (typeof value.continue !== "string" || value.continue.length > 4096 || value.continue === "")
      throw new BrowseRequestError("browse request: continue must be the token of the previous page");
    request.continue = value.continue;
  }
  return request;
}

/** Cuts a long value shown to people. */
export const clipValue = (value: string): string =>
  value.length > MAX_SHOWN_VALUE ? `${value.slice(0, MAX_SHOWN_VALUE)}…` : value;

/**
 * The hub's check of an agent's answer: the envelope, and each Secret item rebuilt from its name,
 * type and key names only, so not even an agent that misbehaves gets a value into a response.
 */
export function parseBrowseAnswer(value: unknown, request: BrowseRequest): BrowseAnswer {
  if (!isRecord(value)) throw new Error("browse answer: not an object");
  if (typeof value.error === "string") throw new Error(value.error);
  if (!Array.isArray(value.items)) throw new Error("browse answer: items must be an array");
  const items = value.items.filter(isRecord) as unknown as BrowseItem[];
  return {
    resource: request.resource,
    ...(request.namespace ? { namespace: request.namespace } : {}),
    items: request.resource === "secrets" ? items.map(secretKeysOnly) : items,
    ...(typeof value.continue === "string" && value.continue ? { continue: value.continue } : {}),
  };
}

function secretKeysOnly(item: BrowseItem): SecretItem {
  const { name, type, keys } = item as Partial<SecretItem>;
  return {
    name: String(name),
    ...(typeof type === "string" ? { type } : {}),
    keys: Array.isArray(keys) ? keys.filter((k): k is string => typeof k === "string") : [],
  };
}
