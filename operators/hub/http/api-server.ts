// The hub's own HTTP routes: a read-only Kubernetes-shaped API over the store, the source status,
// health, metrics, sealing keys, cluster browsing and StorageClasses; and the handler that serves the whole table
// (these, the dashboard's, access's and the webhook's: http-wiring.ts puts it together).
// Everything except the health probes needs a bearer token.
import type { ServerResponse } from "node:http";
import {
  type AccessPolicy,
  API_VERSION,
  type Job,
  kindByPlural,
  type ObjectFilter,
  parseSshPublicKey,
  type Team,
  teamFilter,
  tensorBoardPath,
  tensorBoardPort,
  type User,
  viewerOf,
} from "../../api/index.ts";
import {
  type Authenticator,
  createRouter,
  type Method,
  type Principal,
  type Route,
  redact,
  route,
  sendJson,
  sendStatus,
} from "../../lib/http/index.ts";
import type { SealKeyring } from "../../lib/seal/index.ts";
import { isStoreError, type KubeObject, type Store } from "../../lib/store/index.ts";
import type { TunnelServer } from "../../lib/tunnel/index.ts";
import { serveBrowse } from "./browse-route.ts";
import { type ClusterTester, clusterTestRoute } from "./cluster-test-route.ts";
import {
  filterPredicate,
  ListQueryError,
  type PageQuery,
  parsePageQuery,
  readPage,
  wantsPage,
} from "./list-page.ts";
import { pingMeshRoutes } from "./pingmesh-route.ts";
import { serveReseal, serveSealKey, serveSealKeyRotate } from "./seal-key.ts";
import { storageClassRoute } from "./storage-classes.ts";

export interface HubApiDependencies {
  store: Store;
  /** The git source's status (revision, time, errors), served at /api/v1/source. */
  sourceStatus: () => unknown;
  /** Prometheus text exposition. */
  metricsText: () => Promise<string> | string;
  /** The hub's sealing keys: the public one at /api/v1/seal-key, rotation for admins. */
  sealKeys?: Pick<SealKeyring, "currentPublicKeyPem" | "keyIds" | "rotate" | "unseal">;
  /** /readyz: ready (200) or not (503), with one line saying why (see readiness in hub.ts). */
  ready: () => { ready: boolean; message: string };
  /** The newest access audit records (operators/access), served to admins at /api/v1/access/audit. */
  accessAudit?: (limit: number) => unknown[];
  /** Read-only browsing of clusters through their agents (browse-route.ts). */
  browse?: Pick<TunnelServer, "request">;
  /** The agentless clusters' connectivity test on demand, when this hub drives them (cluster-test-route.ts). */
  clusterTester?: () => ClusterTester | undefined;
  /** Records a refused read of another team's object in the access audit (docs/teams.md#visibility). */
  auditRead?: (record: RefusedRead) => void;
}

export interface RefusedRead {
  actor: string;
  /** `kind/name` or `kind/namespace/name`. */
  target: string;
  error: string;
}

const READ_ONLY = "the API is read-only: change objects through git";
const READ: readonly Method[] = ["GET", "HEAD"];

/** The hub's route table in front of `routes`: one place that authenticates and checks roles. */
export function createHubHttpHandler(options: { authenticate: Authenticator; routes: readonly Route[] }) {
  return createRouter({
    ...options,
    unauthenticated:
      "a bearer token is required (see <data-dir>/admin-token); a browser opens proxy URLs from the dashboard's links",
  });
}

/**
 * The hub's own routes: health, metrics, the source, sealing keys, the access audit, cluster
 * browsing and the objects. Last in the table: the objects route and the closing 404 take every
 * path the routes before them leave.
 */
export function hubApiRoutes(deps: HubApiDependencies): Route[] {
  const read = { method: READ, methodRefused: READ_ONLY } as const;
  return [
    route({
      method: "*",
      path: "/healthz",
      role: "anonymous",
      handle: ({ res }) => sendText(res, 200, "ok\n"),
    }),
    route({
      method: "*",
      path: "/readyz",
      role: "anonymous",
      handle({ res }) {
        const { ready, message } = deps.ready();
        return sendText(res, ready ? 200 : 503, `${message}\n`);
      },
    }),
    ...sealKeyRoutes(deps.sealKeys),
    route({
      ...read,
      path: "/metrics",
      role: "viewer",
      async handle({ res }) {
        res.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" });
        res.end(await deps.metricsText());
      },
    }),
    route({
      ...read,
      path: "/api/v1/source",
      role: "viewer",
      handle: ({ res }) => sendJson(res, 200, deps.sourceStatus()),
    }),
    // Who reached which pod when is itself sensitive: admins only.
    route({
      ...read,
      path: "/api/v1/access/audit",
      role: "admin",
      handle: ({ res, url }) => serveAccessAudit(deps, url, res),
    }),
    route({
      ...read,
      path: "/api/v1/clusters/:cluster/browse/:resource",
      role: "viewer",
      async handle({ res, url, principal }, { cluster, resource }) {
        if (!deps.browse) return sendStatus(res, 404, "NotFound", "this hub browses no clusters");
        // A cluster's inventory shows every team's pods: with Teams, admins alone browse it.
        if (principal.role !== "admin" && (await deps.store.list("Team")).items.length > 0)
          return sendStatus(
            res,
            403,
            "Forbidden",
            "browsing a cluster shows every team's work: while the hub has Teams, only admins browse (docs/teams.md#visibility)",
          );
        return serveBrowse(
          { store: deps.store, tunnel: deps.browse },
          decodeURIComponent(cluster),
          decodeURIComponent(resource),
          url.searchParams,
          res,
        );
      },
    }),
    clusterTestRoute(deps.clusterTester ?? (() => undefined)),
    storageClassRoute(deps.store),
    ...pingMeshRoutes(deps.store),
    route({
      ...read,
      path: `/api/v1/${API_VERSION}*rest`,
      role: "viewer",
      handle: ({ res, url, principal }, { rest }) => serveObjects(deps, principal, rest.slice(1), url, res),
    }),
    route({
      ...read,
      path: "*rest",
      role: "viewer",
      handle: ({ res, url }) => sendStatus(res, 404, "NotFound", `no route for ${url.pathname}`),
    }),
  ];
}

function sealKeyRoutes(keys: HubApiDependencies["sealKeys"]): Route[] {
  if (!keys) return [];
  return [
    route({
      method: "POST",
      path: "/api/v1/seal-key/rotate",
      role: "admin",
      methodRefused: "rotate the sealing key with POST",
      handle: ({ req, res }) => serveSealKeyRotate(keys, req, res),
    }),
    route({
      method: "POST",
      path: "/api/v1/seal-key/reseal",
      role: "admin",
      methodRefused: "re-seal with POST",
      handle: ({ req, res }) => serveReseal(keys, req, res),
    }),
    route({
      method: READ,
      methodRefused: READ_ONLY,
      path: "/api/v1/seal-key",
      role: "viewer",
      handle: ({ res }) => serveSealKey(keys, res),
    }),
  ];
}

/** Kinds whose objects belong to a team through a Job (team-scope.ts): filtering them needs the Jobs. */
const SCOPED_BY_JOB = new Set(["Task", "Pod", "Domain", "DomainPeer"]);

/**
 * What `principal` may see of `kind` (docs/teams.md#visibility), or undefined for everything (an
 * admin, a hub without Teams, a kind no team owns).
 */
async function scopeOf(store: Store, principal: Principal, kind: string): Promise<ObjectFilter | undefined> {
  if (principal.role === "admin" || (kind !== "Job" && !SCOPED_BY_JOB.has(kind))) return undefined;
  const teams = (await store.list<Team>("Team")).items;
  if (teams.length === 0) return undefined;
  const user = await store.get<User>("User", undefined, principal.subject);
  const policies = (await store.list<AccessPolicy>("AccessPolicy")).items;
  const jobs = SCOPED_BY_JOB.has(kind)
    ? new Map((await store.list<Job>("Job")).items.map((j) => [j.metadata.name, j]))
    : new Map<string, Job>();
  return teamFilter(
    { teams, policies, job: (name) => jobs.get(name), jobs: () => jobs.values() },
    viewerOf(principal.subject, principal.role, user),
  );
}

async function serveObjects(
  deps: HubApiDependencies,
  principal: Principal,
  rest: string,
  url: URL,
  res: ServerResponse,
): Promise<void> {
  const { store } = deps;
  const [plural, name, ...extra] = rest.split("/").map(decodeURIComponent);
  const info = plural ? kindByPlural(plural) : undefined;
  if (!info || extra.length > 0)
    return sendStatus(res, 404, "NotFound", `no resource type "${plural}" in ${API_VERSION}`);
  const namespace = url.searchParams.get("namespace") ?? undefined;
  try {
    if (name) {
      if (info.namespaced && !namespace) {
        return sendStatus(
          res,
          400,
          "BadRequest",
          `${info.kind} is namespaced: add ?namespace=agent-<cluster>`,
        );
      }
      const object = await store.get(info.kind, info.namespaced ? namespace : undefined, name);
      const notFound = () => sendStatus(res, 404, "NotFound", `${info.plural} "${name}" not found`);
      if (!object) return notFound();
      const scope = await scopeOf(store, principal, info.kind);
      if (scope && !scope(object)) {
        // Another team's: answered as if it did not exist, so its existence does not leak.
        deps.auditRead?.({
          actor: principal.subject,
          target: [info.kind, ...(info.namespaced && namespace ? [namespace] : []), name].join("/"),
          error: `${principal.subject} is not in the team of ${info.kind} ${name}, and no AccessPolicy lists that team`,
        });
        return notFound();
      }
      return sendJson(res, 200, shown(redact(object)));
    }
    const labelSelector = url.searchParams.get("labelSelector") ?? undefined;
    if (wantsPage(url)) return await servePage(deps, principal, info, url, res);
    const list = await store.list(info.kind, {
      namespace: info.namespaced ? namespace : undefined,
      labelSelector,
    });
    const scope = await scopeOf(store, principal, info.kind);
    const items = scope ? list.items.filter(scope) : list.items;
    return sendJson(res, 200, {
      apiVersion: API_VERSION,
      kind: `${info.kind}List`,
      metadata: { resourceVersion: list.resourceVersion },
      items: items.map((o: KubeObject) => shown(redact(o))),
    });
  } catch (error) {
    if (isStoreError(error)) return sendStatus(res, error.status, error.code, error.message);
    throw error;
  }
}

/** A page of a list (list-page.ts): `limit`, `continue` and the server-side filters. */
async function servePage(
  deps: HubApiDependencies,
  principal: Principal,
  info: { kind: string; namespaced: boolean },
  url: URL,
  res: ServerResponse,
): Promise<void> {
  let query: PageQuery;
  try {
    query = parsePageQuery(info.kind, url);
  } catch (error) {
    if (error instanceof ListQueryError) return sendStatus(res, 400, "BadRequest", error.message);
    throw error;
  }
  const namespace = url.searchParams.get("namespace") ?? undefined;
  const labelSelector = url.searchParams.get("labelSelector") ?? undefined;
  const scope = await scopeOf(deps.store, principal, info.kind);
  const teams = query.filters.team === undefined ? [] : (await deps.store.list<Team>("Team")).items;
  const filter = filterPredicate(query.filters, teams);
  const page = await readPage({
    store: deps.store,
    kind: info.kind,
    namespaced: info.namespaced,
    ...(info.namespaced && namespace !== undefined ? { namespace } : {}),
    ...(labelSelector !== undefined ? { labelSelector } : {}),
    query,
    matches: scope ? (o) => scope(o) && filter(o) : filter,
  });
  return sendJson(res, 200, {
    apiVersion: API_VERSION,
    kind: `${info.kind}List`,
    metadata: {
      resourceVersion: page.resourceVersion,
      ...(page.continue ? { continue: page.continue } : {}),
    },
    items: page.items.map((o: KubeObject) => shown(redact(o))),
  });
}

/** An object as the API shows it: with what the hub works out from its spec for people. */
function shown(object: KubeObject): KubeObject {
  return withKeyFingerprints(withTensorBoard(object));
}

/**
 * A User answers with each SSH key's fingerprint (seed 000 §20), the form `ssh-keygen -l` prints,
 * so a person can tell which of their keys is listed without comparing base64.
 */
function withKeyFingerprints(object: KubeObject): KubeObject {
  if (object.kind !== "User") return object;
  const lines = (object as User).spec.sshPublicKeys ?? [];
  const sshPublicKeys = lines.flatMap((line) => {
    const key = parseSshPublicKey(line);
    return "error" in key ? [] : [{ fingerprint: key.fingerprint, type: key.type, comment: key.comment }];
  });
  return { ...object, status: { ...((object.status ?? {}) as Record<string, unknown>), sshPublicKeys } };
}

/** A Task that declares a TensorBoard answers with where the hub serves it (seed 000 §19). */
function withTensorBoard(object: KubeObject): KubeObject {
  if (
    object.kind !== "Task" ||
    tensorBoardPort(object as { spec?: { annotations?: Record<string, string> } }) === undefined
  )
    return object;
  const status = (object.status ?? {}) as Record<string, unknown>;
  return { ...object, status: { ...status, tensorBoardProxy: tensorBoardPath(object.metadata.name) } };
}

function serveAccessAudit(deps: HubApiDependencies, url: URL, res: ServerResponse) {
  if (!deps.accessAudit) return sendStatus(res, 404, "NotFound", "this hub keeps no access audit");
  const limit = Number(url.searchParams.get("limit") ?? 200);
  if (!Number.isInteger(limit) || limit < 1 || limit > 5000)
    return sendStatus(res, 400, "BadRequest", "limit must be an integer from 1 to 5000");
  return sendJson(res, 200, { items: deps.accessAudit(limit) });
}

function sendText(res: ServerResponse, code: number, body: string) {
  res.writeHead(code, { "content-type": "text/plain; charset=utf-8" });
  res.end(body);
}
