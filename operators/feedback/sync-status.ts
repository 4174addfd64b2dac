// The `rlark/sync` commit status of every revision the hub syncs on its tracked branch:
// pending when it starts applying, success with the counts, or failure with the first errors.
// Reporting never blocks reconciliation: calls return at once, statuses go out from an outbox
// (latest state per revision wins) with backoff, so a code-host outage only delays them.
import type { Diagnostic } from "../api/index.ts";
import { type Clock, systemClock, type TimerId } from "../lib/clock.ts";
import { type Logger, silentLogger } from "../lib/logger.ts";
import type {
  ApplyRevision,
  ApplyRevisionInput,
  ApplyRevisionResult,
  SnapshotChanges,
} from "../source/index.ts";
import { type CommitStatus, type FeedbackProvider, fitDescription, type RepoRef } from "./providers/index.ts";

export const SYNC_CONTEXT = "rlark/sync";

export interface SyncStatusReporterOptions {
  provider: FeedbackProvider;
  repo: RepoRef;
  /** Named in the context (`rlark/sync (prod)`) when several hubs watch one repository. */
  hubName?: string;
  /** Target URL of every status: the hub's dashboard. */
  dashboardUrl?: string;
  /** First retry delay after a failed send; doubles up to `maxRetryMs`. Default 5 s. */
  retryBaseMs?: number;
  maxRetryMs?: number;
  /** Revisions whose statuses wait for the host at most; the oldest are dropped beyond. Default 100. */
  maxPending?: number;
  clock?: Clock;
  logger?: Logger;
}

export type SyncCounts = Pick<SnapshotChanges, "created" | "changed" | "deleted"> &
  Partial<Pick<SnapshotChanges, "bundleObjects">>;

/** An ApplyRevision whose result may say what changed, for the success description. */
export type CountingApplyRevision = (
  input: ApplyRevisionInput,
) => Promise<ApplyRevisionResult & { changes?: SyncCounts }>;

export interface SyncStatusReporter {
  readonly context: string;
  started(revision: string): void;
  applied(revision: string, counts: SyncCounts): void;
  refused(revision: string, errors: readonly Diagnostic[]): void;
  /** Wraps the source's applyRevision so every revision reports pending, then success or failure. */
  wrap(apply: CountingApplyRevision): ApplyRevision;
  /** Resolves when every status has been accepted by the host (or the reporter stopped). */
  flush(): Promise<void>;
  /** Statuses not yet accepted by the host. */
  pending(): number;
  stop(): void;
}

export function syncContext(hubName?: string): string {
  return hubName ? `${SYNC_CONTEXT} (${hubName})` : SYNC_CONTEXT;
}

/**
 * `applied: 3 created, 1 changed, 0 deleted`, and, when Bundles' manifests changed,
 * `; Bundle objects: 2 created, 1 changed, 0 deleted` (what the clusters' agents will apply and prune).
 */
export function describeApplied(counts: SyncCounts): string {
  const text = `applied: ${counts.created} created, ${counts.changed} changed, ${counts.deleted} deleted`;
  const b = counts.bundleObjects;
  if (!b || b.created + b.changed + b.deleted === 0) return text;
  return `${text}; Bundle objects: ${b.created} created, ${b.changed} changed, ${b.deleted} deleted`;
}

/** `refused: 3 errors: jobs/a.yaml:4 /spec/x: message; …`, fitted to the host's limit. */
export function describeRefused(errors: readonly Diagnostic[]): string {
  const first = errors.slice(0, 3).map((e) => {
    const where = e.line > 0 ? `${e.file}:${e.line}` : e.file;
    return `${where}${e.path ? ` ${e.path}` : ""}: ${e.message}`;
  });
  const count = `${errors.length} error${errors.length === 1 ? "" : "s"}`;
  return fitDescription(`refused, ${count}: ${first.join("; ")}`);
}

export function createSyncStatusReporter(options: SyncStatusReporterOptions): SyncStatusReporter {
  return new Reporter(options);
}

class Reporter implements SyncStatusReporter {
  readonly context: string;
  #o: SyncStatusReporterOptions;
  #clock: Clock;
  #log: Logger;
  /** Revision → the latest status not yet sent; insertion order is the send order. */
  #outbox = new Map<string, CommitStatus>();
  #sending: Promise<void> | undefined;
  #timer: TimerId | undefined;
  #failures = 0;
  #stopped = false;
  #waiters: (() => void)[] = [];

  constructor(options: SyncStatusReporterOptions) {
    this.#o = options;
    this.context = syncContext(options.hubName);
    this.#clock = options.clock ?? systemClock;
    this.#log = options.logger ?? silentLogger;
  }

  started(revision: string): void {
    this.#put(revision, "pending", `applying ${revision.slice(0, 7)}…`);
  }

  applied(revision: string, counts: SyncCounts): void {
    this.#put(revision, "success", describeApplied(counts));
  }

  refused(revision: string, errors: readonly Diagnostic[]): void {
    this.#put(revision, "failure", describeRefused(errors));
  }

  wrap(apply: CountingApplyRevision): ApplyRevision {
    return async (input) => {
      this.started(input.revision);
      let result: Awaited<ReturnType<CountingApplyRevision>>;
      try {
        result = await apply(input);
      } catch (error) {
        // Not the revision's fault (store down): the watcher retries; say so without failing it.
        this.#put(input.revision, "pending", "apply failed; retrying");
        throw error;
      }
      if (result.accepted)
        this.applied(input.revision, result.changes ?? { created: 0, changed: 0, deleted: 0 });
      else this.refused(input.revision, result.errors);
      return { accepted: result.accepted, errors: result.errors };
    };
  }

  pending(): number {
    return this.#outbox.size;
  }

  flush(): Promise<void> {
    if (this.#outbox.size === 0 && !this.#sending) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    for (const waiter of this.#waiters.splice(0)) waiter();
  }

  #put(revision: string, state: CommitStatus["state"], description: string): void {
    if (this.#stopped) return;
    this.#outbox.delete(revision);
    this.#outbox.set(revision, {
      context: this.context,
      state,
      description,
      ...(this.#o.dashboardUrl ? { targetUrl: this.#o.dashboardUrl } : {}),
    });
    const max = this.#o.maxPending ?? 100;
    while (this.#outbox.size > max) {
      const oldest = this.#outbox.keys().next().value;
      if (oldest === undefined) break;
      this.#outbox.delete(oldest);
    }
    this.#kick();
  }

  #kick(): void {
    if (this.#sending || this.#timer || this.#stopped) return;
    this.#sending = this.#drain().finally(() => {
      this.#sending = undefined;
      if (this.#outbox.size > 0 && !this.#timer && !this.#stopped) this.#kick();
      else if (this.#outbox.size === 0) for (const waiter of this.#waiters.splice(0)) waiter();
    });
  }

  async #drain(): Promise<void> {
    for (;;) {
      const next = this.#outbox.entries().next();
      if (next.done || this.#stopped) return;
      const [revision, status] = next.value;
      try {
        await this.#o.provider.setCommitStatus(this.#o.repo, revision, status);
        this.#failures = 0;
        // A newer state for the same revision may have arrived while this one was in flight.
        if (this.#outbox.get(revision) === status) this.#outbox.delete(revision);
      } catch (error) {
        this.#failures++;
        const delay = Math.min(
          (this.#o.retryBaseMs ?? 5_000) * 2 ** Math.min(this.#failures - 1, 20),
          this.#o.maxRetryMs ?? 300_000,
        );
        this.#log.warn("commit status not sent; retrying", {
          revision,
          context: this.context,
          retryInMs: delay,
          error: error instanceof Error ? error.message : String(error),
        });
        this.#timer = this.#clock.setTimeout(() => {
          this.#timer = undefined;
          this.#kick();
        }, delay);
        return;
      }
    }
  }
}
