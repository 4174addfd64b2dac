// Composes the hub process: the core (store, controllers, agent tunnels), then the git source,
// the feedback to the code host and the status branch, and the HTTP address, each wired in its
// own file. Everything is built from options here; main (the CLI) only parses flags and calls startHub.

import { writeFileSync } from "node:fs";
import { chmod, mkdir, stat } from "node:fs/promises";
import path from "node:path";
import {
  type AccessCheck,
  AccessControl,
  AccessSessions,
  type AccessSessionsOptions,
  AuditLog,
  type AuditSink,
  Bastion,
  httpAccessCheck,
  httpAccessHold,
  httpAuditSink,
  knownHostsLine,
  type WebTerminalOptions,
  webTerminalRoute,
} from "../access/index.ts";
import { createSshFront, type SshFront } from "../access/ssh-front/index.ts";
import { createAgentSync } from "../agent-sync/index.ts";
import { hubOpens } from "../api/index.ts";
import { AddonCatalogHolder } from "../controllers/addon/index.ts";
import type { Dashboard, DashboardSettings } from "../dashboard/index.ts";
import { createDomainRelay, type DomainRelay } from "../domain-relay/index.ts";
import type { StatusBranchWriter } from "../feedback/index.ts";
import { type Controller, Manager } from "../lib/controller/index.ts";
import { type HttpServerLimits, loadOrCreateAdminToken, type Route } from "../lib/http/index.ts";
import { LeaderElection } from "../lib/leader-election.ts";
import { jsonLogger, type Logger } from "../lib/logger.ts";
import { Registry } from "../lib/metrics/index.ts";
import { findRlarkNet } from "../lib/rlark-net-path.ts";
import { SealKeyring } from "../lib/seal/index.ts";
import type { Store } from "../lib/store/index.ts";
import type { TunnelServer, TunnelServerOptions } from "../lib/tunnel/index.ts";
import { createWebhookIntake, type GitCredentials } from "../source/index.ts";
import { type ControllerDependencies, hubControllers } from "./controllers.ts";
import { type CodeHostSettings, connectCodeHost, createHubFeedback } from "./feedback-wiring.ts";
import { splitHostPort } from "./host-port.ts";
import type { ClusterTester } from "./http/cluster-test-route.ts";
import { startHubHttp } from "./http-wiring.ts";
import { hubReadiness } from "./readiness.ts";
import { createHubSource, type HubSource } from "./source-wiring.ts";
import { loadKubeConfig, openHubStore, type StoreSettings } from "./store-wiring.ts";
import { createHubTunnel, type HubPki } from "./tunnel-server.ts";

export type { HubSource } from "./source-wiring.ts";

export interface HubOptions {
  dataDir: string;
  /** The CA's read-only folder (ca.crt, ca.key), e.g. a mounted Secret; default `<dataDir>/pki`. */
  caDir?: string;
  /**
   * The sealing keys (docs/secrets.md); default `<dataDir>/seal`. Hubs sharing one store must share
   * them: a read-only mount (a Secret) is loaded as it is and cannot be rotated.
   */
  sealDir?: string;
  /** host:port for the HTTP API; port 0 picks a free one. */
  http: string;
  /** Git source; without it the hub serves what its store already holds. */
  repo?: string;
  branch?: string;
  path?: string;
  intervalMs?: number;
  /** A git fetch, ls-remote or push that shows no progress this long is killed (`--git-timeout`); default 60 s. */
  gitTimeoutMs?: number;
  credentials?: GitCredentials;
  /** Where push-webhook secrets come from (`--webhook-secret-file` or RLARK_WEBHOOK_SECRET); read per request. */
  webhookSecretFile?: string;
  /** Status branch for feedback commits; undefined disables them. */
  statusBranch?: string;
  statusDebounceMs?: number;
  /** host:port of the SSH endpoint for agent tunnels; port 0 picks a free one. Default 0.0.0.0:2222. */
  ssh?: string;
  /**
   * host:port of the domain relay (mutual TLS; nodeservers carry cross-cluster Domain traffic
   * through it); port 0 picks a free one. Off when unset.
   */
  domainRelay?: string;
  /**
   * Who moves the relay's bytes: `rlark-net relay` (`go`), which the hub starts and restarts (ADR
   * 0007), or the hub's own process (`node`); unset, go where rlark-net is found, else node.
   * `rlarkNet` is that binary (default: $RLARK_NET_BIN, the one hack/network/build-rlark-net
   * built, or PATH's).
   */
  domainRelayEngine?: "node" | "go";
  rlarkNet?: string;
  /**
   * host:port of the bastion's Go SSH front (`rlark-net ssh-front`, ADR 0011) for users' SFTP and
   * `ssh -L`; port 0 picks a free one. Off when unset; the `ssh` port serves everything either way.
   */
  sshFront?: string;
  /**
   * host:port of the SSH front's TLS data port for agents' byte hop (ADR 0011, third decision):
   * forwards through the front then carry no byte through the hub's or the agent's Node process
   * (agents started with `accessHop`). Needs `sshFront`; port 0 picks a free one. Off when unset.
   */
  sshFrontHop?: string;
  /** Bundles' drift is applied away (default true); false (`--no-self-heal`) only reports it. */
  selfHeal?: boolean;
  /** Controllers to run; default: the Job, Workflow and Domain controllers. */
  controllers?: (deps: ControllerDependencies) => Controller[];
  logger?: Logger;
  /** Serve the read-only dashboard (and its login) on the HTTP address; an object tunes it. */
  dashboard?: boolean | DashboardSettings;
  /** Commit statuses and pull-request plans on GitHub, GitHub Enterprise or Gitea. */
  feedback?: CodeHostSettings;
  /** Limits of the SSH bastion (docs/access.md). */
  access?: Pick<AccessSessionsOptions, "maxSessionsPerUser" | "idleTimeoutMs" | "bytesPerSecondPerUser">;
  /** Connection caps and timeouts of the HTTP port (README, rlark hub); unset ones default. */
  httpLimits?: Partial<HttpServerLimits>;
  /** How long a pod has to start answering a request through the pod/task proxy. Default 30 s. */
  proxyResponseTimeoutMs?: number;
  /**
   * The URLs browsers reach the hub at, besides its --http address (a name, a TLS proxy): a
   * WebSocket or a cookie-borne change from any other origin is refused.
   */
  publicUrls?: string[];
  /** Limits of the SSH endpoint on connections not yet logged in (docs/tunnel.md). */
  sshLimits?: Pick<TunnelServerOptions, "authTimeoutMs" | "maxStartups" | "maxUnauthenticatedPerAddress">;
  /** Limits of the web terminal's WebSocket (docs/access.md). */
  webTerminal?: Omit<WebTerminalOptions, "sessions">;
  /** Who may read pod logs and proxy to pods; default the AccessPolicies from git (docs/access.md). */
  authorize?: AccessCheck;
  /** Where each log read and proxied request is recorded; default the access audit log. */
  audit?: AuditSink;
  /** Default: SQLite in dataDir. On Kubernetes the hub leads by a Lease (docs/ha.md). */
  store?: StoreSettings;
  leaderElection?: LeaderElectionSettings;
}

export interface LeaderElectionSettings {
  /** The Lease's name in the store's namespace. Default "rlark-hub". */
  leaseName?: string;
  leaseMs?: number;
  renewDeadlineMs?: number;
  retryMs?: number;
  /** This hub among the candidates; default hostname-pid. */
  identity?: string;
  /** Called when this hub lost the Lease: it must stop at once (the CLI exits). */
  onLost?: () => void;
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
  /** The API's route table: every path, its methods and the least role that may call it. */
  httpRoutes: readonly Route[];
  /** host:port of the SSH endpoint agents dial. */
  sshAddress: string;
  /** The Go SSH front (`sshFront` option), once this hub leads: its address and process. */
  readonly sshFront: { address: string; process: SshFront } | undefined;
  /** Present with the `dashboard` option. */
  dashboard?: Dashboard;
  /** The CA's fingerprint agents pin at enrollment (`sha256:…`). */
  caFingerprint: string;
  /** The keys sealed values in git are sealed to (`<data-dir>/seal/`, docs/secrets.md). */
  sealKeys: SealKeyring;
  pki: HubPki;
  /** The SSH endpoint: agent sessions, user sessions, and streams and requests to agents. */
  tunnel: TunnelServer;
  /** This hub's line for an SSH client's known_hosts (`[host]:port ssh-rsa …`), for sshAddress. */
  knownHosts: string;
  /** The user role of the SSH endpoint and its audit trail. */
  bastion: Bastion;
  audit: AuditLog;
  /** With the `domainRelay` option: the relay and the host:port nodeservers dial. */
  domainRelay?: DomainRelay;
  domainRelayAddress?: string;
  /** This hub leads (always, on SQLite): it runs controllers, the source, feedback and the tunnel. */
  leading(): boolean;
  /**
   * Calls `listener` once this hub has started leading (its tunnel listening), or at once when it
   * already has. Losing the lead ends the process, so that happens once.
   */
  onLeading(listener: () => void): void;
  /**
   * What POST /api/v1/clusters/:cluster/test asks: set by whoever drives the agentless clusters
   * (the hub may not import the agent: cli/agentless.ts), cleared with undefined when they stop.
   */
  setClusterTester(tester: ClusterTester | undefined): void;
  stop(): Promise<void>;
}

export async function startHub(options: HubOptions): Promise<Hub> {
  const logger = options.logger ?? jsonLogger("hub");
  await mkdir(options.dataDir, { recursive: true, mode: 0o700 });
  // Also when it already existed (`rlark up` makes it before the hub starts, or an older
  // version made it 0755): it holds the CA key, the admin token and the artifacts. A group's search
  // bit stays when the group is another than the hub's own: a root `rlark up`'s local agent gives
  // the dir to the pods' group (rlark-pods) to reach their own directories below, and takes
  // nothing else (docs/process-runtime.md#users); the hub's own group gets nothing.
  const { mode, gid } = await stat(options.dataDir);
  const podsGroupSearch = gid !== (process.getgid?.() ?? gid) ? mode & 0o010 : 0;
  await chmod(options.dataDir, 0o700 | podsGroupSearch);
  const adminToken = await loadOrCreateAdminToken(options.dataDir);
  const sealKeys = await SealKeyring.open(options.sealDir ?? path.join(options.dataDir, "seal"));
  const sealCheck = hubOpens(sealKeys);
  const settings = options.store ?? { backend: "sqlite" };
  const kubeConfig = settings.backend === "kubernetes" ? loadKubeConfig(settings.kubeconfig) : undefined;
  const store = await openHubStore(settings, options.dataDir, kubeConfig, logger);
  const registry = new Registry();
  const manager = new Manager({ store, registry, logger });
  const agentSync = createAgentSync({
    store,
    artifactDir: path.join(options.dataDir, "artifacts"),
    sealKeys,
    logger,
  });
  const access = new AccessControl(store);
  const audit = new AuditLog({ path: path.join(options.dataDir, "audit", "access.jsonl") });
  const sessions = new AccessSessions({
    access,
    audit,
    openStream: (cluster, streamOptions) => tunnel.server.openStream(cluster, streamOptions),
    logger,
    ...options.access,
  });
  const bastion = new Bastion({ sessions });
  const terminal = webTerminalRoute({ sessions, ...options.webTerminal });
  const tunnel = createHubTunnel({
    dataDir: options.dataDir,
    ...(options.caDir ? { caDir: options.caDir } : {}),
    clusterExists: async (name) => (await store.get("Cluster", undefined, name)) !== undefined,
    onAgentSession: (session) => agentSync.onAgentSession(session),
    onClusterState: (cluster, state) => agentSync.onClusterState(cluster, state),
    users: bastion,
    logger,
    ...options.sshLimits,
  });
  const addonCatalog = new AddonCatalogHolder();
  const controllerDeps: ControllerDependencies = {
    dataDir: options.dataDir,
    ca: tunnel.ca,
    addonCatalog,
    selfHeal: options.selfHeal ?? true,
  };
  for (const controller of (options.controllers ?? hubControllers)(controllerDeps)) manager.add(controller);

  const sourcePath = options.path ?? ".";
  const branch = options.branch ?? "main";
  const codeHost =
    options.repo && options.feedback
      ? await connectCodeHost(options.repo, options.feedback, logger)
      : undefined;
  const source = options.repo
    ? createHubSource({
        store,
        dataDir: options.dataDir,
        repo: options.repo,
        branch,
        path: sourcePath,
        intervalMs: options.intervalMs ?? 60_000,
        ...(options.gitTimeoutMs ? { gitTimeoutMs: options.gitTimeoutMs } : {}),
        credentials: options.credentials,
        onCatalog: (catalog) => addonCatalog.set(catalog),
        sealCheck,
        ...(codeHost ? { syncStatus: codeHost.syncStatus } : {}),
        registry,
        logger,
      })
    : undefined;
  // One body budget and one memory of deliveries for both kinds of webhook on /hooks/git.
  const webhookIntake = createWebhookIntake();
  const feedback = source
    ? await createHubFeedback({
        store,
        dataDir: options.dataDir,
        source,
        path: sourcePath,
        ...(codeHost ? { codeHost } : {}),
        ...(options.statusBranch ? { statusBranch: options.statusBranch } : {}),
        statusDebounceMs: options.statusDebounceMs,
        webhookSecretFile: options.webhookSecretFile,
        intake: webhookIntake,
        tunnel: tunnel.server,
        sealCheck,
        logger,
      })
    : undefined;

  let started = false;
  /** Until lead() has run: what to call then (onLeading); afterwards undefined. */
  let leadingListeners: (() => void)[] | undefined = [];
  let clusterTester: ClusterTester | undefined;
  const http = await startHubHttp({
    clusterTester: () => clusterTester,
    address: options.http,
    store,
    dataDir: options.dataDir,
    adminToken,
    ...(options.repo ? { repo: options.repo } : {}),
    branch,
    ...(source ? { source } : {}),
    ...(feedback?.reviewer ? { reviewer: feedback.reviewer } : {}),
    webhookSecretFile: options.webhookSecretFile,
    intake: webhookIntake,
    ...(options.dashboard ? { dashboard: options.dashboard } : {}),
    metricsText: () => manager.metricsText(),
    sealKeys,
    ready: () =>
      election && !election.leading
        ? { ready: false, message: "not ready: standby (another hub leads; this one serves reads)" }
        : hubReadiness(started, source?.watcher.status()),
    tunnel: tunnel.server,
    accessAudit: (limit) => audit.recent(limit),
    auditRead: ({ actor, target, error }) => {
      const at = new Date().toISOString();
      audit.write({
        actor,
        verb: "read",
        target,
        via: "http",
        start: at,
        end: at,
        bytesIn: 0,
        bytesOut: 0,
        result: "denied",
        error,
      });
    },
    logger,
    authorize: options.authorize ?? httpAccessCheck(access, sessions),
    // Injected checks decide alone (tests, `rlark up` without grants); git's grants also revoke.
    ...(options.authorize ? {} : { hold: httpAccessHold(sessions) }),
    audit: options.audit ?? httpAuditSink(audit),
    upgrades: [terminal],
    ...(options.httpLimits ? { limits: options.httpLimits } : {}),
    ...(options.proxyResponseTimeoutMs ? { proxyResponseTimeoutMs: options.proxyResponseTimeoutMs } : {}),
    ...(options.publicUrls ? { publicUrls: options.publicUrls } : {}),
  });

  const ssh = splitHostPort(options.ssh ?? "0.0.0.0:2222");
  let sshPort = ssh.port;
  const sshHost = ssh.host === "0.0.0.0" ? "127.0.0.1" : ssh.host;
  let domainRelay: DomainRelay | undefined;
  let domainRelayAddress: string | undefined;
  let sshFront: SshFront | undefined;
  let sshFrontAddress: string | undefined;
  // Only the leader writes: controllers, the git source, status commits, code-host feedback, the
  // agent tunnel with the bastion, and the domain relay. A standby serves the read API and the
  // dashboard from the same store.
  const lead = async () => {
    await agentSync.start();
    await sessions.start();
    sshPort = (await tunnel.server.listen(ssh.port, ssh.host)).port;
    if (options.sshFront) {
      const frontAt = splitHostPort(options.sshFront);
      const binary = options.rlarkNet ?? findRlarkNet();
      if (!binary)
        throw new Error(
          "--ssh-front needs rlark-net (RLARK_NET_BIN, PATH; hack/network/build-rlark-net builds it)",
        );
      // The hop's TLS port presents the hub's certificate (host.crt, over host.key) and checks
      // agents' certificates against the CA.
      const caPath = path.join(options.dataDir, "pki", "hop-ca.crt");
      if (options.sshFrontHop) writeFileSync(caPath, tunnel.ca.certPem, { mode: 0o644 });
      sshFront = createSshFront({
        sessions,
        bastion,
        binary,
        dataDir: options.dataDir,
        hostKeyPath: path.join(options.dataDir, "pki", "host.key"),
        logger,
        ...(options.sshFrontHop
          ? {
              hop: {
                listen: options.sshFrontHop,
                certPath: path.join(options.dataDir, "pki", "host.crt"),
                caPath,
              },
            }
          : {}),
      });
      const port = await sshFront.listen(frontAt.port, frontAt.host);
      sshFrontAddress = `${frontAt.host === "0.0.0.0" ? "127.0.0.1" : frontAt.host}:${port}`;
    }
    if (options.domainRelay) {
      const relayAt = splitHostPort(options.domainRelay);
      domainRelay = createDomainRelay({
        store,
        ca: tunnel.ca,
        dataDir: options.dataDir,
        registry,
        logger,
        ...(options.domainRelayEngine ? { engine: options.domainRelayEngine } : {}),
        ...(options.rlarkNet ? { rlarkNet: options.rlarkNet } : {}),
      });
      const port = await domainRelay.listen(relayAt.port, relayAt.host);
      domainRelayAddress = `${relayAt.host === "0.0.0.0" ? "127.0.0.1" : relayAt.host}:${port}`;
    }
    await manager.start();
    await source?.watcher.start();
    feedback?.start();
    started = true;
    logger.info("hub started", { url: http.url, dataDir: options.dataDir, repo: source?.repository.url });
    const listeners = leadingListeners ?? [];
    leadingListeners = undefined;
    for (const listener of listeners) listener();
  };
  let election: LeaderElection | undefined;
  if (settings.backend === "kubernetes" && kubeConfig) {
    const le = options.leaderElection ?? {};
    election = new LeaderElection({
      kubeConfig,
      namespace: settings.namespace,
      name: le.leaseName ?? "rlark-hub",
      ...(le.identity ? { identity: le.identity } : {}),
      ...(le.leaseMs ? { leaseMs: le.leaseMs } : {}),
      ...(le.renewDeadlineMs ? { renewDeadlineMs: le.renewDeadlineMs } : {}),
      ...(le.retryMs ? { retryMs: le.retryMs } : {}),
      logger,
      onStartedLeading: lead,
      onStoppedLeading: () => {
        started = false;
        logger.error("this hub lost its lease and stops leading", {});
        (le.onLost ?? (() => process.exit(1)))();
      },
    });
    logger.info("hub started as a candidate", { url: http.url, identity: election.identity });
    election.start();
  } else await lead();

  return {
    store,
    manager,
    registry,
    source,
    statusWriter: feedback?.statusWriter,
    adminToken,
    url: http.url,
    httpRoutes: http.routes,
    get sshAddress() {
      return `${sshHost}:${sshPort}`;
    },
    get sshFront() {
      return sshFront && sshFrontAddress ? { address: sshFrontAddress, process: sshFront } : undefined;
    },
    caFingerprint: tunnel.ca.fingerprint,
    sealKeys,
    ...(http.dashboard ? { dashboard: http.dashboard } : {}),
    pki: tunnel,
    tunnel: tunnel.server,
    bastion,
    audit,
    get knownHosts() {
      return knownHostsLine(sshHost, sshPort, tunnel.host.privateKeyPem);
    },
    get domainRelay() {
      return domainRelay;
    },
    get domainRelayAddress() {
      return domainRelayAddress;
    },
    leading: () => (election ? election.leading : true),
    onLeading(listener) {
      if (leadingListeners) leadingListeners.push(listener);
      else listener();
    },
    setClusterTester(tester) {
      clusterTester = tester;
    },
    async stop() {
      started = false;
      terminal.close();
      await http.close();
      await domainRelay?.close();
      await sshFront?.close();
      sessions.stop();
      await tunnel.server.close();
      agentSync.close();
      await source?.watcher.stop();
      await feedback?.stop();
      await manager.stop();
      // Released only now that nothing of this hub writes any more: a standby leads at once.
      await election?.stop();
      await store.close();
    },
  };
}
