// The read-only status dashboard: the page and its assets, login, and the live event stream.
// It reads the store and never writes; changes go through git. The hub mounts it (startHub's
// `dashboard` option) and passes in what it needs: the store, the source's status, the admin token.
//
//   const hub = await startHub({ ..., dashboard: { sessionTtlSeconds: 600 } });
//   console.log(hub.dashboard?.loginUrl(hub.url));   // one click, once, logged in as admin
//
// See docs/dashboard.md.
import { type AccessPolicy, type Job, type Team, teamFilter, type User, viewerOf } from "../api/index.ts";
import { type Clock, every, systemClock } from "../lib/clock.ts";
import {
  type Authenticator,
  anyOf,
  type Method,
  type Principal,
  type Route,
  route,
  sendStatus,
} from "../lib/http/index.ts";
import { type Logger, silentLogger } from "../lib/logger.ts";
import { keepWatching, type Store } from "../lib/store/index.ts";
import { loadAssets, serveAsset, serveFavicon, serveIndex } from "./assets.ts";
import {
  createLoginLinks,
  createSessions,
  LOGIN_LINK_PATH,
  LOGIN_PATH,
  type LoginLimit,
  loadOrCreateJwtSecret,
  verifyJwt,
} from "./auth/index.ts";
import { createEventStream, EVENTS_PATH, type EventStreamLimits, type ObjectFilter } from "./events.ts";
import { createObjectCache, type ObjectCache } from "./object-cache.ts";
import { repoWebUrl } from "./repo-web.ts";

/**
 * The filter maker of `principal`'s event stream (docs/teams.md#visibility): Teams and Jobs as
 * the cache holds them now, the AccessPolicies and the User as the store has them at the start
 * (a change to either ends the stream: rescope, recheck). None for admins or a hub without Teams.
 */
async function streamScope(
  store: Store,
  cache: ObjectCache,
  principal: Principal,
): Promise<(() => ObjectFilter) | undefined> {
  if (principal.role === "admin") return undefined;
  const user = await store.get<User>("User", undefined, principal.subject);
  const policies = (await store.list<AccessPolicy>("AccessPolicy")).items;
  const viewer = viewerOf(principal.subject, principal.role, user);
  return () => {
    const teams = cache.objectsOf("Team") as Team[];
    return teamFilter(
      {
        teams,
        policies,
        job: (name) => cache.get("Job", undefined, name) as Job | undefined,
        jobs: () => cache.objectsOf("Job") as Job[],
      },
      viewer,
    );
  };
}

export { DEFAULT_SCRYPT, hashPassword, LOGIN_LINK_TTL_MS } from "./auth/index.ts";
export { DASHBOARD_KINDS } from "./object-cache.ts";
export { type RepoWeb, repoWebUrl } from "./repo-web.ts";

/** What the hub's operator may choose; the rest of DashboardOptions the hub passes in. */
export interface DashboardSettings {
  /** The manifests' repository as people browse it (default: the hub's --repo); an https URL makes every object link to its file and line. */
  repoUrl?: string;
  /** Session lifetime; default 30 minutes. */
  sessionTtlSeconds?: number;
  /** Failed logins allowed per address and per user name per window; default 10 a minute per address, 30 per user. */
  loginLimit?: LoginLimit;
  /** How often the source status is checked for changes to push; default 1 s. */
  sourcePollMs?: number;
  /** Event streams per principal and in all, and the unread output a client may leave. */
  streamLimits?: EventStreamLimits;
  /**
   * How often every open stream's principal is checked again besides on each change of a User;
   * default 60 s (a backstop should the User watch be lost).
   */
  principalRecheckMs?: number;
  /** Drives polls, rechecks, heartbeats, relists and session times; tests pass a FakeClock. */
  clock?: Clock;
}

/** The page and its assets are read; anything else is refused with a 405. */
const PAGE: readonly Method[] = ["GET", "HEAD"];

export interface DashboardOptions extends DashboardSettings {
  store: Store;
  /** The hub's data dir: the JWT secret is kept there. */
  dataDir: string;
  /** Recognises the hub's admin token (logins with it, and event streams opened with it). */
  adminToken: Authenticator;
  /** The git source's status, as GET /api/v1/source serves it. */
  sourceStatus: () => unknown;
  logger?: Logger;
}

export interface Dashboard {
  /** The page, its assets, login and the event stream: the hub puts them in its route table. */
  routes: Route[];
  /** Verifies session JWTs: pass it to the hub so every /api route accepts them. */
  authenticator: Authenticator;
  /**
   * A link that logs in as admin once, within LOGIN_LINK_TTL_MS: a single-use code (in the
   * fragment, which no server or log sees), never the admin token itself.
   */
  loginUrl(hubUrl: string): string;
  close(): void;
}

export async function createDashboard(options: DashboardOptions): Promise<Dashboard> {
  const logger = options.logger ?? silentLogger;
  const clock = options.clock ?? systemClock;
  const secret = await loadOrCreateJwtSecret(options.dataDir);
  const sessions = createSessions({
    store: options.store,
    adminToken: options.adminToken,
    secret,
    ttlSeconds: options.sessionTtlSeconds,
    limit: options.loginLimit,
    clock,
  });
  const loginLinks = createLoginLinks({
    secret,
    // createSessions' default, so both kinds of login last as long.
    sessionTtlSeconds: options.sessionTtlSeconds ?? 30 * 60,
    clock,
  });
  const assets = await loadAssets();
  const cache = createObjectCache({ store: options.store, logger, clock });
  await cache.start();
  const streamAuthenticator = anyOf(sessions.authenticator, options.adminToken);
  const events = createEventStream({
    cache,
    authenticate: streamAuthenticator,
    sourceStatus: options.sourceStatus,
    config: { repoWeb: repoWebUrl(options.repoUrl) ?? null },
    expiresAt: (token) => verifyJwt(token, secret, Math.floor(clock.now() / 1000))?.exp,
    ...(options.streamLimits ? { limits: options.streamLimits } : {}),
    clock,
    scope: (principal) => streamScope(options.store, cache, principal),
  });
  const stopPolling = every(clock, options.sourcePollMs ?? 1000, () => events.pollSource());
  // A User deleted or demoted in git loses its open streams at once, not only its next request.
  const recheck = () =>
    void events
      .recheck()
      .catch((error: unknown) => logger.warn("event stream recheck failed", { error: String(error) }));
  // Kept open (lib/store/keep-watching.ts): on the kubernetes store a watch ends when its stream
  // to the apiserver breaks, and one opened once would leave a User removed from git its open
  // streams, and a changed Team every stream's old scope, until the hub restarted. A watch opened
  // again rechecks (rescopes) at once: the change may have come while none was open.
  const rescope = () => events.rescope();
  const watches = [
    await keepWatching(options.store, "User", recheck, { logger, onResync: recheck }),
    // Who sees which team's objects changed: scoped streams start again under the new scope.
    ...(await Promise.all(
      ["Team", "AccessPolicy"].map((kind) =>
        keepWatching(options.store, kind, rescope, { logger, onResync: rescope }),
      ),
    )),
  ];
  const stopRechecking = every(clock, options.principalRecheckMs ?? 60_000, recheck);

  return {
    routes: [
      route({
        method: "*",
        path: LOGIN_PATH,
        role: "anonymous",
        handle: ({ req, res }) => sessions.handleLogin(req, res),
      }),
      route({
        method: "*",
        path: LOGIN_LINK_PATH,
        role: "anonymous",
        handle: ({ req, res }) => loginLinks.handle(req, res),
      }),
      route({
        method: "GET",
        path: EVENTS_PATH,
        role: "viewer",
        methodRefused: "the event stream is read with GET",
        // EventSource sets no headers: the token comes in the query.
        token: (_req, url) => url.searchParams.get("token") ?? undefined,
        handle: ({ req, res, url }) => events.handle(req, res, url),
      }),
      ...["/", "/index.html"].map((path) =>
        route({
          method: PAGE,
          path,
          role: "anonymous",
          handle: ({ req, res }) => serveIndex(assets, res, req.method === "HEAD"),
        }),
      ),
      route({
        method: PAGE,
        path: "/favicon.ico",
        role: "anonymous",
        handle: ({ req, res }) => serveFavicon(assets, res, req.method === "HEAD"),
      }),
      route({
        method: PAGE,
        path: "/assets*rest",
        role: "anonymous",
        handle({ req, res, url }) {
          if (!serveAsset(assets, url.pathname, res, req.method === "HEAD"))
            sendStatus(res, 404, "NotFound", "no such asset");
        },
      }),
    ],
    authenticator: sessions.authenticator,
    loginUrl(hubUrl) {
      return `${hubUrl.replace(/\/+$/, "")}/#/login?code=${loginLinks.issue()}`;
    },
    close() {
      stopPolling();
      stopRechecking();
      for (const watch of watches) watch.stop();
      events.close();
      cache.stop();
    },
  };
}
// The session token's parser, entered by hack/fuzz.
export { signJwt, verifyJwt } from "./auth/index.ts";
