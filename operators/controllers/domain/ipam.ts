// Virtual IP allocation for a Domain as a pure function over what is persisted (Domain status)
// and which pods exist now. Deterministic: the same inputs give the same addresses, so a hub
// killed between computing and persisting recomputes exactly what it would have written.

export interface Claim {
  job: string;
  task: string;
  pod: string;
  cluster: string;
}

/** The persisted form (Domain status.ipAllocations / releasedAllocations entries). */
export interface Allocation {
  ip: string;
  job?: string;
  task?: string;
  pod?: string;
  cluster?: string;
}

export interface AllocateInput {
  cidr: string;
  allocations: readonly Allocation[];
  /** Addresses whose pods went, oldest release first. */
  released: readonly Allocation[];
  claims: readonly Claim[];
  /** How many released addresses to remember. Default 4096. */
  releasedLimit?: number;
}

export interface AllocateResult {
  /** One per claim that got an address, ordered by IP. */
  allocations: Allocation[];
  /** Remembered released addresses, oldest first. */
  released: Allocation[];
  /** Claims left without an address because the range is full, ordered by key. */
  unallocated: Claim[];
  /** Addresses the range can hand out (network and broadcast excluded). */
  usable: number;
}

export interface Range {
  network: number;
  prefixLen: number;
  /** First and last usable address (network + 1, broadcast - 1); last < first when none. */
  first: number;
  last: number;
}

const CIDR = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/;

export function ipToInt(ip: string): number | undefined {
  const parts = ip.split(".");
  if (parts.length !== 4) return undefined;
  let n = 0;
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part)) return undefined;
    const octet = Number(part);
    if (octet > 255) return undefined;
    n = n * 256 + octet;
  }
  return n;
}

export function intToIp(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");
}

/** Parses an IPv4 CIDR; host bits are ignored (10.0.1.7/24 is 10.0.1.0/24). */
export function parseCidr(cidr: string): Range {
  const m = CIDR.exec(cidr);
  const ip = m ? ipToInt(`${m[1]}.${m[2]}.${m[3]}.${m[4]}`) : undefined;
  const prefixLen = m ? Number(m[5]) : Number.NaN;
  if (ip === undefined || !(prefixLen >= 0 && prefixLen <= 32)) {
    throw new Error(`${JSON.stringify(cidr)} is not an IPv4 CIDR such as 10.0.1.0/24`);
  }
  const size = 2 ** (32 - prefixLen);
  const network = ip - (ip % size);
  return { network, prefixLen, first: network + 1, last: network + size - 2 };
}

export function claimKey(c: {
  job?: string | undefined;
  task?: string | undefined;
  pod?: string | undefined;
}): string {
  return `${c.job ?? ""}/${c.task ?? ""}/${c.pod ?? ""}`;
}

/**
 * Keeps every still-claimed allocation; frees the rest into `released`, remembered per
 * job/task/pod so a pod re-created under the same name gets its address back. New claims, in
 * key order, take: their remembered address if free; else the lowest address nobody
 * remembers; else, when only remembered ones are left, the one released longest ago.
 */
export function allocate(input: AllocateInput): AllocateResult {
  const range = parseCidr(input.cidr);
  const usable = Math.max(0, range.last - range.first + 1);
  const inRange = (n: number | undefined): n is number =>
    n !== undefined && n >= range.first && n <= range.last;

  const claims = new Map<string, Claim>();
  for (const c of [...input.claims].sort((a, b) => cmp(claimKey(a), claimKey(b)))) {
    if (!claims.has(claimKey(c))) claims.set(claimKey(c), c);
  }

  const used = new Map<number, Allocation>();
  const holder = new Map<string, number>();
  let released: Allocation[] = [];
  for (const a of input.allocations) {
    const n = ipToInt(a.ip);
    if (!inRange(n) || used.has(n)) continue;
    const key = claimKey(a);
    const claim = claims.get(key);
    if (claim && !holder.has(key)) {
      used.set(n, {
        ip: intToIp(n),
        job: claim.job,
        task: claim.task,
        pod: claim.pod,
        cluster: claim.cluster,
      });
      holder.set(key, n);
    } else if (!claim) {
      released.push(strip(a, n));
    }
  }
  // Older memories first, then what was freed just now; one memory per address and per key.
  const remembered = new Map<number, Allocation>();
  const rememberedKey = new Map<string, number>();
  for (const a of [...input.released, ...released]) {
    const n = ipToInt(a.ip);
    const key = claimKey(a);
    if (!inRange(n) || used.has(n) || holder.has(key)) continue;
    const earlier = rememberedKey.get(key);
    if (earlier !== undefined) remembered.delete(earlier);
    remembered.delete(n);
    remembered.set(n, strip(a, n));
    rememberedKey.set(key, n);
  }

  const unallocated: Claim[] = [];
  let cursor = range.first;
  for (const [key, claim] of claims) {
    if (holder.has(key)) continue;
    let n = rememberedKey.get(key);
    if (n === undefined || used.has(n)) {
      n = undefined;
      while (cursor <= range.last && (used.has(cursor) || remembered.has(cursor))) cursor++;
      if (cursor <= range.last) n = cursor;
      else n = remembered.keys().next().value;
    }
    if (n === undefined) {
      unallocated.push(claim);
      continue;
    }
    const forgotten = remembered.get(n);
    if (forgotten) {
      remembered.delete(n);
      rememberedKey.delete(claimKey(forgotten));
    }
    used.set(n, { ip: intToIp(n), job: claim.job, task: claim.task, pod: claim.pod, cluster: claim.cluster });
    holder.set(key, n);
  }

  released = [...remembered.values()];
  const limit = input.releasedLimit ?? 4096;
  if (released.length > limit) released = released.slice(released.length - limit);
  return {
    allocations: [...used.entries()].sort((a, b) => a[0] - b[0]).map(([, a]) => a),
    released,
    unallocated,
    usable,
  };
}

function strip(a: Allocation, n: number): Allocation {
  const out: Allocation = { ip: intToIp(n) };
  if (a.job !== undefined) out.job = a.job;
  if (a.task !== undefined) out.task = a.task;
  if (a.pod !== undefined) out.pod = a.pod;
  if (a.cluster !== undefined) out.cluster = a.cluster;
  return out;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
