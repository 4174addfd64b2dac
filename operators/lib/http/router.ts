// The hub's HTTP routes as one table: each route names its methods, its path and the least role
// that may call it, and the router is the one place that authenticates a request and checks that
// role before any handler runs. A route's path is a template: `:name` is one segment, a trailing
// `*name` the rest of the path from its `/` (or nothing); the handler gets them by name, as typed
// as the template (still percent-encoded: each handler decodes what it uses). The first route
// whose path matches answers; the table's order is the precedence.
import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import { type Authenticator, bearerToken, type Principal } from "./auth.ts";
import { sendStatus } from "./respond.ts";

/** Who may call a route: anyone, or an authenticated principal of at least this role. */
export type Role = "anonymous" | Principal["role"];

const ROLES: readonly Role[] = ["anonymous", "viewer", "user", "admin"];

export type Method = "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE";

/** The names a path template binds: `:name` segments and a trailing `*name`. */
type ParamNames<T extends string> = T extends `${infer Head}*${infer Rest}`
  ? SegmentNames<Head> | Rest
  : SegmentNames<T>;
type SegmentNames<T extends string> = T extends `${string}:${infer Name}/${infer Tail}`
  ? Name | SegmentNames<`/${Tail}`>
  : T extends `${string}:${infer Name}`
    ? Name
    : never;

export interface RouteContext<R extends Role = Role> {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  /** Who called; present on every route but anonymous ones. */
  principal: R extends "anonymous" ? undefined : Principal;
}

export interface RouteSpec<T extends string, R extends Role> {
  /** The methods served; "*" leaves every method to the handler. */
  method: Method | readonly Method[] | "*";
  path: T;
  role: R;
  /** The 405's message for another method (default: which methods the path takes). */
  methodRefused?: string;
  /** A token the request may carry besides `Authorization: Bearer` (a cookie, a query parameter). */
  token?: (req: IncomingMessage, url: URL) => string | undefined;
  handle(context: RouteContext<R>, params: Readonly<Record<ParamNames<T>, string>>): void | Promise<void>;
}

/** A route as the table holds it: its template's types spent on its handler. */
export interface Route {
  readonly method: Method | readonly Method[] | "*";
  readonly path: string;
  readonly role: Role;
  /** The template's names, in order. */
  readonly params: readonly string[];
  /** The params when `path` is this route's, else undefined. */
  match(path: string): Readonly<Record<string, string>> | undefined;
  answer(context: RouteContext, match: Readonly<Record<string, string>>): void | Promise<void>;
  readonly methodRefused?: string;
  readonly token?: (req: IncomingMessage, url: URL) => string | undefined;
}

function literal(text: string): string {
  return text.replace(/[.+?^${}()|[\]\\]/g, "\\$&");
}

/** The template as an anchored regular expression, with its names in group order. */
function compile(template: string): { regex: RegExp; names: string[] } {
  const names: string[] = [];
  const star = template.indexOf("*");
  const head = star < 0 ? template : template.slice(0, star);
  const source = head
    .split(/(:[^/]+)/)
    .map((part) => {
      if (!part.startsWith(":")) return literal(part);
      names.push(part.slice(1));
      return "([^/]+)";
    })
    .join("");
  if (star < 0) return { regex: new RegExp(`^${source}$`), names };
  const rest = template.slice(star + 1);
  if (!/^\w+$/.test(rest)) throw new Error(`route ${template}: *${rest} must be a name at the end`);
  names.push(rest);
  return { regex: new RegExp(`^${source}(/.*)?$`), names };
}

export function route<const T extends string, const R extends Role>(spec: RouteSpec<T, R>): Route {
  const { regex, names } = compile(spec.path);
  return {
    method: spec.method,
    path: spec.path,
    role: spec.role,
    params: names,
    ...(spec.methodRefused ? { methodRefused: spec.methodRefused } : {}),
    ...(spec.token ? { token: spec.token } : {}),
    match(path) {
      const found = regex.exec(path);
      if (!found) return undefined;
      return Object.fromEntries(names.map((name, i) => [name, found[i + 1] ?? ""]));
    },
    answer(context, params) {
      // The router calls this with match()'s record, which has every name of the template, and
      // with a principal unless the role is anonymous: what the handler's types promise.
      return spec.handle(context as RouteContext<R>, params as Record<ParamNames<T>, string>);
    },
  };
}

export function methodsOf(route: Route): readonly Method[] | "*" {
  return typeof route.method === "string" && route.method !== "*" ? [route.method] : route.method;
}

/** Whether `role` (a principal's) reaches `needed`. */
function roleMeets(role: Principal["role"], needed: Role): boolean {
  return ROLES.indexOf(role) >= ROLES.indexOf(needed);
}

export interface RouterOptions {
  routes: readonly Route[];
  authenticate: Authenticator;
  /** The 401's message: where a caller gets a token. */
  unauthenticated: string;
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
export function shownPath(path: string): string {
  const shown = path.replace(/[^\x21-\x7e]/g, "?");
  return shown.length > 200 ? `${shown.slice(0, 200)}…` : shown;
}

export function createRouter(options: RouterOptions): RequestListener {
  return (req, res) => {
    // Every answer is what its content-type says: a browser must never guess HTML into it.
    res.setHeader("X-Content-Type-Options", "nosniff");
    dispatch(options, req, res).catch((error: unknown) => {
      if (!res.headersSent) sendStatus(res, 500, "InternalError", "internal error");
      else res.destroy();
      // A bug here must not leak internals to the client; the stack goes nowhere near the response.
      process.emitWarning(`hub http: ${error instanceof Error ? error.message : String(error)}`);
    });
  };
}

async function dispatch(options: RouterOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "http://hub.invalid");
  const path = url.pathname;
  if (!decodable(path))
    return sendStatus(
      res,
      400,
      "BadRequest",
      `malformed percent-encoding in ${shownPath(path)}: each % must start a UTF-8 byte as %XX`,
    );
  let found: { route: Route; params: Readonly<Record<string, string>> } | undefined;
  for (const route of options.routes) {
    const params = route.match(path);
    if (params) {
      found = { route, params };
      break;
    }
  }
  if (!found) return sendStatus(res, 404, "NotFound", `no route for ${shownPath(path)}`);
  const { route, params } = found;
  let principal: Principal | undefined;
  if (route.role !== "anonymous") {
    const token = bearerToken(req) ?? route.token?.(req, url);
    principal = token ? await options.authenticate(token) : undefined;
    if (!principal) {
      res.setHeader("WWW-Authenticate", 'Bearer realm="rlark"');
      return sendStatus(res, 401, "Unauthorized", options.unauthenticated);
    }
    if (!roleMeets(principal.role, route.role))
      return sendStatus(res, 403, "Forbidden", `${route.path} is for the ${route.role} role and above`);
  }
  const methods = methodsOf(route);
  if (methods !== "*" && !methods.includes(req.method as Method)) {
    res.setHeader("Allow", methods.join(", "));
    return sendStatus(
      res,
      405,
      "MethodNotAllowed",
      route.methodRefused ?? `${route.path} takes ${methods.join(", ")}`,
    );
  }
  return route.answer({ req, res, url, principal }, params);
}
