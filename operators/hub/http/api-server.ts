// The hub's HTTP surface: a read-only Kubernetes-shaped API over the store, the source status,
// health, metrics and the git webhook. Everything except the health probes and the webhook (which
// carries its own HMAC signature) needs a bearer token.
import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import {
  type PodLogRoute,
  type PodProxyRoute,
  PROXY_LOGIN_PATH,
  type ProxyLogin,
  TENSORBOARD_ROUTE,
  type TensorBoardRoute,
} from "../../access/index.ts";
import { API_VERSION, kindByPlural, tensorBoardPath, tensorBoardPort } from "../../api/index.ts";
import {
  type Authenticator,
  bearerToken,
  type Principal,
  redact,
  sendJson,
  sendStatus,
} from "../../lib/http/index.ts";
import type { SealKeyring } from "../../lib/seal/index.ts";
import { isStoreError, type KubeObject, type Store } from "../../lib/store/index.ts";
import type { TunnelServer } from "../../lib/tunnel/index.ts";
import { BROWSE_ROUTE, serveBrowse } from "./browse-route.ts";
import { serveReseal, serveSealKey, serveSealKeyRotate } from "./seal-key.ts";

export interface HubHttpDependencies {
  store: Store;
  authenticate: Authenticator;
  /** The git source's status (revision, time, errors), served at /api/v1/source. */
  sourceStatus: () => unknown;
  /** Prometheus text exposition. */
  metricsText: () => Promise<string> | string;
  /** The hub's sealing keys: the public one at /api/v1/seal-key, rotation for admins. */
  sealKeys?: Pick<SealKeyring, "currentPublicKeyPem" | "keyIds" | "rotate" | "unseal">;
  /** /readyz: ready (200) or not (503), with one line saying why (see readiness in hub.ts). */
  ready: () => { ready: boolean; message: string };
  /** POST /hooks/git, when a webhook secret is configured. */
  gitWebhook?: RequestListener;
  /** HTTP to a pod's port through its agent (operators/access/proxy). */
  podProxy?: PodProxyRoute;
  /** A Task's TensorBoard behind its prefix (operators/access/tensorboard). */
  tensorBoard?: TensorBoardRoute;
  /** Cookies that let a browser open a proxy URL (operators/access/proxy/proxy-login.ts). */
  proxyLogin?: ProxyLogin;
  /** A mirrored pod's output, streamed from its cluster's agent (operators/access/logs). */
  podLog?: PodLogRoute;
  /** The newest access audit records (operators/access), served to admins at /api/v1/access/audit. */
  accessAudit?: (limit: number) => unknown[];
  /** Read-only browsing of clusters through their agents (browse-route.ts). */
  browse?: Pick<TunnelServer, "request">;
  /** Extra authenticated routes (the dashboard, SSE, login), tried before the 404. */
  extraRoutes?: (req: IncomingMessage, res: ServerResponse, url: URL) => boolean | Promise<boolean>;
}

const API_PREFIX = `/api/v1/${API_VERSION}/`;
/** The pod and task proxies; with the TensorBoard route, what a proxy login cookie may open. */
const PROXY_PATH = /^\/api\/v1\/namespaces\/([^/]+)\/(pods|tasks)\/([^/]+)\/proxy\/(\d{1,5})(\/.*)?$/;

export function createHubHttpHandler(deps: HubHttpDependencies): RequestListener {
  return (req, res) => {
    // Every answer is what its content-type says: a browser must never guess HTML into it.
    res.setHeader("X-Content-Type-Options", "nosniff");
    handle(deps, req, res).catch((error: unknown) => {
      if (!res.headersSent) sendStatus(res, 500, "InternalError", "internal error");
      else res.destroy();
      // A bug here must not leak internals to the client; the stack goes nowhere near the response.
      process.emitWarning(`hub http: ${error instanceof Error ? error.message : String(error)}`);
    });
  };
}

/** True when every %XX of the path decodes (to UTF-8): then each of its segments does too. */
function decodable(path: string): boolean {
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}

/** A path for a message: cut short, and only printable ASCII (it is echoed to the client). */
function shownPath(path: string): string {
  const shown = path.replace(/[^\x21-\x7e]/g, "?");
  return shown.length > 200 ? `${shown.slice(0, 200)}…` : shown;
}

async function handle(deps: HubHttpDependencies, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "http://hub.invalid");
  const path = url.pathname;
  if (!decodable(path))
    return sendStatus(
      res,
      400,
      "BadRequest",
      `malformed percent-encoding in ${shownPath(path)}: each % must start a UTF-8 byte as %XX`,
    );
  if (path === "/healthz") return sendText(res, 200, "ok\n");
  if (path === "/readyz") {
    const { ready, message } = deps.ready();
    return sendText(res, ready ? 200 : 503, `${message}\n`);
  }
  if (path === "/hooks/git") {
    if (!deps.gitWebhook)
      return sendStatus(res, 404, "NotFound", "no webhook secret is configured on this hub");
    return deps.gitWebhook(req, res);
  }
  if (deps.extraRoutes && (await deps.extraRoutes(req, res, url))) return;
  const tensorBoard = TENSORBOARD_ROUTE.exec(path);
  // Its pages load what they need relative to the page: the route's root is its slash form.
  if (tensorBoard && !tensorBoard[2]) {
    res.writeHead(301, { location: `${path}/${url.search}` });
    res.end();
    return;
  }

  const principal = await authenticate(deps, req, path);
  if (!principal) {
    res.setHeader("WWW-Authenticate", 'Bearer realm="rlark"');
    return sendStatus(
      res,
      401,
      "Unauthorized",
      "a bearer token is required (see <data-dir>/admin-token); a browser opens proxy URLs from the dashboard's links",
    );
  }
  if (path === PROXY_LOGIN_PATH) {
    const token = bearerToken(req);
    if (!deps.proxyLogin || !token) return sendStatus(res, 404, "NotFound", "this hub has no proxy login");
    return deps.proxyLogin.handle(req, res, token, principal);
  }
  // Before the read-only rule: a proxied request may be a POST to the pod.
  if (tensorBoard) {
    if (!deps.tensorBoard) return sendStatus(res, 404, "NotFound", "this hub proxies to no TensorBoard");
    const [, task, rest] = tensorBoard as unknown as [string, string, string];
    return deps.tensorBoard(
      { principal, task: decodeURIComponent(task), path: `${rest}${url.search}` },
      req,
      res,
    );
  }
  const proxy = PROXY_PATH.exec(path);
  if (proxy) {
    const [, namespace, plural, name, port] = proxy as unknown as [string, string, string, string, string];
    if (!deps.podProxy) return sendStatus(res, 404, "NotFound", "this hub proxies to no pods");
    const number = Number(port);
    if (number < 1 || number > 65535) return sendStatus(res, 400, "BadRequest", "port must be 1 to 65535");
    const prefix = `/api/v1/namespaces/${namespace}/${plural}/${name}/proxy/${port}`;
    const rest = `${path.slice(prefix.length) || "/"}${url.search}`;
    return deps.podProxy(
      {
        principal,
        namespace: decodeURIComponent(namespace),
        kind: plural === "tasks" ? "task" : "pod",
        name: decodeURIComponent(name),
        port: number,
        path: rest.startsWith("/") ? rest : `/${rest}`,
        prefix,
      },
      req,
      res,
    );
  }
  if (path === "/api/v1/seal-key/rotate" && deps.sealKeys)
    return serveSealKeyRotate(deps.sealKeys, principal, req, res);
  if (path === "/api/v1/seal-key/reseal" && deps.sealKeys)
    return serveReseal(deps.sealKeys, principal, req, res);
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.setHeader("Allow", "GET, HEAD");
    return sendStatus(res, 405, "MethodNotAllowed", "the API is read-only: change objects through git");
  }
  if (path === "/metrics") {
    res.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" });
    res.end(await deps.metricsText());
    return;
  }
  if (path === "/api/v1/source") return sendJson(res, 200, deps.sourceStatus());
  if (path === "/api/v1/seal-key" && deps.sealKeys) return serveSealKey(deps.sealKeys, res);
  if (path === "/api/v1/access/audit") return serveAccessAudit(deps, principal, url, res);
  const browse = BROWSE_ROUTE.exec(path);
  if (browse) {
    if (!deps.browse) return sendStatus(res, 404, "NotFound", "this hub browses no clusters");
    const [, cluster, resource] = browse as unknown as [string, string, string];
    const tunnel = deps.browse;
    return serveBrowse(
      { store: deps.store, tunnel },
      decodeURIComponent(cluster),
      decodeURIComponent(resource),
      url.searchParams,
      res,
    );
  }
  if (path.startsWith(API_PREFIX)) {
    const rest = path.slice(API_PREFIX.length);
    const log = /^pods\/([^/]+)\/log$/.exec(rest);
    if (log) return servePodLog(deps, principal, decodeURIComponent(log[1] as string), url, res);
    return serveObjects(deps.store, rest, url, res);
  }
  return sendStatus(res, 404, "NotFound", `no route for ${path}`);
}

async function authenticate(
  deps: HubHttpDependencies,
  req: IncomingMessage,
  path: string,
): Promise<Principal | undefined> {
  const token =
    bearerToken(req) ??
    (PROXY_PATH.test(path) || TENSORBOARD_ROUTE.test(path)
      ? deps.proxyLogin?.tokenFor(req, path)
      : undefined);
  return token ? deps.authenticate(token) : undefined;
}

async function serveObjects(store: Store, rest: string, url: URL, res: ServerResponse): Promise<void> {
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
      if (!object) return sendStatus(res, 404, "NotFound", `${info.plural} "${name}" not found`);
      return sendJson(res, 200, withTensorBoard(redact(object)));
    }
    const labelSelector = url.searchParams.get("labelSelector") ?? undefined;
    const list = await store.list(info.kind, {
      namespace: info.namespaced ? namespace : undefined,
      labelSelector,
    });
    return sendJson(res, 200, {
      apiVersion: API_VERSION,
      kind: `${info.kind}List`,
      metadata: { resourceVersion: list.resourceVersion },
      items: list.items.map((o: KubeObject) => withTensorBoard(redact(o))),
    });
  } catch (error) {
    if (isStoreError(error)) return sendStatus(res, error.status, error.code, error.message);
    throw error;
  }
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

async function servePodLog(
  deps: HubHttpDependencies,
  principal: Principal,
  name: string,
  url: URL,
  res: ServerResponse,
): Promise<void> {
  const namespace = url.searchParams.get("namespace");
  if (!namespace)
    return sendStatus(res, 400, "BadRequest", "Pod is namespaced: add ?namespace=agent-<cluster>");
  if (!deps.podLog) return sendStatus(res, 404, "NotFound", "this hub serves no pod logs");
  return deps.podLog({ principal, namespace, name, params: url.searchParams }, res);
}

function serveAccessAudit(deps: HubHttpDependencies, principal: Principal, url: URL, res: ServerResponse) {
  // Who reached which pod when is itself sensitive: admins only.
  if (principal.role !== "admin") return sendStatus(res, 403, "Forbidden", "the access audit is for admins");
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
