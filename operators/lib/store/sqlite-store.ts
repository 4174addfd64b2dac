// The embedded backend: one SQLite file (node:sqlite), WAL, synchronous=FULL so a commit that
// was acknowledged survives kill -9 and power loss. Its steps, one module each:
//   sqlite-file.ts    the file, its pragmas and checkpoints (durability)
//   group-commit.ts   transactions: one per event-loop turn, a savepoint per write, WAL syncs
//   sqlite-writes.ts  object rules applied to rows, inside those transactions
//   sqlite-journal.ts the resourceVersion counter and the event log
//   sqlite-queries.ts get, list and label selection
//   watch-fanout.ts   durable changes offered to live watches
// An applyBatch is one savepoint, so all of it or none.

import { randomUUID } from "node:crypto";
import { fdatasync } from "node:fs";
import { type Clock, systemClock } from "../clock.ts";
import { StoreError } from "./errors.ts";
import { type Fdatasync, GroupCommit } from "./group-commit.ts";
import { toSelector } from "./label-selector.ts";
import { checkpoint, closeSqliteFile, openSqliteFile, type SqliteFile } from "./sqlite-file.ts";
import { Journal } from "./sqlite-journal.ts";
import { Queries } from "./sqlite-queries.ts";
import { Writes } from "./sqlite-writes.ts";
import type {
  BatchOp,
  DeleteOptions,
  KubeObject,
  ListOptions,
  ListResult,
  Store,
  WatchHandler,
  WatchOptions,
} from "./types.ts";
import { WatchFanout } from "./watch-fanout.ts";
import type { Watcher, WatchFilter } from "./watchers.ts";

export interface SqliteStoreOptions {
  /** Directory for `store.db` (created if missing), e.g. the hub's --data-dir. */
  dataDir: string;
  /** File name inside dataDir; default "store.db". */
  fileName?: string;
  clock?: Clock;
  /** Events kept for watch resumption; older resourceVersions are Expired. Default 10,000. */
  eventRetention?: number;
  /** uid generator, for deterministic tests. Default crypto.randomUUID. */
  newUid?: () => string;
  /**
   * How a commit is made durable before it is acknowledged:
   * "pipelined" (default): SQLite commits without syncing and the WAL is fdatasync'ed off the
   *   event loop; writes are acknowledged (and their watch events delivered) once a sync that
   *   covers them completes. The event loop never blocks on the disk and every write queued
   *   during one sync shares the next. Checkpoints run with synchronous=FULL.
   * "inline": synchronous=FULL, SQLite fsyncs inside COMMIT, blocking the event loop.
   * Either way an acknowledged write survives kill -9 and power loss.
   */
  durability?: "pipelined" | "inline";
  /** WAL size that triggers a checkpoint in pipelined mode. Default 64 MiB. */
  checkpointBytes?: number;
  /** fdatasync, replaceable so tests can hold a sync open or fail it. */
  fdatasync?: Fdatasync;
}

export class SqliteStore implements Store {
  readonly file: string;
  #file: SqliteFile;
  #journal: Journal;
  #queries: Queries;
  #writes: Writes;
  #commit: GroupCommit;
  #watches = new WatchFanout();

  constructor(options: SqliteStoreOptions) {
    this.#file = openSqliteFile(
      options.dataDir,
      options.fileName ?? "store.db",
      options.durability ?? "pipelined",
    );
    this.file = this.#file.file;
    const { db } = this.#file;
    this.#journal = new Journal(db, options.eventRetention ?? 10_000);
    this.#queries = new Queries(db);
    this.#writes = new Writes({
      db,
      queries: this.#queries,
      journal: this.#journal,
      clock: options.clock ?? systemClock,
      newUid: options.newUid ?? randomUUID,
    });
    this.#commit = new GroupCommit({
      file: this.#file,
      journal: this.#journal,
      checkpointBytes: options.checkpointBytes ?? 64 * 1024 * 1024,
      fdatasync: options.fdatasync ?? fdatasync,
      deliver: (changes) => this.#watches.deliver(changes),
    });
  }

  // ---- reads -------------------------------------------------------------------------------

  async get<T extends KubeObject = KubeObject>(
    kind: string,
    namespace: string | undefined,
    name: string,
  ): Promise<T | undefined> {
    this.#open();
    const json = this.#queries.json(kind, namespace ?? "", name);
    return json === undefined ? undefined : (JSON.parse(json) as T);
  }

  async list<T extends KubeObject = KubeObject>(
    kind: string,
    options: ListOptions = {},
  ): Promise<ListResult<T>> {
    this.#open();
    const selector = toSelector(options.labelSelector);
    return {
      items: this.#queries.select(kind, options.namespace, selector, options) as T[],
      resourceVersion: String(this.#journal.rv),
    };
  }

  async countByKind(): Promise<Record<string, number>> {
    this.#open();
    return this.#queries.countByKind();
  }

  async resourceVersion(): Promise<string> {
    return String(this.#journal.rv);
  }

  // ---- writes ------------------------------------------------------------------------------

  create<T extends KubeObject>(object: T): Promise<T & KubeObject> {
    const input = snapshot(object);
    return this.#commit.write(() => this.#writes.create(input)) as Promise<T & KubeObject>;
  }

  update<T extends KubeObject>(object: T): Promise<T & KubeObject> {
    const input = snapshot(object);
    return this.#commit.write(() => this.#writes.update(input)) as Promise<T & KubeObject>;
  }

  updateStatus<T extends KubeObject>(object: T): Promise<T & KubeObject> {
    const input = snapshot(object);
    return this.#commit.write(() => this.#writes.updateStatus(input)) as Promise<T & KubeObject>;
  }

  delete(
    kind: string,
    namespace: string | undefined,
    name: string,
    options: DeleteOptions = {},
  ): Promise<KubeObject> {
    return this.#commit.write(() =>
      this.#writes.delete(kind, namespace ?? "", name, options),
    ) as Promise<KubeObject>;
  }

  applyBatch(ops: readonly BatchOp[]): Promise<KubeObject[]> {
    const inputs = ops.map((op) => ("object" in op ? { ...op, object: snapshot(op.object) } : { ...op }));
    return this.#commit.write(() =>
      inputs.map((op, index) => {
        try {
          return this.#writes.apply(op);
        } catch (error) {
          if (error instanceof StoreError) {
            error.subject.batchIndex = index;
            error.message = `batch operation ${index} (${op.op}): ${error.message}`;
          }
          throw error;
        }
      }),
    ) as Promise<KubeObject[]>;
  }

  // ---- watch -------------------------------------------------------------------------------

  async watch<T extends KubeObject = KubeObject>(
    kind: string,
    options: WatchOptions,
    handler: WatchHandler<T>,
  ): Promise<Watcher> {
    this.#open();
    // Everything below runs without an await: the replay read and the registration see the same
    // committed state, so no change falls between them.
    const filter: WatchFilter = { namespace: options.namespace, selector: toSelector(options.labelSelector) };
    const from = options.resourceVersion;
    const replay =
      from !== undefined && from !== "" && from !== "0" ? this.#journal.since(kind, from) : undefined;
    // Commits awaiting their sync are already in the list or replay read above; the watcher
    // skips them when they are delivered.
    const seen = replay ? Number(from) : this.#journal.rv;
    return this.#watches.add(kind, filter, handler as WatchHandler<KubeObject>, seen, (watcher) => {
      if (replay) {
        for (const change of replay) watcher.offer(change);
      } else {
        for (const object of this.#queries.select(kind, filter.namespace, filter.selector)) {
          watcher.push("ADDED", JSON.stringify(object));
        }
      }
    });
  }

  // ---- lifecycle ---------------------------------------------------------------------------

  async close(): Promise<void> {
    if (this.#commit.closed) return;
    await this.#commit.close();
    this.#watches.stopAll();
    if (this.#file.pipelined && !this.#commit.failed) checkpoint(this.#file);
    closeSqliteFile(this.#file);
  }

  #open(): void {
    if (this.#commit.closed) throw new Error(`store ${this.file} is closed`);
  }
}

/**
 * The caller's object as it is now (writes run a moment later and the caller may change it
 * meanwhile), as JSON: what the store keeps is JSON anyway, and the round trip is faster than
 * structuredClone.
 */
function snapshot<T>(object: T): T {
  return JSON.parse(JSON.stringify(object)) as T;
}

/** Opens (creating or upgrading) `<dataDir>/store.db`. */
export function openSqliteStore(options: SqliteStoreOptions): SqliteStore {
  return new SqliteStore(options);
}
