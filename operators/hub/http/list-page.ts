// Paged lists for the objects API, as Kubernetes pages them: `limit` asks for at most that many
// items, and the answer's `metadata.continue` (an opaque token) asks for the next page. The order
// is stable (namespace, then name) and a page starts after the last object the previous page
// looked at, so every object that exists for the whole walk is returned exactly once, whatever is
// created or deleted meanwhile (those may or may not be seen). Unlike Kubernetes, pages are not one
// snapshot: each is read when asked for. Server-side filters (`phase`, `cluster`, `team`,
// `namePrefix`) narrow a page without changing that promise; a filtered page may hold fewer items
// than `limit`, even none, while `continue` is still set (the scan per request is bounded).
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { clusterOf, type Job, jobTeam, type Team } from "../../api/index.ts";
import type { KubeObject, ListPosition, Store } from "../../lib/store/index.ts";

/** The most items one page may ask for. */
export const MAX_LIMIT = 1000;
/** `continue` without `limit`. */
export const DEFAULT_LIMIT = 500;
/** Objects one request reads at most while filling a filtered page. */
export const SCAN_BUDGET = 10_000;
const TOKEN_VERSION = 1;
const MAX_TOKEN_LENGTH = 2048;

export interface ListFilters {
  phase?: string;
  cluster?: string;
  team?: string;
  namePrefix?: string;
}

export interface PageQuery {
  limit: number;
  after?: ListPosition;
  filters: ListFilters;
  /** What a continue token is bound to: the kind and every parameter that shapes the list. */
  fingerprint: string;
}

export class ListQueryError extends Error {}

const FILTER_PARAMS = ["phase", "cluster", "team", "namePrefix"] as const;
const PAGING_PARAMS = ["limit", "continue", ...FILTER_PARAMS] as const;

/** Whether the request asks for a page (or a filter) rather than the whole list as before. */
export function wantsPage(url: URL): boolean {
  return PAGING_PARAMS.some((p) => url.searchParams.has(p));
}

/**
 * Reads `limit`, `continue` and the filters of a list request. Throws ListQueryError naming the
 * parameter that is wrong and what would be right.
 */
export function parsePageQuery(kind: string, url: URL): PageQuery {
  const params = url.searchParams;
  const limitText = params.get("limit");
  let limit = DEFAULT_LIMIT;
  if (limitText !== null) {
    limit = /^\d{1,7}$/.test(limitText) ? Number(limitText) : Number.NaN;
    if (!(limit >= 1 && limit <= MAX_LIMIT))
      throw new ListQueryError(
        `limit: ${JSON.stringify(limitText)} is not an integer from 1 to ${MAX_LIMIT}`,
      );
  }
  const filters: ListFilters = {};
  for (const name of FILTER_PARAMS) {
    const value = params.get(name);
    if (value === null) continue;
    if (value === "" || value.length > 253)
      throw new ListQueryError(`${name}: give a value of 1 to 253 characters, or leave the parameter out`);
    filters[name] = value;
  }
  if (filters.team !== undefined && kind !== "Job")
    throw new ListQueryError(`team: only Jobs are filtered by team (this is a list of ${kind})`);
  const fingerprint = createHash("sha256")
    .update(
      JSON.stringify([
        kind,
        params.get("namespace"),
        params.get("labelSelector"),
        ...FILTER_PARAMS.map((p) => filters[p] ?? null),
      ]),
    )
    .digest("base64url")
    .slice(0, 16);
  const token = params.get("continue");
  const after = token === null ? undefined : parseContinue(token, fingerprint);
  return { limit, ...(after ? { after } : {}), filters, fingerprint };
}

/**
 * Continue tokens are sealed (AES-256-GCM) with a key made when the hub process starts: a token
 * names the last object a page looked at, which may be one the asker may not see (another team's
 * Job), and a sealed token neither shows that name nor can be forged to start anywhere else. A
 * token is therefore good on the hub process that issued it: after a restart the client starts
 * again from the first page, as after an expired token in Kubernetes.
 */
const TOKEN_KEY = randomBytes(32);

/** The token that resumes after `position` under the same query. */
export function continueToken(position: ListPosition, fingerprint: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", TOKEN_KEY, iv);
  const plain = JSON.stringify({
    v: TOKEN_VERSION,
    q: fingerprint,
    ns: position.namespace,
    n: position.name,
  });
  const sealed = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
  return Buffer.concat([iv, sealed, cipher.getAuthTag()]).toString("base64url");
}

function openToken(token: string): unknown {
  const raw = Buffer.from(token, "base64url");
  if (raw.length < 12 + 16 + 2) throw new Error("too short");
  const decipher = createDecipheriv("aes-256-gcm", TOKEN_KEY, raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(raw.length - 16));
  const plain = Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]);
  return JSON.parse(plain.toString("utf8"));
}

function parseContinue(token: string, fingerprint: string): ListPosition {
  const bad = (why: string) =>
    new ListQueryError(`continue: ${why}; list again without continue to start from the first page`);
  if (token.length === 0 || token.length > MAX_TOKEN_LENGTH || !/^[A-Za-z0-9_-]+$/.test(token))
    throw bad("not a token this hub issued");
  let decoded: unknown;
  try {
    decoded = openToken(token);
  } catch {
    throw bad("not a token this hub issued (or it was issued before the hub restarted)");
  }
  const t = decoded as Record<string, unknown> | null;
  if (
    !t ||
    typeof t !== "object" ||
    t.v !== TOKEN_VERSION ||
    typeof t.q !== "string" ||
    typeof t.ns !== "string" ||
    typeof t.n !== "string"
  )
    throw bad("not a token this hub issued");
  if (t.q !== fingerprint)
    throw bad("the token belongs to another query (kind, namespace, labelSelector or filters changed)");
  return { namespace: t.ns, name: t.n };
}

/** The phase a list filters by: status.phase, and a Job without one is Pending (as the dashboard shows it). */
function phaseOf(object: KubeObject): string {
  const phase = (object.status as { phase?: unknown } | undefined)?.phase;
  return typeof phase === "string" ? phase : object.kind === "Job" ? "Pending" : "";
}

/** The clusters an object is on: a Job's Tasks' clusters, else its `agent-<cluster>` namespace. */
function clustersOf(object: KubeObject): string[] {
  if (object.kind === "Job")
    return ((object as Job).status?.tasks ?? []).flatMap((t) => (t.cluster ? [t.cluster] : []));
  const cluster = clusterOf(object.metadata.namespace);
  return cluster ? [cluster] : [];
}

/** A predicate for the filters; `teams` are the hub's Teams (a Job without spec.team counts against the default one). */
export function filterPredicate(
  filters: ListFilters,
  teams: readonly Team[],
): (object: KubeObject) => boolean {
  return (object) =>
    (filters.namePrefix === undefined || object.metadata.name.startsWith(filters.namePrefix)) &&
    (filters.phase === undefined || phaseOf(object) === filters.phase) &&
    (filters.cluster === undefined || clustersOf(object).includes(filters.cluster)) &&
    (filters.team === undefined || jobTeam(object as Job, teams) === filters.team);
}

/**
 * The greatest position before every name that starts with `prefix` among cluster-scoped objects
 * (names are DNS names: lowercase ASCII, digits, '-' and '.'), so a prefix filter reads only its range.
 */
export function positionBefore(prefix: string): ListPosition {
  const last = prefix.charCodeAt(prefix.length - 1);
  return { namespace: "", name: `${prefix.slice(0, -1)}${String.fromCharCode(last - 1)}\u{10ffff}` };
}

const laterOf = (a: ListPosition | undefined, b: ListPosition): ListPosition =>
  !a || a.namespace < b.namespace || (a.namespace === b.namespace && a.name < b.name) ? b : a;

export interface Page {
  items: KubeObject[];
  continue?: string;
  resourceVersion: string;
}

/**
 * One page: reads the store in ranges from the query's position, keeps what `matches`, and stops at
 * `limit` items, at the end of the list, past a name prefix's range, or after SCAN_BUDGET objects.
 */
export async function readPage(options: {
  store: Store;
  kind: string;
  namespaced: boolean;
  namespace?: string;
  labelSelector?: string;
  query: PageQuery;
  /** Visibility and filters together. */
  matches: (object: KubeObject) => boolean;
}): Promise<Page> {
  const { store, kind, query, matches } = options;
  const prefix = query.filters.namePrefix;
  // Cluster-scoped objects are ordered by name alone: a name prefix is one range of the list.
  const prefixRange = prefix !== undefined && !options.namespaced;
  let after = prefixRange ? laterOf(query.after, positionBefore(prefix)) : query.after;
  const filtered = Object.keys(query.filters).length > 0;
  // Filtered: read in growing ranges, as a sparse filter needs many objects and a dense one few.
  let chunk = filtered ? Math.min(MAX_LIMIT, Math.max(100, query.limit)) : query.limit + 1;
  const items: KubeObject[] = [];
  let scanned = 0;
  let resourceVersion = "";
  for (;;) {
    const list = await store.list(kind, {
      ...(options.namespace !== undefined ? { namespace: options.namespace } : {}),
      ...(options.labelSelector !== undefined ? { labelSelector: options.labelSelector } : {}),
      ...(after ? { after } : {}),
      limit: chunk,
    });
    resourceVersion ||= list.resourceVersion;
    for (const object of list.items) {
      if (prefixRange && object.metadata.name > prefix && !object.metadata.name.startsWith(prefix))
        return { items, resourceVersion };
      if (items.length === query.limit) {
        // One more candidate exists: the next page starts after the last one this page looked at.
        return { items, resourceVersion, continue: continueToken(after!, query.fingerprint) };
      }
      scanned++;
      after = { namespace: object.metadata.namespace ?? "", name: object.metadata.name };
      if (matches(object)) items.push(object);
    }
    if (list.items.length < chunk) return { items, resourceVersion };
    if (filtered) chunk = Math.min(MAX_LIMIT, chunk * 2);
    if (scanned >= SCAN_BUDGET)
      return { items, resourceVersion, continue: continueToken(after!, query.fingerprint) };
  }
}
