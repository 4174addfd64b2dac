// Composes the hub process: store, controllers, git source, status feedback and the HTTP API.
// Everything is built from options here; main (the CLI) only parses flags and calls startHub.
import { mkdir } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { createDashboard, type Dashboard } from "../dashboard/index.ts";
import { createStatusBranchWriter, type StatusBranchWriter } from "../feedback/index.ts";
import { createTunnelDryRunner, liveFromStore } from "../feedback/plan/index.ts";
import { loadFeedbackProvider, type ProviderConfig, repoRefFromUrl } from "../feedback/providers/index.ts";
import { createPullRequestReviewer, routePullRequestEvents } from "../feedback/pull-requests.ts";
import { createSyncStatusReporter } from "../feedback/sync-status.ts";
import { type Controller, type Logger, Manager } from "../lib/controller/index.ts";
import { Registry } from "../lib/metrics/index.ts";
import { openSqliteStore, type Store, type Watch } from "../lib/store/index.ts";
import {
  createGitWebhookHttpHandler,
  type GitCredentials,
  loadWebhookSecrets,
  registerGitSourceMetrics,
} from "../source/index.ts";
import { loadOrCreateAdminToken } from "./admin-token.ts";
import { createAgentSync } from "./agent-sync/index.ts";
import { type ControllerDependencies, hubControllers } from "./controllers.ts";
import { createHubSource, type HubSource } from "./git-source.ts";
import { createHubHttpHandler, type HubHttpDependencies } from "./http/api-server.ts";
import { type Authenticator, adminTokenAuthenticator, anyOf } from "./http/auth.ts";
import { jsonLogger } from "./logger.ts";
import { hubReadiness } from "./readiness.ts";
import { STATUS_KINDS, statusDocuments } from "./status-documents.ts";
import { createHubTunnel, type HubPki } from "./tunnel-server.ts";

export interface HubOptions {
  dataDir: string;
  /** The CA's read-only folder (ca.crt, ca.key), e.g. a mounted Secret; default `<dataDir>/pki`. */
  caDir?: string;
  /** host:port for the HTTP API; port 0 picks a free one. */
  http: string;
  /** Git source; without it the hub serves what its store already holds. */
  repo?: string;
  branch?: string;
  path?: string;
  intervalMs?: number;
  credentials?: GitCredentials;
  /** Where push-webhook secrets come from (`--webhook-secret-file` or RLARK_WEBHOOK_SECRET); read per request. */
  webhookSecretFile?: string;
  /** Status branch for feedback commits; undefined disables them. */
  statusBranch?: string;
  statusDebounceMs?: number;
  /** host:port of the SSH endpoint for agent tunnels; port 0 picks a free one. Default 0.0.0.0:2222. */
  ssh?: string;
  /** Controllers to run; default: the Job, Workflow and Domain controllers. */
  controllers?: (deps: ControllerDependencies) => Controller[];
  logger?: Logger;
  /** Extra routes (dashboard, login) mounted before the API's 404. */
  extraRoutes?: HubHttpDependencies["extraRoutes"];
  /** Accepted on every authenticated route besides the admin token (the dashboard's user JWTs). */
  authenticate?: Authenticator;
  /** Serve the read-only dashboard (and its login) on the HTTP address. */
  dashboard?: boolean;
  /** Commit statuses and pull-request plans on GitHub, GitHub Enterprise or Gitea. */
  feedback?: {
    provider: ProviderConfig;
    /** Names this hub in status contexts when several hubs watch one repository. */
    hubName?: string;
    dashboardUrl?: string;
    /** Poll open pull requests this often, for hubs without a webhook; 0 disables. */
    pollIntervalMs?: number;
  };
}

export interface Hub {
  store: Store;
  manager: Manager;
  registry: Registry;
  source?: HubSource;
  statusWriter?: StatusBranchWriter;
  adminToken: string;
  /** http://host:port of the API. */
  url: string;
  /** host:port of the SSH endpoint agents dial. */
  sshAddress: string;
  /** Present with `dashboard: true`. */
  dashboard?: Dashboard;
  /** The CA's fingerprint agents pin at enrollment (`sha256:…`). */
  caFingerprint: string;
  pki: HubPki;
  stop(): Promise<void>;
}

export async function startHub(options: HubOptions): Promise<Hub> {
  const logger = options.logger ?? jsonLogger("hub");
  await mkdir(options.dataDir, { recursive: true, mode: 0o700 });
  const adminToken = await loadOrCreateAdminToken(options.dataDir);
  const store = openSqliteStore({ dataDir: options.dataDir });
  const registry = new Registry();
  const manager = new Manager({ store, registry, logger });
  const agentSync = createAgentSync({ store, artifactDir: path.join(options.dataDir, "artifacts"), logger });
  const tunnel = createHubTunnel({
    dataDir: options.dataDir,
    ...(options.caDir ? { caDir: options.caDir } : {}),
    clusterExists: async (name) => (await store.get("Cluster", undefined, name)) !== undefined,
    onAgentSession: (session) => agentSync.onAgentSession(session),
    onClusterState: (cluster, state) => agentSync.onClusterState(cluster, state),
    logger,
  });
  const controllerDeps: ControllerDependencies = { dataDir: options.dataDir, ca: tunnel.ca };
  for (const controller of (options.controllers ?? hubControllers)(controllerDeps)) manager.add(controller);

  const provider =
    options.repo && options.feedback
      ? await loadFeedbackProvider(options.feedback.provider, { logger })
      : undefined;
  const repoRef = provider && options.repo ? repoRefFromUrl(options.repo) : undefined;
  const syncStatus =
    provider && repoRef
      ? createSyncStatusReporter({
          provider,
          repo: repoRef,
          ...(options.feedback?.hubName ? { hubName: options.feedback.hubName } : {}),
          ...(options.feedback?.dashboardUrl ? { dashboardUrl: options.feedback.dashboardUrl } : {}),
          logger,
        })
      : undefined;

  let source: HubSource | undefined;
  if (options.repo) {
    source = createHubSource({
      store,
      dataDir: options.dataDir,
      repo: options.repo,
      branch: options.branch ?? "main",
      path: options.path ?? ".",
      intervalMs: options.intervalMs ?? 60_000,
      credentials: options.credentials,
      ...(syncStatus ? { syncStatus } : {}),
      logger,
    });
    registerGitSourceMetrics(registry, source.watcher);
  }

  const reviewer =
    provider && repoRef && source
      ? createPullRequestReviewer({
          provider,
          repo: repoRef,
          repository: source.repository,
          path: options.path ?? ".",
          live: () => liveFromStore(store),
          secrets: () => loadWebhookSecrets({ file: options.webhookSecretFile }),
          ...(options.feedback?.hubName ? { hubName: options.feedback.hubName } : {}),
          ...(options.feedback?.dashboardUrl ? { dashboardUrl: options.feedback.dashboardUrl } : {}),
          dryRunner: createTunnelDryRunner({
            openStream: (cluster) => tunnel.server.openStream(cluster, { purpose: "kube-api" }),
          }),
          pollIntervalMs: options.feedback?.pollIntervalMs ?? 60_000,
          logger,
        })
      : undefined;

  let statusWriter: StatusBranchWriter | undefined;
  const statusWatches: Watch[] = [];
  if (source && options.statusBranch) {
    statusWriter = createStatusBranchWriter({
      remote: source.repository,
      dataDir: options.dataDir,
      statusBranch: options.statusBranch,
      debounceMs: options.statusDebounceMs,
      documents: () => statusDocuments(store),
      logger,
    });
    statusWriter.on("failed", (error) => logger.warn("status commit failed", { error: error.message }));
    const resourceVersion = await store.resourceVersion();
    for (const kind of STATUS_KINDS) {
      statusWatches.push(await store.watch(kind, { resourceVersion }, () => statusWriter?.notify()));
    }
  }

  const dashboard = options.dashboard
    ? await createDashboard({
        store,
        dataDir: options.dataDir,
        sourceStatus: () => source?.watcher.status() ?? { state: "None" },
        ...(options.repo ? { repoUrl: options.repo } : {}),
        logger,
      })
    : undefined;
  const extraAuthenticators = [options.authenticate, dashboard?.authenticator].filter(
    (a): a is Authenticator => a !== undefined,
  );
  const pushWebhook = source
    ? createGitWebhookHttpHandler({
        // Read per request so a rotated secret file takes effect at once; none configured refuses all.
        secrets: () => loadWebhookSecrets({ file: options.webhookSecretFile }),
        repoUrl: options.repo as string,
        branch: options.branch ?? "main",
        onTrigger: () => void source?.watcher.trigger(),
        logger,
      })
    : undefined;
  let started = false;
  const handler = createHubHttpHandler({
    store,
    authenticate: anyOf(adminTokenAuthenticator(adminToken), ...extraAuthenticators),
    sourceStatus: () => source?.watcher.status() ?? { state: "None", message: "no --repo configured" },
    metricsText: () => manager.metricsText(),
    podLogs: async (namespace, name, tail) => {
      const pod = await store.get("Pod", namespace, name);
      const cluster = namespace.startsWith("agent-") ? namespace.slice("agent-".length) : "";
      const stream = await tunnel.server.openStream(cluster, {
        purpose: "logs",
        meta: { name, namespace: (pod?.spec as { namespace?: string } | undefined)?.namespace ?? "", tail },
      });
      return readBounded(stream, MAX_LOG_BYTES);
    },
    ready: () => hubReadiness(started, source?.watcher.status()),
    gitWebhook:
      pushWebhook && reviewer ? routePullRequestEvents(reviewer.httpHandler, pushWebhook) : pushWebhook,
    extraRoutes: async (req, res, url) =>
      (options.extraRoutes ? await options.extraRoutes(req, res, url) : false) ||
      (dashboard ? await dashboard.routes(req, res, url) : false),
  });
  const server = createServer(handler);
  const { host, port } = splitHostPort(options.http);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const url = `http://${address.family === "IPv6" ? `[${address.address}]` : address.address}:${address.port}`;

  const ssh = splitHostPort(options.ssh ?? "0.0.0.0:2222");
  await agentSync.start();
  const sshPort = (await tunnel.server.listen(ssh.port, ssh.host)).port;
  await manager.start();
  await source?.watcher.start();
  reviewer?.start();
  started = true;
  logger.info("hub started", { url, dataDir: options.dataDir, repo: source?.repository.url });

  return {
    store,
    manager,
    registry,
    source,
    statusWriter,
    adminToken,
    url,
    sshAddress: `${ssh.host === "0.0.0.0" ? "127.0.0.1" : ssh.host}:${sshPort}`,
    caFingerprint: tunnel.ca.fingerprint,
    ...(dashboard ? { dashboard } : {}),
    pki: tunnel,
    async stop() {
      started = false;
      dashboard?.close();
      await closeServer(server);
      await tunnel.server.close();
      agentSync.close();
      await source?.watcher.stop();
      for (const watch of statusWatches) watch.stop();
      await statusWriter?.stop({ flush: true });
      await reviewer?.stop();
      syncStatus?.stop();
      await manager.stop();
      await store.close();
    },
  };
}

/** A pod log tail larger than this is cut: the hub relays it in memory. */
const MAX_LOG_BYTES = 4 * 1024 * 1024;

async function readBounded(
  stream: NodeJS.ReadableStream & { destroy(): void },
  limit: number,
): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
    size += buffer.length;
    if (size > limit) {
      stream.destroy();
      break;
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

export function splitHostPort(value: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(value);
  if (!match) throw new Error(`expected host:port, got "${value}"`);
  return { host: match[1] ?? match[2] ?? "127.0.0.1", port: Number(match[3]) };
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
