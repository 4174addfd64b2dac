// The hub's HTTP address: the API, /hooks/git (push and pull_request events, one intake), and the
// dashboard mounted as a sub-application with what it needs passed in.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import {
  type AccessCheck,
  type AccessHold,
  type AuditSink,
  accessRoutes,
  authenticatedMayAccess,
  createProxyLogin,
  holdNothing,
  loggingAuditSink,
  podLogRoute,
  podProxyRoute,
  tensorBoardRoute,
  webSocketProxyRoute,
} from "../access/index.ts";
import { createDashboard, type Dashboard, type DashboardSettings } from "../dashboard/index.ts";
import type { PullRequestReviewer } from "../feedback/index.ts";
import {
  adminTokenAuthenticator,
  anyOf,
  createUpgradeHandler,
  type HttpServerLimits,
  httpServerLimits,
  hubOrigins,
  limitConnections,
  originCheck,
  publicOrigin,
  type Route,
  serverOptions,
  type UpgradeRoute,
} from "../lib/http/index.ts";
import type { Logger } from "../lib/logger.ts";
import type { SealKeyring } from "../lib/seal/index.ts";
import type { Store } from "../lib/store/index.ts";
import type { TunnelServer } from "../lib/tunnel/index.ts";
import {
  createGitWebhookHttpHandler,
  gitWebhookRoute,
  loadWebhookSecrets,
  type WebhookIntake,
} from "../source/index.ts";
import { splitHostPort } from "./host-port.ts";
import { createHubHttpHandler, hubApiRoutes, type RefusedRead } from "./http/api-server.ts";
import type { ClusterTester } from "./http/cluster-test-route.ts";
import type { Readiness } from "./readiness.ts";
import type { HubSource } from "./source-wiring.ts";

export interface HubHttpOptions {
  /** host:port; port 0 picks a free one. */
  address: string;
  store: Store;
  dataDir: string;
  adminToken: string;
  /** The repository's URL and branch, as the push webhook checks them. */
  repo?: string;
  branch: string;
  source?: HubSource;
  reviewer?: PullRequestReviewer;
  webhookSecretFile?: string;
  intake: WebhookIntake;
  dashboard?: boolean | DashboardSettings;
  /** The newest access audit records, for admins. */
  accessAudit?: (limit: number) => unknown[];
  /** Records a refused read of another team's object (the API's objects route). */
  auditRead?: (record: RefusedRead) => void;
  metricsText: () => Promise<string> | string;
  /** Served at /api/v1/seal-key (public key) and rotated at /api/v1/seal-key/rotate (admins). */
  sealKeys: SealKeyring;
  ready: () => Readiness;
  tunnel: TunnelServer;
  logger: Logger;
  /** Who may read logs (and, later, open proxies): today any authenticated principal. */
  authorize?: AccessCheck;
  /** Where each access is recorded: today a structured line in the hub's log. */
  audit?: AuditSink;
  /** Keeps open accesses under watch so a revocation in git cuts them. */
  hold?: AccessHold;
  /** WebSocket routes (the web terminal), behind the one authenticated upgrade handler. */
  upgrades?: UpgradeRoute[];
  /** Connection caps and timeouts of the port (lib/http/server-limits.ts); the rest default. */
  limits?: Partial<HttpServerLimits>;
  /** How long a pod has to start answering a proxied request. Default 30 s. */
  proxyResponseTimeoutMs?: number;
  /** The URLs browsers reach the hub at besides its listening address (a name, a TLS proxy). */
  publicUrls?: string[];
  /** The agentless clusters' tester once something drives them (Hub.setClusterTester). */
  clusterTester?: () => ClusterTester | undefined;
}

export interface HubHttp {
  /** http://host:port */
  url: string;
  /** Every HTTP route the hub serves, in order, each with the least role that may call it. */
  routes: readonly Route[];
  dashboard?: Dashboard;
  close(): Promise<void>;
}

export async function startHubHttp(options: HubHttpOptions): Promise<HubHttp> {
  const { source, logger } = options;
  // First: a limit that cannot work is refused before anything is started.
  const limits = httpServerLimits(options.limits);
  const publicOrigins = (options.publicUrls ?? []).map(publicOrigin);
  // Known once the server listens (port 0 picks one); no request arrives before.
  let origins: ReadonlySet<string> = new Set();
  const sameOrigin = originCheck(() => origins);
  const adminToken = adminTokenAuthenticator(options.adminToken);
  const settings = options.dashboard === true ? {} : options.dashboard || undefined;
  const dashboard = settings
    ? await createDashboard({
        ...settings,
        store: options.store,
        dataDir: options.dataDir,
        adminToken,
        sourceStatus: () => source?.watcher.status() ?? { state: "None" },
        ...((settings.repoUrl ?? options.repo) ? { repoUrl: settings.repoUrl ?? options.repo } : {}),
        logger,
      })
    : undefined;
  const pushWebhook =
    source && options.repo
      ? createGitWebhookHttpHandler({
          // Read per request so a rotated secret file takes effect at once; none configured refuses all.
          secrets: () => loadWebhookSecrets({ file: options.webhookSecretFile }),
          repoUrl: options.repo,
          branch: options.branch,
          onTrigger: () => void source.watcher.trigger(),
          intake: options.intake,
          ...(options.reviewer ? { byEvent: { pull_request: options.reviewer.httpHandler } } : {}),
          logger,
        })
      : undefined;
  const access = {
    store: options.store,
    tunnel: options.tunnel,
    authorize: options.authorize ?? authenticatedMayAccess,
    audit: options.audit ?? loggingAuditSink(logger),
    hold: options.hold ?? holdNothing,
  };
  const authenticate = dashboard ? anyOf(adminToken, dashboard.authenticator) : anyOf(adminToken);
  const podProxy = podProxyRoute({
    ...access,
    ...(options.proxyResponseTimeoutMs ? { responseTimeoutMs: options.proxyResponseTimeoutMs } : {}),
  });
  const proxyLogin = createProxyLogin({ sameOrigin });
  const routes = [
    gitWebhookRoute(pushWebhook),
    ...(dashboard?.routes ?? []),
    ...accessRoutes({
      podProxy,
      tensorBoard: tensorBoardRoute({ store: options.store, proxy: podProxy }),
      proxyLogin,
      podLog: podLogRoute(access),
    }),
    // Last: its objects route and closing 404 take every path the others leave.
    ...hubApiRoutes({
      store: options.store,
      sourceStatus: () => source?.watcher.status() ?? { state: "None", message: "no --repo configured" },
      metricsText: options.metricsText,
      sealKeys: {
        currentPublicKeyPem: () => options.sealKeys.currentPublicKeyPem(),
        keyIds: () => options.sealKeys.keyIds(),
        unseal: (sealed, context) => options.sealKeys.unseal(sealed, context),
        rotate: async () => {
          const keyId = await options.sealKeys.rotate();
          logger.info("sealing key rotated", { keyId });
          return keyId;
        },
      },
      browse: options.tunnel,
      ...(options.clusterTester ? { clusterTester: options.clusterTester } : {}),
      ...(options.accessAudit ? { accessAudit: options.accessAudit } : {}),
      ...(options.auditRead ? { auditRead: options.auditRead } : {}),
      ready: options.ready,
    }),
  ];
  const handler = createHubHttpHandler({ authenticate, routes });
  const websocketProxy = webSocketProxyRoute(access);
  const server = createServer(serverOptions(limits), handler);
  limitConnections(server, limits);
  server.on(
    "upgrade",
    createUpgradeHandler({
      authenticate,
      routes: [...(options.upgrades ?? []), websocketProxy],
      sameOrigin,
      // Only the proxies' WebSockets: the login cookie opens nothing else.
      fallbackToken: (req, url) =>
        websocketProxy.serves(url) ? proxyLogin.tokenFor(req, url.pathname) : undefined,
    }),
  );
  const { host, port } = splitHostPort(options.address);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  origins = hubOrigins({ host, port: address.port }, publicOrigins);
  return {
    url: `http://${address.family === "IPv6" ? `[${address.address}]` : address.address}:${address.port}`,
    routes,
    ...(dashboard ? { dashboard } : {}),
    async close() {
      dashboard?.close();
      websocketProxy.close();
      await closeServer(server);
    },
  };
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
