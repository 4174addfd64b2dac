// The nodeserver's "peers state": which Domains have pods in this cluster, where those pods
// really are, the Domain's certificate, and where the hub's domain relay listens. The agent makes
// it from its DomainPeers and hands it over in one shape whatever its runtime (process runtime:
// the file `peers.json` in the nodeserver's socket dir; kubernetes runtime: the key `peers.json`
// of the Secret rlark-domain-peers); the nodeserver reads either (docs/networking.md). Pure: the
// agent and the nodeserver both import it.

import type { DomainPeerPod, DomainPeerSpec } from "./generated/domain-peer.ts";

/**
 * One Domain's view in this cluster: DomainPeer.spec plus the Domain's name. Without the Domain's
 * Task addresses (`spec.tasks`): nodeservers route by pod, and the Tasks' addresses are the
 * runtime's business (a Ray worker's head), handed over with {@link domainTasksFrom}.
 */
export interface DomainPeersEntry extends Omit<DomainPeerSpec, "tasks"> {
  /** The Domain's name (DomainPeer.metadata.name). */
  domain: string;
  /** The Domain's CIDR as `a.b.c.d/len`, for sidecars' /get_ip. */
  cidr?: string;
}

export interface PeersState {
  /** `agent-<cluster>` of this nodeserver's cluster: pods with another globalNamespace are remote. */
  globalNamespace: string;
  /** The hub's domain relay (`host:port`, mutual TLS) and the hub CA that vouches for it (PEM). */
  hub?: { address: string; caPem: string };
  /**
   * The bearer token a nodeserver's TCP GET /stats asks for (kubernetes runtime: the agent polls
   * its nodeservers with it; it reaches them only through the peers Secret).
   */
  statsToken?: string;
  /**
   * The cluster's AgentGroup (kubernetes runtime: the nodeservers are its members). `key` is the
   * group key (hex), derived by the agent from its credentials: whoever reads the Secret may join,
   * and nothing else learns it. `seeds` are members to join through (`ipv4:port`, the nodes'
   * InternalIPs at the DaemonSet's group port).
   */
  group?: PeersGroup;
  domains: DomainPeersEntry[];
}

export interface PeersGroup {
  key: string;
  seeds: string[];
}

/** Seeds handed over at most: a member needs one live seed, the rest are spares. */
export const MAX_GROUP_SEEDS = 64;
const GROUP_KEY = /^[0-9a-f]{64}$/;
const GROUP_SEED = /^(\d{1,3}\.){3}\d{1,3}:\d{1,5}$/;

function group(source: string, value: unknown): PeersGroup {
  if (typeof value !== "object" || value === null) fail(source, "group", "must be an object");
  const v = value as Record<string, unknown>;
  // never echoed: the field is named, the key is not
  if (typeof v.key !== "string" || !GROUP_KEY.test(v.key))
    fail(source, "group.key", "must be 64 lowercase hex digits");
  if (!Array.isArray(v.seeds) || v.seeds.length > MAX_GROUP_SEEDS)
    fail(source, "group.seeds", `must be an array of at most ${MAX_GROUP_SEEDS} addresses`);
  const seeds = v.seeds.map((seed: unknown, i: number) => {
    const ok =
      typeof seed === "string" &&
      GROUP_SEED.test(seed) &&
      isIpv4(seed.slice(0, seed.lastIndexOf(":"))) &&
      Number(seed.slice(seed.lastIndexOf(":") + 1)) <= 65535;
    if (!ok) fail(source, `group.seeds[${i}]`, `${JSON.stringify(seed)} is not ipv4:port`);
    return seed as string;
  });
  return { key: v.key, seeds };
}

const MAX_BYTES = 16 * 1024 * 1024;

function fail(source: string, field: string, message: string): never {
  throw new Error(`${source}: ${field}: ${message}`);
}

function str(source: string, field: string, value: unknown, optional = false): string | undefined {
  if (value === undefined && optional) return undefined;
  if (typeof value !== "string" || value === "") fail(source, field, "must be a non-empty string");
  return value;
}

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
export function isIpv4(value: string): boolean {
  const m = IPV4.exec(value);
  return m?.slice(1).every((o) => Number(o) <= 255) ?? false;
}

function pod(source: string, field: string, value: unknown): DomainPeerPod {
  if (typeof value !== "object" || value === null) fail(source, field, "must be an object");
  const v = value as Record<string, unknown>;
  const ip = str(source, `${field}.ip`, v.ip) as string;
  if (!isIpv4(ip)) fail(source, `${field}.ip`, `${JSON.stringify(ip)} is not an IPv4 address`);
  const out: DomainPeerPod = { name: str(source, `${field}.name`, v.name) as string, ip };
  for (const key of ["namespace", "uid", "localIP", "node", "globalNamespace"] as const) {
    const s = str(source, `${field}.${key}`, v[key], true);
    if (s !== undefined) out[key] = s;
  }
  if (out.localIP !== undefined && !isIpv4(out.localIP))
    fail(source, `${field}.localIP`, `${JSON.stringify(out.localIP)} is not an IPv4 address`);
  return out;
}

/** Validates a peers state read from `source` (a file name, for errors). */
export function parsePeersState(text: string, source: string): PeersState {
  if (text.length > MAX_BYTES) fail(source, "(file)", `larger than ${MAX_BYTES} bytes`);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    fail(source, "(file)", `not JSON: ${(error as Error).message}`);
  }
  if (typeof raw !== "object" || raw === null) fail(source, "(file)", "must be a JSON object");
  const r = raw as Record<string, unknown>;
  const state: PeersState = {
    globalNamespace: str(source, "globalNamespace", r.globalNamespace) as string,
    domains: [],
  };
  if (r.hub !== undefined) {
    const hub = r.hub as Record<string, unknown>;
    state.hub = {
      address: str(source, "hub.address", hub?.address) as string,
      caPem: str(source, "hub.caPem", hub?.caPem) as string,
    };
  }
  const statsToken = str(source, "statsToken", r.statsToken, true);
  if (statsToken !== undefined) state.statsToken = statsToken;
  if (r.group !== undefined) state.group = group(source, r.group);
  if (!Array.isArray(r.domains)) fail(source, "domains", "must be an array");
  r.domains.forEach((d: unknown, i: number) => {
    const field = `domains[${i}]`;
    if (typeof d !== "object" || d === null) fail(source, field, "must be an object");
    const v = d as Record<string, unknown>;
    const prefixLen = v.prefixLen;
    if (typeof prefixLen !== "number" || !Number.isInteger(prefixLen) || prefixLen < 8 || prefixLen > 30)
      fail(source, `${field}.prefixLen`, "must be an integer from 8 to 30");
    const pods = v.pods === undefined ? [] : v.pods;
    if (!Array.isArray(pods)) fail(source, `${field}.pods`, "must be an array");
    const entry: DomainPeersEntry = {
      domain: str(source, `${field}.domain`, v.domain) as string,
      cert: str(source, `${field}.cert`, v.cert) as string,
      key: str(source, `${field}.key`, v.key) as string,
      prefixLen,
      pods: pods.map((p, j) => pod(source, `${field}.pods[${j}]`, p)),
    };
    const cidr = str(source, `${field}.cidr`, v.cidr, true);
    if (cidr !== undefined) entry.cidr = cidr;
    state.domains.push(entry);
  });
  return state;
}

/**
 * The peers state of one cluster (`globalNamespace`, its agent's namespace on the hub) from the
 * DomainPeers its agent holds, Domains in name order: an unchanged set gives the same JSON.
 */
export function peersStateFrom(
  peers: readonly { domain: string; spec: DomainPeerSpec }[],
  globalNamespace: string,
  hub?: PeersState["hub"],
  statsToken?: string,
  group?: PeersGroup,
): PeersState {
  return {
    globalNamespace,
    ...(hub ? { hub } : {}),
    ...(statsToken ? { statsToken } : {}),
    ...(group ? { group } : {}),
    domains: peers
      .map(({ domain, spec: { tasks: _tasks, ...spec } }) => ({ domain, ...spec }))
      .sort((a, b) => (a.domain < b.domain ? -1 : a.domain > b.domain ? 1 : 0)),
  };
}

/** One Domain's Tasks and their pods' virtual IPs (DomainPeer spec.tasks), in every cluster. */
export interface DomainTasks {
  domain: string;
  tasks: NonNullable<DomainPeerSpec["tasks"]>;
}

/** The Domains' Task addresses, in Domain order, from the agent's DomainPeers. */
export function domainTasksFrom(peers: readonly { domain: string; spec: DomainPeerSpec }[]): DomainTasks[] {
  return peers
    .map((p) => ({ domain: p.domain, tasks: p.spec.tasks ?? [] }))
    .sort((a, b) => (a.domain < b.domain ? -1 : a.domain > b.domain ? 1 : 0));
}
