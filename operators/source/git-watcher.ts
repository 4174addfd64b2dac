import { EventEmitter } from "node:events";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Diagnostic } from "../api/index.ts";
import { type Clock, systemClock, type TimerId } from "../lib/clock.ts";
import { type Logger, silentLogger } from "../lib/logger.ts";
import type { GitRepository } from "./git-repository.ts";
import { checkManifestDir, normaliseSourcePath } from "./manifest-dir.ts";

/** The validator's diagnostic: file:line:column, object, field, rule, message. */
export type SourceDiagnostic = Diagnostic;

export interface ApplyRevisionInput {
  /** Full commit id. */
  revision: string;
  /** Root of the revision's checked-out tree (read-only by convention). */
  dir: string;
  /** The manifests' directory inside `dir`, repo-relative ("." for the root). */
  path: string;
  /**
   * Each regular file's identity at this revision (git's blob id; GitRepository.blobs), by path
   * relative to `dir` with `/` separators: a file whose identity is that of a file already parsed
   * is not read again. Without it, or for a file not in it, the file is read and hashed.
   */
  blobs?: ReadonlyMap<string, string>;
}

export interface ApplyRevisionResult {
  accepted: boolean;
  errors: SourceDiagnostic[];
}

/** Loads, validates and applies one revision atomically; `accepted: false` leaves the store untouched. */
export type ApplyRevision = (input: ApplyRevisionInput) => Promise<ApplyRevisionResult>;

export type SourceState = "Synced" | "Invalid" | "FetchFailed" | "Pending";

/** What `rlark status` and `GET /api/v1/source` show. Times are ISO 8601. */
export interface SourceStatus {
  /** Credentials scrubbed. */
  url: string;
  branch: string;
  path: string;
  lastFetchTime: string | null;
  lastAppliedRevision: string | null;
  lastAppliedTime: string | null;
  lastAttemptedRevision: string | null;
  errors: SourceDiagnostic[];
  fetchError?: string;
  state: SourceState;
}

export interface GitWatcherOptions {
  repository: GitRepository;
  applyRevision: ApplyRevision;
  /** Where `source-state.json` keeps the last applied revision across restarts. */
  dataDir: string;
  /** Manifests' directory inside the repository; default the root. */
  path?: string;
  /** Poll interval in ms; default 60 s. */
  intervalMs?: number;
  /** First retry delay after a failed fetch; doubles up to `maxBackoffMs` (and never beyond the interval). */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** Apply the persisted last revision again on start (for stores that do not survive a restart). */
  reapplyOnStart?: boolean;
  clock?: Clock;
  logger?: Logger;
}

export interface GitWatcherMetrics {
  /** Seconds since the running revision was applied; null before the first one. */
  revisionAgeSeconds: number | null;
  /** Seconds since the last successful fetch; null before the first one. */
  lastFetchAgeSeconds: number | null;
  consecutiveFetchFailures: number;
}

export interface GitWatcher {
  /** Loads persisted state and starts polling (the first sync runs at once). */
  start(): Promise<void>;
  /** Stops polling and waits for a sync in progress. */
  stop(): Promise<void>;
  /** Fetch now (a webhook said so). Concurrent triggers share one sync; resolves after it. */
  trigger(): Promise<SourceStatus>;
  status(): SourceStatus;
  metrics(): GitWatcherMetrics;
  on(event: "status", listener: (status: SourceStatus) => void): this;
  off(event: "status", listener: (status: SourceStatus) => void): this;
}

interface PersistedState {
  url: string;
  branch: string;
  path: string;
  lastAppliedRevision: string | null;
  lastAppliedTime: string | null;
}

const SOURCE_STATE_FILE = "source-state.json";

/**
 * The revision the hub with this data dir last applied, read from its state file (other processes,
 * such as `rlark token create`, ask); null when it has applied none yet.
 */
export async function lastAppliedRevision(dataDir: string): Promise<string | null> {
  try {
    const saved = JSON.parse(
      await readFile(join(dataDir, SOURCE_STATE_FILE), "utf8"),
    ) as Partial<PersistedState>;
    return typeof saved.lastAppliedRevision === "string" ? saved.lastAppliedRevision : null;
  } catch {
    return null;
  }
}

export function createGitWatcher(options: GitWatcherOptions): GitWatcher {
  return new Watcher(options);
}

class Watcher extends EventEmitter<{ status: [SourceStatus] }> implements GitWatcher {
  #repo: GitRepository;
  #apply: ApplyRevision;
  #clock: Clock;
  #log: Logger;
  #interval: number;
  #initialBackoff: number;
  #maxBackoff: number;
  #reapply: boolean;
  #stateFile: string;
  #status: SourceStatus;
  #fetchFailures = 0;
  #applyFailures = 0;
  /** The attempted revision was refused for its content: do not try it again until the branch moves. */
  #refused = false;
  #timer: TimerId | undefined;
  #running: Promise<void> | undefined;
  #rerun = false;
  #waiters: Array<(status: SourceStatus) => void> = [];
  #started = false;
  #loading: Promise<void> | undefined;
  #stopped = false;

  constructor(options: GitWatcherOptions) {
    super();
    this.#repo = options.repository;
    this.#apply = options.applyRevision;
    this.#clock = options.clock ?? systemClock;
    this.#log = options.logger ?? silentLogger;
    this.#interval = options.intervalMs ?? 60_000;
    this.#initialBackoff = options.initialBackoffMs ?? 1_000;
    this.#maxBackoff = options.maxBackoffMs ?? 300_000;
    this.#reapply = options.reapplyOnStart ?? false;
    this.#stateFile = join(options.dataDir, SOURCE_STATE_FILE);
    this.#status = {
      url: options.repository.url,
      branch: options.repository.branch,
      path: normaliseSourcePath(options.path),
      lastFetchTime: null,
      lastAppliedRevision: null,
      lastAppliedTime: null,
      lastAttemptedRevision: null,
      errors: [],
      state: "Pending",
    };
  }

  status(): SourceStatus {
    return structuredClone(this.#status);
  }

  metrics(): GitWatcherMetrics {
    const age = (iso: string | null) => (iso === null ? null : (this.#clock.now() - Date.parse(iso)) / 1000);
    return {
      revisionAgeSeconds: age(this.#status.lastAppliedTime),
      lastFetchAgeSeconds: age(this.#status.lastFetchTime),
      consecutiveFetchFailures: this.#fetchFailures,
    };
  }

  async start(): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    await this.#loaded();
    this.#kick();
  }

  /** Loads the persisted state once, whether start() or an early trigger() comes first. */
  #loaded(): Promise<void> {
    this.#loading ??= this.#loadState();
    return this.#loading;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#running;
    for (const waiter of this.#waiters.splice(0)) waiter(this.status());
  }

  trigger(): Promise<SourceStatus> {
    if (this.#stopped) return Promise.resolve(this.status());
    return new Promise((resolve) => {
      this.#waiters.push(resolve);
      this.#kick();
    });
  }

  #kick(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#rerun = true;
      return;
    }
    if (this.#timer) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#running = this.#loop();
  }

  async #loop(): Promise<void> {
    let delay = this.#interval;
    await this.#loaded();
    do {
      this.#rerun = false;
      const waiters = this.#waiters.splice(0);
      delay = await this.#syncOnce().catch((error: unknown) => {
        // A bug or an I/O failure outside fetch and apply must not end the loop.
        this.#applyFailures++;
        this.#log.warn("git source sync failed", {
          error: this.#repo.redact(error instanceof Error ? error.message : String(error)),
        });
        return this.#backoff(this.#applyFailures);
      });
      const status = this.status();
      this.emit("status", status);
      for (const waiter of waiters) waiter(status);
    } while ((this.#rerun || this.#waiters.length > 0) && !this.#stopped);
    // Cleared here, synchronously with the last check above, so a trigger arriving now starts a new loop.
    this.#running = undefined;
    if (!this.#stopped) this.#timer = this.#clock.setTimeout(() => this.#kick(), delay);
  }

  #backoff(failures: number): number {
    const exponential = this.#initialBackoff * 2 ** Math.min(Math.max(failures, 1) - 1, 30);
    return Math.min(exponential, this.#maxBackoff, this.#interval);
  }

  /** One fetch-and-apply; returns how long to wait before the next. */
  async #syncOnce(): Promise<number> {
    const status = this.#status;
    let revision: string;
    try {
      revision = await this.#repo.fetch();
    } catch (error) {
      this.#fetchFailures++;
      status.fetchError = this.#repo.redact(error instanceof Error ? error.message : String(error));
      status.state = "FetchFailed";
      const delay = this.#backoff(this.#fetchFailures);
      this.#log.warn("git fetch failed; keeping the last good revision", {
        url: status.url,
        error: status.fetchError,
        retryInMs: delay,
      });
      return delay;
    }
    this.#fetchFailures = 0;
    delete status.fetchError;
    status.lastFetchTime = new Date(this.#clock.now()).toISOString();

    if (revision === status.lastAppliedRevision && !this.#reapply) {
      status.lastAttemptedRevision = revision;
      status.errors = [];
      status.state = "Synced";
      this.#refused = false;
      return this.#interval;
    }
    if (revision === status.lastAttemptedRevision && this.#refused) {
      status.state = "Invalid";
      return this.#interval;
    }

    this.#reapply = false;
    status.lastAttemptedRevision = revision;
    let result: ApplyRevisionResult;
    try {
      const dir = await this.#repo.materialise(revision);
      const problem = await checkManifestDir(dir, status.path, revision);
      if (problem) {
        result = { accepted: false, errors: [problem] };
      } else {
        // Without git's ids (an older repository object, or git failed) the files are hashed.
        const blobs = await this.#repo.blobs?.(revision).catch(() => undefined);
        result = await this.#apply({ revision, dir, path: status.path, ...(blobs ? { blobs } : {}) });
      }
    } catch (error) {
      // Not the revision's fault (store down, disk full): retry it with backoff.
      this.#applyFailures++;
      this.#refused = false;
      status.errors = [
        applyFailed(this.#repo.redact(error instanceof Error ? error.message : String(error))),
      ];
      status.state = "Invalid";
      return this.#backoff(this.#applyFailures);
    }
    this.#applyFailures = 0;

    if (result.accepted) {
      status.lastAppliedRevision = revision;
      status.lastAppliedTime = new Date(this.#clock.now()).toISOString();
      status.errors = [];
      status.state = "Synced";
      this.#refused = false;
      this.#log.info("applied revision", { revision, url: status.url, branch: status.branch });
      await this.#saveState();
    } else {
      status.errors = result.errors;
      status.state = "Invalid";
      this.#refused = true;
      this.#log.warn("refused revision; the last good one stays applied", {
        revision,
        errors: result.errors.length,
        lastAppliedRevision: status.lastAppliedRevision,
      });
    }
    const keep = [revision, status.lastAppliedRevision].filter((r): r is string => r !== null);
    await this.#repo.pruneSnapshots(keep).catch(() => {});
    return this.#interval;
  }

  async #loadState(): Promise<void> {
    let saved: Partial<PersistedState>;
    try {
      saved = JSON.parse(await readFile(this.#stateFile, "utf8")) as Partial<PersistedState>;
    } catch {
      return;
    }
    const status = this.#status;
    // A different repo, branch or path makes the old revision meaningless.
    if (saved.url !== status.url || saved.branch !== status.branch || saved.path !== status.path) return;
    if (typeof saved.lastAppliedRevision === "string") status.lastAppliedRevision = saved.lastAppliedRevision;
    if (typeof saved.lastAppliedTime === "string") status.lastAppliedTime = saved.lastAppliedTime;
  }

  async #saveState(): Promise<void> {
    const status = this.#status;
    const state: PersistedState = {
      url: status.url,
      branch: status.branch,
      path: status.path,
      lastAppliedRevision: status.lastAppliedRevision,
      lastAppliedTime: status.lastAppliedTime,
    };
    const temp = `${this.#stateFile}.tmp`;
    await mkdir(join(this.#stateFile, ".."), { recursive: true });
    await writeFile(temp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
    await rename(temp, this.#stateFile);
  }
}

function applyFailed(message: string): SourceDiagnostic {
  return { file: "", line: 0, column: 0, kind: "", name: "", path: "", rule: "source/apply", message };
}
