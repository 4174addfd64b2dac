// Writes issued in the same event-loop turn share one transaction (group commit), each inside
// its own savepoint so one failing write fails alone. A write resolves once its commit is
// durable: at COMMIT (inline) or, pipelined, once an fdatasync of the WAL that covers it has
// completed off the event loop; every commit made during one sync shares the next.

import { fstatSync } from "node:fs";
import { checkpoint, type SqliteFile } from "./sqlite-file.ts";
import type { Journal } from "./sqlite-journal.ts";
import type { ChangeRecord } from "./watchers.ts";

export type Fdatasync = (fd: number, callback: (error: NodeJS.ErrnoException | null) => void) => void;

export interface GroupCommitOptions {
  file: SqliteFile;
  journal: Journal;
  /** WAL size that triggers a checkpoint in pipelined mode. */
  checkpointBytes: number;
  fdatasync: Fdatasync;
  /** Called with each durable commit's changes, in commit order. */
  deliver: (changes: ChangeRecord[]) => void;
}

interface Pending {
  run: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

type WriteOutcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** Commits waiting for the sync that makes them durable. */
interface Unsynced {
  batch: Pending[];
  outcomes: WriteOutcome[];
  changes: ChangeRecord[];
}

export class GroupCommit {
  #options: GroupCommitOptions;
  #queue: Pending[] = [];
  #flushScheduled = false;
  #closed = false;
  #unsynced: Unsynced[] = [];
  #syncing: Promise<void> | undefined;
  /** A failed sync leaves the disk state unknown: refuse writes until restarted. */
  #failed: Error | undefined;

  constructor(options: GroupCommitOptions) {
    this.#options = options;
  }

  get closed(): boolean {
    return this.#closed;
  }

  get failed(): Error | undefined {
    return this.#failed;
  }

  /** Runs `run` inside the next transaction; resolves with its value once that is durable. */
  write(run: () => unknown): Promise<unknown> {
    if (this.#closed) return Promise.reject(new Error(`store ${this.#options.file.file} is closed`));
    if (this.#failed) return Promise.reject(this.#failed);
    return new Promise((resolve, reject) => {
      this.#queue.push({ run, resolve, reject });
      if (!this.#flushScheduled) {
        this.#flushScheduled = true;
        setImmediate(() => this.#flush());
      }
    });
  }

  /** Commits what is queued, refuses further writes, and waits for the last sync. */
  async close(): Promise<void> {
    this.#flush();
    this.#closed = true;
    while (this.#syncing) {
      await this.#syncing;
      if (!this.#failed) this.#syncSoon();
    }
    if (this.#unsynced.length > 0) {
      // Only after a failed sync: these commits are not known to be durable.
      this.#settle(
        this.#unsynced.splice(0),
        this.#failed ?? new Error(`store ${this.#options.file.file} closed`),
      );
    }
  }

  #flush(): void {
    this.#flushScheduled = false;
    const batch = this.#queue;
    this.#queue = [];
    if (batch.length === 0) return;
    if (this.#failed) {
      for (const item of batch) item.reject(this.#failed);
      return;
    }
    const { file, journal } = this.#options;
    const db = file.db;
    const start = journal.mark();
    const outcomes: WriteOutcome[] = [];
    try {
      db.exec("BEGIN IMMEDIATE");
      for (const item of batch) {
        const mark = journal.mark();
        db.exec("SAVEPOINT op");
        try {
          const value = item.run();
          db.exec("RELEASE op");
          outcomes.push({ ok: true, value });
        } catch (error) {
          db.exec("ROLLBACK TO op");
          db.exec("RELEASE op");
          journal.rollBack(mark);
          outcomes.push({ ok: false, error });
        }
      }
      journal.save(start);
      db.exec("COMMIT");
    } catch (error) {
      if (db.isTransaction) db.exec("ROLLBACK");
      journal.rollBack(start);
      for (const item of batch) item.reject(error);
      return;
    }
    const committed: Unsynced = { batch, outcomes, changes: journal.takeChanges() };
    if (!file.pipelined) {
      this.#settle([committed], null);
      return;
    }
    this.#unsynced.push(committed);
    this.#syncSoon();
  }

  /** Starts a sync covering every commit so far, unless one is running (its end starts the next). */
  #syncSoon(): void {
    if (this.#syncing || this.#unsynced.length === 0) return;
    const { file } = this.#options;
    const group = this.#unsynced.splice(0);
    this.#syncing = new Promise<void>((resolve) => {
      this.#options.fdatasync(file.walFd, (error) => {
        this.#syncing = undefined;
        if (error) {
          this.#failed = new Error(`store ${file.file}: syncing the WAL failed (${error.message}); restart`);
        }
        this.#settle(group, this.#failed ?? null);
        // Commits made while the failed sync ran will never be synced: fail them too.
        if (this.#failed) this.#settle(this.#unsynced.splice(0), this.#failed);
        resolve();
        if (!this.#failed && !this.#closed) {
          this.#checkpointIfLarge();
          this.#syncSoon();
        }
      });
    });
  }

  /** Acknowledges durable commits in order and delivers their events; or fails them all. */
  #settle(groups: Unsynced[], error: Error | null): void {
    for (const { batch, outcomes, changes } of groups) {
      for (const [i, item] of batch.entries()) {
        const outcome = outcomes[i]!;
        if (error) item.reject(error);
        else if (outcome.ok) item.resolve(outcome.value);
        else item.reject(outcome.error);
      }
      if (!error) this.#options.deliver(changes);
    }
  }

  #checkpointIfLarge(): void {
    const { file, checkpointBytes } = this.#options;
    if (fstatSync(file.walFd).size < checkpointBytes) return;
    checkpoint(file);
  }
}
