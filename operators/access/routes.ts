// The hub's HTTP routes into running work: pod and task proxies, a Task's TensorBoard, pod logs,
// and the proxy login that lets a browser open a proxy URL. A proxy reaches a program in the pod
// that may change things on any request, so the proxies (TensorBoard's too) and their login are
// for the user role and above; logs only read, so a viewer may ask for them. Past the role, the
// AccessCheck each route is built with decides per target (AccessPolicies), and audits.
import { API_VERSION } from "../api/index.ts";
import { bearerToken, type Route, route, sendStatus, shownPath } from "../lib/http/index.ts";
import type { PodLogRoute } from "./logs/log-route.ts";
import type { PodProxyRoute } from "./proxy/pod-proxy.ts";
import { PROXY_LOGIN_PATH, type ProxyLogin } from "./proxy/proxy-login.ts";
import type { TensorBoardRoute } from "./tensorboard/tensorboard-route.ts";

export interface AccessRoutesOptions {
  podProxy: PodProxyRoute;
  tensorBoard: TensorBoardRoute;
  proxyLogin: ProxyLogin;
  podLog: PodLogRoute;
}

export function accessRoutes(options: AccessRoutesOptions): Route[] {
  const { podProxy, proxyLogin } = options;
  // A browser's navigations and a proxied page's own requests carry the login cookie, not a token.
  const cookie = (req: Parameters<ProxyLogin["tokenFor"]>[0], url: URL) =>
    proxyLogin.tokenFor(req, url.pathname);
  const proxyTo = (kind: "pod" | "task", plural: "pods" | "tasks") =>
    route({
      method: "*", // a proxied request may be a POST to the pod
      path: `/api/v1/namespaces/:namespace/${plural}/:name/proxy/:port*rest`,
      role: "user",
      token: cookie,
      handle({ req, res, url, principal }, { namespace, name, port, rest }) {
        if (!/^\d{1,5}$/.test(port))
          return sendStatus(res, 404, "NotFound", `no route for ${shownPath(url.pathname)}`);
        const number = Number(port);
        if (number < 1 || number > 65535)
          return sendStatus(res, 400, "BadRequest", "port must be 1 to 65535");
        const prefix = `/api/v1/namespaces/${namespace}/${plural}/${name}/proxy/${port}`;
        return podProxy(
          {
            principal,
            namespace: decodeURIComponent(namespace),
            kind,
            name: decodeURIComponent(name),
            port: number,
            path: `${rest || "/"}${url.search}`,
            prefix,
          },
          req,
          res,
        );
      },
    });
  return [
    route({
      method: "POST",
      path: PROXY_LOGIN_PATH,
      role: "user",
      methodRefused: 'POST a JSON body {"path": "<proxy URL path>"}',
      handle({ req, res, principal }) {
        // Minted from the caller's bearer token only: a cookie never mints another.
        const token = bearerToken(req);
        if (!token) return sendStatus(res, 404, "NotFound", "this hub has no proxy login");
        return proxyLogin.handle(req, res, token, principal);
      },
    }),
    route({
      method: "*",
      path: `/api/v1/${API_VERSION}/tasks/:task/tensorboard`,
      role: "anonymous",
      // Its pages load what they need relative to the page: the route's root is its slash form
      // (which the login cookie's path covers, so the redirect itself needs none).
      handle({ res, url }) {
        res.writeHead(301, { location: `${url.pathname}/${url.search}` });
        res.end();
      },
    }),
    route({
      method: "*",
      path: `/api/v1/${API_VERSION}/tasks/:task/tensorboard*rest`,
      role: "user",
      token: cookie,
      handle({ req, res, url, principal }, { task, rest }) {
        return options.tensorBoard(
          { principal, task: decodeURIComponent(task), path: `${rest}${url.search}` },
          req,
          res,
        );
      },
    }),
    proxyTo("pod", "pods"),
    proxyTo("task", "tasks"),
    route({
      method: ["GET", "HEAD"],
      path: `/api/v1/${API_VERSION}/pods/:name/log`,
      role: "viewer",
      methodRefused: "the API is read-only: change objects through git",
      handle({ res, url, principal }, { name }) {
        const namespace = url.searchParams.get("namespace");
        if (!namespace)
          return sendStatus(res, 400, "BadRequest", "Pod is namespaced: add ?namespace=agent-<cluster>");
        return options.podLog(
          { principal, namespace, name: decodeURIComponent(name), params: url.searchParams },
          res,
        );
      },
    }),
  ];
}
