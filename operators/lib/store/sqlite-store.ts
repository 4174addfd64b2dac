// The embedded backend: one SQLite file (node:sqlite), WAL, synchronous=FULL so a commit that
// was acknowledged survives kill -9 and power loss. Writes issued in the same event-loop turn
// share one transaction (group commit), each inside its own savepoint so one failing write
// fails alone; an applyBatch is one savepoint, so all of it or none.

import { randomUUID } from "node:crypto";
import { chmodSync, closeSync, fdatasync, fstatSync, fsyncSync, mkdirSync, openSync } from "node:fs";
import { dirname, join } from "node:path";
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { type Clock, systemClock } from "../clock.ts";
import {
  AlreadyExistsError,
  ConflictError,
  describe,
  ExpiredError,
  InvalidError,
  NotFoundError,
  StoreError,
} from "./errors.ts";
import { indexableRequirement, matches, type Selector, toSelector } from "./label-selector.ts";
import {
  applied,
  checkObject,
  created,
  deletedState,
  foregroundFinalizer,
  markedForDeletion,
  namespaceOf,
  type Outcome,
  statusUpdated,
  updated,
  withoutFinalizer,
  withoutOwner,
} from "./object-rules.ts";
import { migrate } from "./sqlite-schema.ts";
import type {
  BatchOp,
  DeleteOptions,
  KubeObject,
  ListOptions,
  ListResult,
  PropagationPolicy,
  Store,
  WatchHandler,
  WatchOptions,
} from "./types.ts";
import { type ChangeRecord, Watcher, type WatchFilter } from "./watchers.ts";

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
  fdatasync?: (fd: number, callback: (error: NodeJS.ErrnoException | null) => void) => void;
}

/** Commits waiting for the sync that makes them durable. */
interface Unsynced {
  batch: Pending[];
  outcomes: WriteOutcome[];
  changes: ChangeRecord[];
}

type WriteOutcome = { ok: true; value: unknown } | { ok: false; error: unknown };

interface Row {
  id: number;
  object: KubeObject;
}

interface Pending {
  run: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

const suffixAlphabet = "bcdfghjklmnpqrstvwxz2456789";

function randomSuffix(): string {
  let s = "";
  for (let i = 0; i < 5; i++) s += suffixAlphabet[Math.floor(Math.random() * suffixAlphabet.length)];
  return s;
}

function labelsJson(labels: Record<string, string> | undefined): string {
  return JSON.stringify(labels ?? {});
}

function ownerUids(object: KubeObject): string[] {
  return [...new Set((object.metadata.ownerReferences ?? []).map((r) => r.uid))];
}

function byNamespaceName(a: KubeObject, b: KubeObject): number {
  const na = a.metadata.namespace ?? "";
  const nb = b.metadata.namespace ?? "";
  if (na !== nb) return na < nb ? -1 : 1;
  return a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0;
}

export class SqliteStore implements Store {
  readonly file: string;
  #db: DatabaseSync;
  #clock: Clock;
  #retention: number;
  #newUid: () => string;
  #rv: number;
  #compactedThrough: number;
  #changes: ChangeRecord[] = [];
  #queue: Pending[] = [];
  #flushScheduled = false;
  #closed = false;
  #pipelined: boolean;
  #walFd = -1;
  #checkpointBytes: number;
  #fdatasync: NonNullable<SqliteStoreOptions["fdatasync"]>;
  #unsynced: Unsynced[] = [];
  #syncing: Promise<void> | undefined;
  /** A failed sync leaves the disk state unknown: refuse writes until restarted. */
  #failed: Error | undefined;
  #watchers = new Map<string, Set<Watcher>>();
  #s: Record<
    | "get"
    | "getById"
    | "getByUid"
    | "listKind"
    | "listKindNs"
    | "listLabel"
    | "listLabelNs"
    | "insert"
    | "update"
    | "remove"
    | "insertLabel"
    | "removeLabels"
    | "insertOwner"
    | "removeOwners"
    | "dependents"
    | "countDependents"
    | "insertEvent"
    | "events"
    | "compact"
    | "setMeta"
    | "counts",
    StatementSync
  >;

  constructor(options: SqliteStoreOptions) {
    mkdirSync(options.dataDir, { recursive: true });
    this.file = join(options.dataDir, options.fileName ?? "store.db");
    this.#clock = options.clock ?? systemClock;
    this.#retention = options.eventRetention ?? 10_000;
    this.#newUid = options.newUid ?? randomUUID;
    // Objects may carry credentials (Users' keys, tokens): owner-only, and SQLite gives its WAL
    // and shared-memory files the same mode as the database file.
    closeSync(openSync(this.file, "a", 0o600));
    chmodSync(this.file, 0o600);
    this.#db = new DatabaseSync(this.file);
    const db = this.#db;
    const mode = (db.prepare("PRAGMA journal_mode = WAL").get() as { journal_mode: string }).journal_mode;
    this.#pipelined = (options.durability ?? "pipelined") === "pipelined" && mode === "wal";
    this.#checkpointBytes = options.checkpointBytes ?? 64 * 1024 * 1024;
    this.#fdatasync = options.fdatasync ?? fdatasync;
    db.exec("PRAGMA synchronous = FULL");
    db.exec("PRAGMA foreign_keys = OFF");
    db.exec("PRAGMA busy_timeout = 5000");
    migrate(db, this.file);
    if (this.#pipelined) {
      // Checkpoints only when we say so, with full syncs: a WAL restart must never overwrite
      // frames whose pages are not yet safely in the database file.
      db.exec("PRAGMA wal_autocheckpoint = 0");
      db.exec("PRAGMA synchronous = OFF");
      this.#walFd = openSync(`${this.file}-wal`, "a", 0o600);
      const dirFd = openSync(dirname(this.file), "r");
      try {
        fsyncSync(dirFd);
      } finally {
        closeSync(dirFd);
      }
    }
    const meta = (key: string) =>
      Number((db.prepare("SELECT value FROM meta WHERE key = ?").get(key) as { value: string }).value);
    this.#rv = meta("resource_version");
    this.#compactedThrough = meta("compacted_through");
    const p = (sql: string) => db.prepare(sql);
    this.#s = {
      get: p("SELECT id, data FROM objects WHERE kind = ? AND namespace = ? AND name = ?"),
      getById: p("SELECT id, data FROM objects WHERE id = ?"),
      getByUid: p("SELECT id, data FROM objects WHERE uid = ?"),
      listKind: p("SELECT data FROM objects WHERE kind = ? ORDER BY namespace, name"),
      listKindNs: p("SELECT data FROM objects WHERE kind = ? AND namespace = ? ORDER BY name"),
      listLabel: p(
        "SELECT o.data FROM labels l JOIN objects o ON o.id = l.object_id WHERE l.key = ? AND l.value = ? AND o.kind = ?",
      ),
      listLabelNs: p(
        "SELECT o.data FROM labels l JOIN objects o ON o.id = l.object_id WHERE l.key = ? AND l.value = ? AND o.kind = ? AND o.namespace = ?",
      ),
      insert: p("INSERT INTO objects(kind, namespace, name, uid, rv, data) VALUES (?, ?, ?, ?, ?, ?)"),
      update: p("UPDATE objects SET rv = ?, data = ? WHERE id = ?"),
      remove: p("DELETE FROM objects WHERE id = ?"),
      insertLabel: p("INSERT INTO labels(object_id, key, value) VALUES (?, ?, ?)"),
      removeLabels: p("DELETE FROM labels WHERE object_id = ?"),
      insertOwner: p("INSERT OR IGNORE INTO owner_refs(owner_uid, object_id) VALUES (?, ?)"),
      removeOwners: p("DELETE FROM owner_refs WHERE object_id = ?"),
      dependents: p("SELECT object_id FROM owner_refs WHERE owner_uid = ? ORDER BY object_id"),
      countDependents: p("SELECT count(*) AS n FROM owner_refs WHERE owner_uid = ?"),
      insertEvent: p(
        "INSERT INTO events(rv, type, kind, namespace, data, prev_labels) VALUES (?, ?, ?, ?, ?, ?)",
      ),
      events: p(
        "SELECT rv, type, namespace, data, prev_labels FROM events WHERE kind = ? AND rv > ? ORDER BY rv",
      ),
      compact: p("DELETE FROM events WHERE rv <= ?"),
      setMeta: p("UPDATE meta SET value = ? WHERE key = ?"),
      counts: p("SELECT kind, count(*) AS n FROM objects GROUP BY kind ORDER BY kind"),
    };
  }

  // ---- reads -------------------------------------------------------------------------------

  async get<T extends KubeObject = KubeObject>(
    kind: string,
    namespace: string | undefined,
    name: string,
  ): Promise<T | undefined> {
    this.#open();
    const row = this.#s.get.get(kind, namespace ?? "", name) as { data: string } | undefined;
    return row ? (JSON.parse(row.data) as T) : undefined;
  }

  async list<T extends KubeObject = KubeObject>(
    kind: string,
    options: ListOptions = {},
  ): Promise<ListResult<T>> {
    this.#open();
    const selector = toSelector(options.labelSelector);
    return {
      items: this.#select(kind, options.namespace, selector) as T[],
      resourceVersion: String(this.#rv),
    };
  }

  #select(kind: string, namespace: string | undefined, selector: Selector): KubeObject[] {
    const parse = (rows: unknown[]) =>
      rows.map((r) => JSON.parse((r as { data: string }).data) as KubeObject);
    const indexed = indexableRequirement(selector);
    if (!indexed) {
      const rows =
        namespace === undefined ? this.#s.listKind.all(kind) : this.#s.listKindNs.all(kind, namespace);
      const items = parse(rows);
      return selector.requirements.length === 0
        ? items
        : items.filter((o) => matches(selector, o.metadata.labels));
    }
    const items: KubeObject[] = [];
    for (const value of indexed.values) {
      const rows =
        namespace === undefined
          ? this.#s.listLabel.all(indexed.key, value, kind)
          : this.#s.listLabelNs.all(indexed.key, value, kind, namespace);
      for (const o of parse(rows)) if (matches(selector, o.metadata.labels)) items.push(o);
    }
    return items.sort(byNamespaceName);
  }

  async countByKind(): Promise<Record<string, number>> {
    this.#open();
    const out: Record<string, number> = {};
    for (const row of this.#s.counts.all() as { kind: string; n: number }[]) out[row.kind] = row.n;
    return out;
  }

  async resourceVersion(): Promise<string> {
    return String(this.#rv);
  }

  // ---- writes ------------------------------------------------------------------------------

  create<T extends KubeObject>(object: T): Promise<T & KubeObject> {
    const input = snapshot(object);
    return this.#write(() => this.#create(input)) as Promise<T & KubeObject>;
  }

  update<T extends KubeObject>(object: T): Promise<T & KubeObject> {
    const input = snapshot(object);
    return this.#write(() => this.#update(input, updated)) as Promise<T & KubeObject>;
  }

  updateStatus<T extends KubeObject>(object: T): Promise<T & KubeObject> {
    const input = snapshot(object);
    return this.#write(() => this.#update(input, statusUpdated)) as Promise<T & KubeObject>;
  }

  delete(
    kind: string,
    namespace: string | undefined,
    name: string,
    options: DeleteOptions = {},
  ): Promise<KubeObject> {
    return this.#write(() => this.#deleteByKey(kind, namespace ?? "", name, options)) as Promise<KubeObject>;
  }

  applyBatch(ops: readonly BatchOp[]): Promise<KubeObject[]> {
    const inputs = ops.map((op) => ("object" in op ? { ...op, object: snapshot(op.object) } : { ...op }));
    return this.#write(() =>
      inputs.map((op, index) => {
        try {
          return this.#applyOp(op);
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

  #applyOp(op: BatchOp): KubeObject {
    switch (op.op) {
      case "create":
        return this.#create(op.object);
      case "update":
        return this.#update(op.object, updated);
      case "updateStatus":
        return this.#update(op.object, statusUpdated);
      case "apply":
        return this.#apply(op.object);
      case "delete":
        return this.#deleteByKey(op.kind, op.namespace ?? "", op.name, op.options ?? {});
      default:
        throw new InvalidError(`unknown batch operation ${JSON.stringify((op as { op: unknown }).op)}`);
    }
  }

  #create(input: KubeObject): KubeObject {
    const object = created(input, {
      uid: this.#newUid(),
      resourceVersion: this.#rv + 1,
      now: this.#clock.now(),
      suffix: randomSuffix(),
    });
    const { kind, metadata } = object;
    const ns = namespaceOf(object);
    if (this.#s.get.get(kind, ns, metadata.name)) {
      throw new AlreadyExistsError(`${describe(kind, ns, metadata.name)} already exists`, {
        kind,
        namespace: ns,
        name: metadata.name,
      });
    }
    this.#takeRv();
    const json = JSON.stringify(object);
    const { lastInsertRowid } = this.#s.insert.run(kind, ns, metadata.name, metadata.uid!, this.#rv, json);
    const id = Number(lastInsertRowid);
    this.#writeLabels(id, undefined, object);
    this.#writeOwners(id, undefined, object);
    this.#record("ADDED", object, json, undefined);
    return object;
  }

  #update(
    input: KubeObject,
    rule: (existing: KubeObject, input: KubeObject, rv: number) => Outcome,
  ): KubeObject {
    checkObject(input, false);
    const ns = namespaceOf(input);
    const row = this.#mustLoad(input.kind, ns, input.metadata.name);
    const { resourceVersion, uid } = input.metadata;
    if (
      resourceVersion !== undefined &&
      resourceVersion !== "" &&
      resourceVersion !== row.object.metadata.resourceVersion
    ) {
      throw new ConflictError(
        `${describe(input.kind, ns, input.metadata.name)} was modified (resourceVersion ${resourceVersion} is stale, now ${row.object.metadata.resourceVersion}): read it again and retry`,
        { kind: input.kind, namespace: ns, name: input.metadata.name },
      );
    }
    if (uid !== undefined && uid !== "" && uid !== row.object.metadata.uid) {
      throw new ConflictError(
        `${describe(input.kind, ns, input.metadata.name)} has uid ${row.object.metadata.uid}, not ${uid}: it was deleted and recreated`,
        { kind: input.kind, namespace: ns, name: input.metadata.name },
      );
    }
    return this.#commitOutcome(row, rule(row.object, input, this.#rv + 1));
  }

  #apply(input: KubeObject): KubeObject {
    checkObject(input, false);
    const row = this.#load(input.kind, namespaceOf(input), input.metadata.name);
    if (!row) {
      const fresh: KubeObject = { ...input, metadata: { ...input.metadata } };
      delete fresh.metadata.resourceVersion;
      return this.#create(fresh);
    }
    return this.#commitOutcome(row, applied(row.object, input, this.#rv + 1));
  }

  #commitOutcome(row: Row, outcome: Outcome): KubeObject {
    if (!outcome.changed) return outcome.object;
    if (outcome.removed) {
      this.#remove(row.id, outcome.object);
      return outcome.object;
    }
    this.#replace(row, outcome.object);
    return outcome.object;
  }

  #deleteByKey(kind: string, ns: string, name: string, options: DeleteOptions): KubeObject {
    const row = this.#mustLoad(kind, ns, name);
    const { uid, resourceVersion } = options.preconditions ?? {};
    if (uid !== undefined && uid !== row.object.metadata.uid) {
      throw new ConflictError(
        `${describe(kind, ns, name)}: precondition failed, uid is ${row.object.metadata.uid}`,
        {
          kind,
          namespace: ns,
          name,
        },
      );
    }
    if (resourceVersion !== undefined && resourceVersion !== row.object.metadata.resourceVersion) {
      throw new ConflictError(
        `${describe(kind, ns, name)}: precondition failed, resourceVersion is ${row.object.metadata.resourceVersion}`,
        { kind, namespace: ns, name },
      );
    }
    const propagation = options.propagation ?? "Background";
    if (!["Background", "Foreground", "Orphan"].includes(propagation)) {
      throw new InvalidError(
        `propagation must be Background, Foreground or Orphan, not ${String(propagation)}`,
      );
    }
    this.#delete(row, propagation);
    return this.#loadById(row.id)?.object ?? this.#lastDeleted(row.object);
  }

  /** After a removal the DELETED event carries the last state; find it among this write's changes. */
  #lastDeleted(object: KubeObject): KubeObject {
    for (let i = this.#changes.length - 1; i >= 0; i--) {
      const change = this.#changes[i]!;
      if (change.type === "DELETED" && change.kind === object.kind) {
        const gone = JSON.parse(change.json) as KubeObject;
        if (gone.metadata.uid === object.metadata.uid) return gone;
      }
    }
    return object;
  }

  #delete(row: Row, propagation: PropagationPolicy): void {
    const { object } = row;
    const uid = object.metadata.uid!;
    if (propagation === "Orphan") {
      for (const dep of this.#dependents(uid))
        this.#replace(dep, withoutOwner(dep.object, uid, this.#rv + 1));
    }
    if (propagation === "Foreground" && this.#countDependents(uid) > 0) {
      const marked = markedForDeletion(object, this.#clock.now(), this.#rv + 1, [foregroundFinalizer]);
      const already =
        object.metadata.deletionTimestamp && (object.metadata.finalizers ?? []).includes(foregroundFinalizer);
      if (!already) this.#replace(row, marked);
      for (const dep of this.#dependents(uid)) {
        if (!dep.object.metadata.deletionTimestamp) this.#delete(dep, "Foreground");
      }
      return;
    }
    if ((object.metadata.finalizers ?? []).length > 0) {
      if (!object.metadata.deletionTimestamp) {
        this.#replace(row, markedForDeletion(object, this.#clock.now(), this.#rv + 1));
      }
      return;
    }
    this.#remove(row.id, deletedState(object, this.#rv + 1));
  }

  /** Removes the row, records DELETED, then collects dependents and releases foreground owners. */
  #remove(id: number, last: KubeObject): void {
    this.#takeRv();
    last.metadata.resourceVersion = String(this.#rv);
    this.#s.remove.run(id);
    this.#s.removeLabels.run(id);
    this.#s.removeOwners.run(id);
    this.#record("DELETED", last, JSON.stringify(last), undefined);
    const uid = last.metadata.uid!;
    for (const dep of this.#dependents(uid)) {
      const liveOwner = ownerUids(dep.object).some((other) => other !== uid && this.#s.getByUid.get(other));
      if (liveOwner) this.#replace(dep, withoutOwner(dep.object, uid, this.#rv + 1));
      else this.#delete(dep, "Background");
    }
    for (const ownerUid of ownerUids(last)) {
      const owner = this.#loadByUid(ownerUid);
      if (!owner?.object.metadata.deletionTimestamp) continue;
      if (!(owner.object.metadata.finalizers ?? []).includes(foregroundFinalizer)) continue;
      if (this.#countDependents(ownerUid) > 0) continue;
      const next = withoutFinalizer(owner.object, foregroundFinalizer, this.#rv + 1);
      if ((next.metadata.finalizers ?? []).length === 0) this.#remove(owner.id, next);
      else this.#replace(owner, next);
    }
  }

  #replace(row: Row, next: KubeObject): void {
    this.#takeRv();
    next.metadata.resourceVersion = String(this.#rv);
    const json = JSON.stringify(next);
    this.#s.update.run(this.#rv, json, row.id);
    this.#writeLabels(row.id, row.object, next);
    this.#writeOwners(row.id, row.object, next);
    this.#record("MODIFIED", next, json, row.object.metadata.labels);
    row.object = next;
  }

  #writeLabels(id: number, prev: KubeObject | undefined, next: KubeObject): void {
    const labels = next.metadata.labels;
    if (prev && labelsJson(prev.metadata.labels) === labelsJson(labels)) return;
    if (prev) this.#s.removeLabels.run(id);
    for (const [k, v] of Object.entries(labels ?? {})) this.#s.insertLabel.run(id, k, v);
  }

  #writeOwners(id: number, prev: KubeObject | undefined, next: KubeObject): void {
    const owners = ownerUids(next);
    if (prev && JSON.stringify(ownerUids(prev)) === JSON.stringify(owners)) return;
    if (prev) this.#s.removeOwners.run(id);
    for (const uid of owners) this.#s.insertOwner.run(uid, id);
  }

  #record(
    type: ChangeRecord["type"],
    object: KubeObject,
    json: string,
    prevLabels: ChangeRecord["prevLabels"],
  ): void {
    const namespace = namespaceOf(object);
    this.#s.insertEvent.run(
      this.#rv,
      type,
      object.kind,
      namespace,
      json,
      prevLabels === undefined ? null : JSON.stringify(prevLabels),
    );
    this.#changes.push({
      resourceVersion: this.#rv,
      type,
      kind: object.kind,
      namespace,
      json,
      labels: object.metadata.labels,
      prevLabels: type === "MODIFIED" ? (prevLabels ?? {}) : undefined,
    });
  }

  #takeRv(): void {
    this.#rv++;
  }

  #load(kind: string, ns: string, name: string): Row | undefined {
    const row = this.#s.get.get(kind, ns, name) as { id: number; data: string } | undefined;
    return row ? { id: row.id, object: JSON.parse(row.data) as KubeObject } : undefined;
  }

  #mustLoad(kind: string, ns: string, name: string): Row {
    const row = this.#load(kind, ns, name);
    if (!row) throw new NotFoundError(`${describe(kind, ns, name)} not found`, { kind, namespace: ns, name });
    return row;
  }

  #loadById(id: number): Row | undefined {
    const row = this.#s.getById.get(id) as { id: number; data: string } | undefined;
    return row ? { id: row.id, object: JSON.parse(row.data) as KubeObject } : undefined;
  }

  #loadByUid(uid: string): Row | undefined {
    const row = this.#s.getByUid.get(uid) as { id: number; data: string } | undefined;
    return row ? { id: row.id, object: JSON.parse(row.data) as KubeObject } : undefined;
  }

  /** Dependents of uid, each read when reached: an earlier one's cascade may change or remove a later one. */
  *#dependents(uid: string): Generator<Row> {
    const ids = this.#s.dependents.all(uid) as { object_id: number }[];
    for (const { object_id } of ids) {
      const row = this.#loadById(object_id);
      if (row && ownerUids(row.object).includes(uid)) yield row;
    }
  }

  #countDependents(uid: string): number {
    return (this.#s.countDependents.get(uid) as { n: number }).n;
  }

  // ---- group commit ------------------------------------------------------------------------

  #write(run: () => unknown): Promise<unknown> {
    if (this.#closed) return Promise.reject(new Error(`store ${this.file} is closed`));
    if (this.#failed) return Promise.reject(this.#failed);
    return new Promise((resolve, reject) => {
      this.#queue.push({ run, resolve, reject });
      if (!this.#flushScheduled) {
        this.#flushScheduled = true;
        setImmediate(() => this.#flush());
      }
    });
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
    const db = this.#db;
    const startRv = this.#rv;
    const outcomes: WriteOutcome[] = [];
    try {
      db.exec("BEGIN IMMEDIATE");
      for (const item of batch) {
        const rvMark = this.#rv;
        const changeMark = this.#changes.length;
        db.exec("SAVEPOINT op");
        try {
          const value = item.run();
          db.exec("RELEASE op");
          outcomes.push({ ok: true, value });
        } catch (error) {
          db.exec("ROLLBACK TO op");
          db.exec("RELEASE op");
          this.#rv = rvMark;
          this.#changes.length = changeMark;
          outcomes.push({ ok: false, error });
        }
      }
      if (this.#rv !== startRv) {
        this.#s.setMeta.run(String(this.#rv), "resource_version");
        this.#compact();
      }
      db.exec("COMMIT");
    } catch (error) {
      if (db.isTransaction) db.exec("ROLLBACK");
      this.#rv = startRv;
      this.#changes = [];
      for (const item of batch) item.reject(error);
      return;
    }
    const committed: Unsynced = { batch, outcomes, changes: this.#changes };
    this.#changes = [];
    if (!this.#pipelined) {
      this.#settle([committed], null);
      return;
    }
    this.#unsynced.push(committed);
    this.#syncSoon();
  }

  /** Starts a sync covering every commit so far, unless one is running (its end starts the next). */
  #syncSoon(): void {
    if (this.#syncing || this.#unsynced.length === 0) return;
    const group = this.#unsynced.splice(0);
    this.#syncing = new Promise<void>((resolve) => {
      this.#fdatasync(this.#walFd, (error) => {
        this.#syncing = undefined;
        if (error) {
          this.#failed = new Error(`store ${this.file}: syncing the WAL failed (${error.message}); restart`);
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
      if (error) continue;
      for (const change of changes) {
        for (const watcher of this.#watchers.get(change.kind) ?? []) watcher.offer(change);
      }
    }
  }

  #checkpointIfLarge(): void {
    if (fstatSync(this.#walFd).size < this.#checkpointBytes) return;
    this.#checkpoint();
  }

  /** Copies the WAL into the database with full syncs (WAL first, then database), then truncates it. */
  #checkpoint(): void {
    this.#db.exec("PRAGMA synchronous = FULL");
    try {
      this.#db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    } finally {
      if (this.#pipelined) this.#db.exec("PRAGMA synchronous = OFF");
    }
  }

  #compact(): void {
    const slack = Math.max(100, Math.floor(this.#retention / 10));
    if (this.#rv - this.#compactedThrough <= this.#retention + slack) return;
    const cutoff = this.#rv - this.#retention;
    this.#s.compact.run(cutoff);
    this.#s.setMeta.run(String(cutoff), "compacted_through");
    this.#compactedThrough = cutoff;
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
    let replay: ChangeRecord[] | undefined;
    if (from !== undefined && from !== "" && from !== "0") {
      const rv = Number(from);
      if (!Number.isSafeInteger(rv) || rv < 0)
        throw new InvalidError(`resourceVersion "${from}" is not a number`);
      if (rv < this.#compactedThrough || rv > this.#rv) {
        throw new ExpiredError(
          rv > this.#rv
            ? `resourceVersion ${rv} is newer than the store (${this.#rv}): list again and watch from the list's resourceVersion`
            : `resourceVersion ${rv} is too old (events up to ${this.#compactedThrough} were compacted): list again and watch from the list's resourceVersion`,
          { kind },
        );
      }
      replay = (
        this.#s.events.all(kind, rv) as {
          rv: number;
          type: ChangeRecord["type"];
          namespace: string;
          data: string;
          prev_labels: string | null;
        }[]
      ).map((e) => ({
        resourceVersion: e.rv,
        type: e.type,
        kind,
        namespace: e.namespace,
        json: e.data,
        labels: (JSON.parse(e.data) as KubeObject).metadata.labels,
        prevLabels:
          e.prev_labels === null ? undefined : (JSON.parse(e.prev_labels) as Record<string, string>),
      }));
    }
    // Commits awaiting their sync are already in the list or replay read above; the watcher
    // skips them when they are delivered.
    const watcher = new Watcher(
      kind,
      filter,
      handler as WatchHandler<KubeObject>,
      (w) => {
        this.#watchers.get(kind)?.delete(w);
      },
      replay ? Number(from) : this.#rv,
    );
    if (replay) {
      for (const change of replay) watcher.offer(change);
    } else {
      for (const object of this.#select(kind, filter.namespace, filter.selector)) {
        watcher.push("ADDED", JSON.stringify(object));
      }
    }
    const set = this.#watchers.get(kind) ?? new Set<Watcher>();
    this.#watchers.set(kind, set);
    set.add(watcher);
    return watcher;
  }

  // ---- lifecycle ---------------------------------------------------------------------------

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#flush();
    this.#closed = true;
    while (this.#syncing) {
      await this.#syncing;
      if (!this.#failed) this.#syncSoon();
    }
    if (this.#unsynced.length > 0) {
      // Only after a failed sync: these commits are not known to be durable.
      this.#settle(this.#unsynced.splice(0), this.#failed ?? new Error(`store ${this.file} closed`));
    }
    for (const set of this.#watchers.values()) for (const w of [...set]) w.stop();
    this.#watchers.clear();
    if (this.#pipelined && !this.#failed) this.#checkpoint();
    this.#db.close();
    if (this.#walFd >= 0) closeSync(this.#walFd);
  }

  #open(): void {
    if (this.#closed) throw new Error(`store ${this.file} is closed`);
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
