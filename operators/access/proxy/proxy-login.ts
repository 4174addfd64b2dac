// A browser's login to one proxy URL. A browser cannot put the dashboard's bearer token on a
// navigation, on the requests a proxied page makes, or on its WebSockets; so the dashboard, with
// its token, asks POST /api/v1/proxy-login for one route's prefix and gets a cookie for that path
// only: a random ticket (HttpOnly, SameSite=Strict, short-lived) that the hub maps back to the
// token that minted it. Each proxied request then authenticates with that token as if the
// dashboard had sent it, so the User must still exist in git and hold `proxy` on the pod: the
// same check, audit and revocation as every other proxied request. The ticket never reaches a
// pod (headers.ts) and opens nothing but proxy routes under its own prefix.

import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { type Clock, systemClock } from "../../lib/clock.ts";
import {
  type OriginCheck,
  type Principal,
  readJsonObject,
  sendJson,
  sendStatus,
} from "../../lib/http/index.ts";

export const PROXY_COOKIE = "rlark-proxy";
export const PROXY_LOGIN_PATH = "/api/v1/proxy-login";

const MAX_BODY = 4096;

/** The proxy routes a cookie may be minted for, up to the part the pod sees (its prefix). */
const ROUTES = [
  /^\/api\/v1\/namespaces\/[^/]+\/(?:pods|tasks)\/[^/]+\/proxy\/\d{1,5}\//,
  /^\/api\/v1\/rlinf\.io\/v1alpha1\/tasks\/[^/]+\/tensorboard\//,
];

/** The prefix (with its trailing slash) of the proxy route `path` lies under; undefined for any other path. */
export function proxyRoutePrefix(path: string): string | undefined {
  for (const route of ROUTES) {
    const match = route.exec(path);
    if (match) return match[0];
  }
  return undefined;
}

export interface ProxyLoginOptions {
  /** Whether a browser's Origin is the hub's own: a change by cookie must come from it. */
  sameOrigin: OriginCheck;
  /** How long a cookie lasts. Default 1 hour (the token it stands for may end sooner). */
  ttlSeconds?: number;
  /** Tickets held in all; the oldest goes first. Default 10,000. */
  maxTickets?: number;
  /** Tickets held per subject; that subject's oldest goes first. Default 50. */
  maxPerSubject?: number;
  clock?: Clock;
}

export interface ProxyLogin {
  /** POST PROXY_LOGIN_PATH `{"path": "<proxy URL path>"}` (the route checks the method), by a caller who proved itself with `token`. */
  handle(req: IncomingMessage, res: ServerResponse, token: string, principal: Principal): Promise<void>;
  /** The token a request's login cookie stands for, when `path` lies under the cookie's prefix. */
  tokenFor(req: IncomingMessage, path: string): string | undefined;
}

interface Ticket {
  token: string;
  subject: string;
  prefix: string;
  expiresAt: number;
}

/** The values of every cookie named `name` the request carries. */
export function cookieValues(header: string | undefined, name: string): string[] {
  return (header ?? "")
    .split(";")
    .map((pair) => pair.trim())
    .filter((pair) => pair.startsWith(`${name}=`))
    .map((pair) => pair.slice(name.length + 1));
}

export function createProxyLogin(options: ProxyLoginOptions): ProxyLogin {
  const clock = options.clock ?? systemClock;
  const ttl = options.ttlSeconds ?? 3600;
  const maxTickets = options.maxTickets ?? 10_000;
  const maxPerSubject = options.maxPerSubject ?? 50;
  const tickets = new Map<string, Ticket>();

  function makeRoom(subject: string): void {
    const at = clock.now();
    for (const [id, ticket] of tickets) if (ticket.expiresAt <= at) tickets.delete(id);
    const mine = [...tickets].filter(([, ticket]) => ticket.subject === subject);
    for (const [id] of mine.slice(0, Math.max(0, mine.length - maxPerSubject + 1))) tickets.delete(id);
    // A Map iterates in insertion order: the first are the oldest.
    for (const id of tickets.keys()) {
      if (tickets.size < maxTickets) break;
      tickets.delete(id);
    }
  }

  return {
    async handle(req, res, token, principal) {
      const body = await readJsonObject(req, MAX_BODY);
      const asked = typeof body?.path === "string" ? body.path : undefined;
      if (asked === undefined)
        return sendStatus(res, 400, "BadRequest", 'send JSON {"path": "<proxy URL path>"} (at most 4 KiB)');
      let path: string;
      try {
        // Resolved as the browser will resolve it: dot segments gone, so the prefix is the one it sends.
        path = new URL(asked, "http://hub.invalid").pathname;
      } catch {
        return sendStatus(res, 400, "BadRequest", "path is not a URL path");
      }
      const prefix = proxyRoutePrefix(path);
      if (!prefix)
        return sendStatus(
          res,
          400,
          "BadRequest",
          "path must lie under a proxy route: /api/v1/namespaces/<ns>/(pods|tasks)/<name>/proxy/<port>/ or /api/v1/rlinf.io/v1alpha1/tasks/<task>/tensorboard/",
        );
      makeRoom(principal.subject);
      const id = randomBytes(32).toString("base64url");
      const expiresAt = clock.now() + ttl * 1000;
      tickets.set(id, { token, subject: principal.subject, prefix, expiresAt });
      const secure =
        (req.socket as { encrypted?: boolean }).encrypted === true ||
        req.headers["x-forwarded-proto"] === "https";
      res.setHeader(
        "Set-Cookie",
        `${PROXY_COOKIE}=${id}; Path=${prefix}; Max-Age=${ttl}; HttpOnly; SameSite=Strict${secure ? "; Secure" : ""}`,
      );
      res.setHeader("Cache-Control", "no-store");
      sendJson(res, 200, { path: prefix, expiresAt: new Date(expiresAt).toISOString() });
    },
    tokenFor(req, path) {
      // SameSite counts another port of the same host as the same site: a change must also come
      // from the hub's own origin (a browser always names its origin on one).
      if (req.method !== "GET" && req.method !== "HEAD" && !options.sameOrigin(req)) return undefined;
      const at = clock.now();
      for (const id of cookieValues(req.headers.cookie, PROXY_COOKIE)) {
        const ticket = tickets.get(id);
        if (!ticket) continue;
        if (ticket.expiresAt <= at) {
          tickets.delete(id);
          continue;
        }
        if (path.startsWith(ticket.prefix)) return ticket.token;
      }
      return undefined;
    },
  };
}
