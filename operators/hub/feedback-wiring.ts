// The hub's feedback: commit statuses and pull-request plans on the code host, and the status
// branch. Built in two steps because the source needs the sync-status reporter (it wraps every
// revision) and the reviewer and the status branch need the source's repository.
import type { SealCheck } from "../api/index.ts";
import {
  createPullRequestReviewer,
  createStatusBranchWriter,
  createSyncStatusReporter,
  createTunnelDryRunner,
  type FeedbackProvider,
  liveFromStore,
  loadFeedbackProvider,
  type ProviderConfig,
  type PullRequestReviewer,
  type RepoRef,
  repoRefFromUrl,
  type StatusBranchWriter,
  type SyncStatusReporter,
} from "../feedback/index.ts";
import type { Logger } from "../lib/logger.ts";
import { type KeptWatch, keepWatching, type Store } from "../lib/store/index.ts";
import { DRY_RUN_PURPOSE, MAX_DRY_RUN_ANSWER_BYTES, type TunnelServer } from "../lib/tunnel/index.ts";
import { loadWebhookSecrets, type WebhookIntake } from "../source/index.ts";
import type { HubSource } from "./source-wiring.ts";
import { createStatusDocuments, STATUS_KINDS } from "./status-documents.ts";

export interface CodeHostSettings {
  provider: ProviderConfig;
  /** Names this hub in status contexts when several hubs watch one repository. */
  hubName?: string;
  dashboardUrl?: string;
  /** Poll open pull requests this often, for hubs without a webhook; 0 disables. */
  pollIntervalMs?: number;
}

/** The code host a hub reports to, and its `rlark/sync` reporter. */
export interface CodeHost {
  settings: CodeHostSettings;
  provider: FeedbackProvider;
  repo: RepoRef;
  syncStatus: SyncStatusReporter;
}

export async function connectCodeHost(
  repo: string,
  settings: CodeHostSettings,
  logger: Logger,
): Promise<CodeHost> {
  const provider = await loadFeedbackProvider(settings.provider, { logger });
  const repoRef = repoRefFromUrl(repo);
  const syncStatus = createSyncStatusReporter({
    provider,
    repo: repoRef,
    ...(settings.hubName ? { hubName: settings.hubName } : {}),
    ...(settings.dashboardUrl ? { dashboardUrl: settings.dashboardUrl } : {}),
    logger,
  });
  return { settings, provider, repo: repoRef, syncStatus };
}

export interface HubFeedbackOptions {
  store: Store;
  dataDir: string;
  source: HubSource;
  /** The manifests' folder, as the source reads it. */
  path: string;
  codeHost?: CodeHost;
  /** Status branch for feedback commits; undefined disables them. */
  statusBranch?: string;
  statusDebounceMs?: number;
  webhookSecretFile?: string;
  /** Shared with the push webhook: one body budget and one memory of deliveries on /hooks/git. */
  intake: WebhookIntake;
  tunnel: TunnelServer;
  logger: Logger;
  /** Plans check SealedSecret values as the hub's revisions are checked. */
  sealCheck?: SealCheck;
}

export interface HubFeedback {
  reviewer?: PullRequestReviewer;
  statusWriter?: StatusBranchWriter;
  start(): void;
  stop(): Promise<void>;
}

export async function createHubFeedback(options: HubFeedbackOptions): Promise<HubFeedback> {
  const { store, codeHost, logger } = options;
  const reviewer = codeHost
    ? createPullRequestReviewer({
        provider: codeHost.provider,
        repo: codeHost.repo,
        repository: options.source.repository,
        path: options.path,
        live: () => liveFromStore(store),
        secrets: () => loadWebhookSecrets({ file: options.webhookSecretFile }),
        intake: options.intake,
        ...(codeHost.settings.hubName ? { hubName: codeHost.settings.hubName } : {}),
        ...(codeHost.settings.dashboardUrl ? { dashboardUrl: codeHost.settings.dashboardUrl } : {}),
        dryRunner: createTunnelDryRunner({
          request: (cluster, body) =>
            options.tunnel.request(cluster, DRY_RUN_PURPOSE, body, {
              maxResponseBytes: MAX_DRY_RUN_ANSWER_BYTES,
            }),
        }),
        pollIntervalMs: codeHost.settings.pollIntervalMs ?? 60_000,
        ...(options.sealCheck ? { sealCheck: options.sealCheck } : {}),
        logger,
      })
    : undefined;

  let statusWriter: StatusBranchWriter | undefined;
  /** Set by start(): this hub leads. */
  let started = false;
  const statusWatches: KeptWatch[] = [];
  if (options.statusBranch) {
    const writer = createStatusBranchWriter({
      remote: options.source.repository,
      dataDir: options.dataDir,
      statusBranch: options.statusBranch,
      debounceMs: options.statusDebounceMs,
      documents: createStatusDocuments(store),
      logger,
    });
    writer.on("failed", (error) => logger.warn("status commit failed", { error: error.message }));
    const resourceVersion = await store.resourceVersion();
    // Only the leader commits status: a standby's store sees every change the leader makes, and
    // committing them too raced the leader's pushes on the status branch (found by the chaos
    // soak). The watches run from the start; what they see is written once start() has run.
    // Kept open: a watch that ended (an apiserver restart) used to stop status commits for good.
    const notify = () => {
      if (started) writer.notify();
    };
    for (const kind of STATUS_KINDS) {
      statusWatches.push(
        await keepWatching(store, kind, notify, { logger, resourceVersion, onResync: notify }),
      );
    }
    statusWriter = writer;
  }

  return {
    ...(reviewer ? { reviewer } : {}),
    ...(statusWriter ? { statusWriter } : {}),
    start() {
      started = true;
      reviewer?.start();
      // What changed while this hub stood by: the leader before it may not have written it all.
      statusWriter?.notify();
    },
    async stop() {
      for (const watch of statusWatches) watch.stop();
      await statusWriter?.stop({ flush: true });
      await reviewer?.stop();
      codeHost?.syncStatus.stop();
    },
  };
}
