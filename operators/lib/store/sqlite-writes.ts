// The write path on rows: Kubernetes object rules (object-rules.ts) applied to the objects table
// and its label and owner indexes, with every change logged. Runs inside a transaction that
// group-commit.ts opens; nothing here commits.

import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { Clock } from "../clock.ts";
import { AlreadyExistsError, ConflictError, describe, InvalidError } from "./errors.ts";
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
import type { Journal } from "./sqlite-journal.ts";
import { ownerUids, type Queries, type Row } from "./sqlite-queries.ts";
import type { BatchOp, DeleteOptions, KubeObject, PropagationPolicy } from "./types.ts";

const suffixAlphabet = "bcdfghjklmnpqrstvwxz2456789";

function randomSuffix(): string {
  let s = "";
  for (let i = 0; i < 5; i++) s += suffixAlphabet[Math.floor(Math.random() * suffixAlphabet.length)];
  return s;
}

function labelsJson(labels: Record<string, string> | undefined): string {
  return JSON.stringify(labels ?? {});
}

export interface WritesOptions {
  db: DatabaseSync;
  queries: Queries;
  journal: Journal;
  clock: Clock;
  newUid: () => string;
}

export class Writes {
  #queries: Queries;
  #journal: Journal;
  #clock: Clock;
  #newUid: () => string;
  #s: Record<
    "insert" | "update" | "remove" | "insertLabel" | "removeLabels" | "insertOwner" | "removeOwners",
    StatementSync
  >;

  constructor(options: WritesOptions) {
    this.#queries = options.queries;
    this.#journal = options.journal;
    this.#clock = options.clock;
    this.#newUid = options.newUid;
    const p = (sql: string) => options.db.prepare(sql);
    this.#s = {
      insert: p("INSERT INTO objects(kind, namespace, name, uid, rv, data) VALUES (?, ?, ?, ?, ?, ?)"),
      update: p("UPDATE objects SET rv = ?, data = ? WHERE id = ?"),
      remove: p("DELETE FROM objects WHERE id = ?"),
      insertLabel: p("INSERT INTO labels(object_id, key, value) VALUES (?, ?, ?)"),
      removeLabels: p("DELETE FROM labels WHERE object_id = ?"),
      insertOwner: p("INSERT OR IGNORE INTO owner_refs(owner_uid, object_id) VALUES (?, ?)"),
      removeOwners: p("DELETE FROM owner_refs WHERE object_id = ?"),
    };
  }

  /** One operation of an applyBatch. */
  apply(op: BatchOp): KubeObject {
    switch (op.op) {
      case "create":
        return this.create(op.object);
      case "update":
        return this.update(op.object);
      case "updateStatus":
        return this.updateStatus(op.object);
      case "apply":
        return this.#apply(op.object);
      case "delete":
        return this.delete(op.kind, op.namespace ?? "", op.name, op.options ?? {});
      default:
        throw new InvalidError(`unknown batch operation ${JSON.stringify((op as { op: unknown }).op)}`);
    }
  }

  create(input: KubeObject): KubeObject {
    const object = created(input, {
      uid: this.#newUid(),
      resourceVersion: this.#journal.next,
      now: this.#clock.now(),
      suffix: randomSuffix(),
    });
    const { kind, metadata } = object;
    const ns = namespaceOf(object);
    if (this.#queries.json(kind, ns, metadata.name) !== undefined) {
      throw new AlreadyExistsError(`${describe(kind, ns, metadata.name)} already exists`, {
        kind,
        namespace: ns,
        name: metadata.name,
      });
    }
    const rv = this.#journal.take();
    const json = JSON.stringify(object);
    const { lastInsertRowid } = this.#s.insert.run(kind, ns, metadata.name, metadata.uid!, rv, json);
    const id = Number(lastInsertRowid);
    this.#writeLabels(id, undefined, object);
    this.#writeOwners(id, undefined, object);
    this.#journal.record("ADDED", object, json, undefined);
    return object;
  }

  update(input: KubeObject): KubeObject {
    return this.#update(input, updated);
  }

  updateStatus(input: KubeObject): KubeObject {
    return this.#update(input, statusUpdated);
  }

  #update(
    input: KubeObject,
    rule: (existing: KubeObject, input: KubeObject, rv: number) => Outcome,
  ): KubeObject {
    checkObject(input, false);
    const ns = namespaceOf(input);
    const row = this.#queries.mustLoad(input.kind, ns, input.metadata.name);
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
    return this.#commitOutcome(row, rule(row.object, input, this.#journal.next));
  }

  #apply(input: KubeObject): KubeObject {
    checkObject(input, false);
    const row = this.#queries.load(input.kind, namespaceOf(input), input.metadata.name);
    if (!row) {
      const fresh: KubeObject = { ...input, metadata: { ...input.metadata } };
      delete fresh.metadata.resourceVersion;
      return this.create(fresh);
    }
    return this.#commitOutcome(row, applied(row.object, input, this.#journal.next));
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

  delete(kind: string, ns: string, name: string, options: DeleteOptions): KubeObject {
    const row = this.#queries.mustLoad(kind, ns, name);
    const { uid, resourceVersion } = options.preconditions ?? {};
    if (uid !== undefined && uid !== row.object.metadata.uid) {
      throw new ConflictError(
        `${describe(kind, ns, name)}: precondition failed, uid is ${row.object.metadata.uid}`,
        { kind, namespace: ns, name },
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
    return this.#queries.loadById(row.id)?.object ?? this.#journal.lastDeleted(row.object);
  }

  #delete(row: Row, propagation: PropagationPolicy): void {
    const { object } = row;
    const uid = object.metadata.uid!;
    const queries = this.#queries;
    if (propagation === "Orphan") {
      for (const dep of queries.dependents(uid))
        this.#replace(dep, withoutOwner(dep.object, uid, this.#journal.next));
    }
    if (propagation === "Foreground" && queries.countDependents(uid) > 0) {
      const marked = markedForDeletion(object, this.#clock.now(), this.#journal.next, [foregroundFinalizer]);
      const already =
        object.metadata.deletionTimestamp && (object.metadata.finalizers ?? []).includes(foregroundFinalizer);
      if (!already) this.#replace(row, marked);
      for (const dep of queries.dependents(uid)) {
        if (!dep.object.metadata.deletionTimestamp) this.#delete(dep, "Foreground");
      }
      return;
    }
    if ((object.metadata.finalizers ?? []).length > 0) {
      if (!object.metadata.deletionTimestamp) {
        this.#replace(row, markedForDeletion(object, this.#clock.now(), this.#journal.next));
      }
      return;
    }
    this.#remove(row.id, deletedState(object, this.#journal.next));
  }

  /** Removes the row, records DELETED, then collects dependents and releases foreground owners. */
  #remove(id: number, last: KubeObject): void {
    const queries = this.#queries;
    last.metadata.resourceVersion = String(this.#journal.take());
    this.#s.remove.run(id);
    this.#s.removeLabels.run(id);
    this.#s.removeOwners.run(id);
    this.#journal.record("DELETED", last, JSON.stringify(last), undefined);
    const uid = last.metadata.uid!;
    for (const dep of queries.dependents(uid)) {
      const liveOwner = ownerUids(dep.object).some((other) => other !== uid && queries.hasUid(other));
      if (liveOwner) this.#replace(dep, withoutOwner(dep.object, uid, this.#journal.next));
      else this.#delete(dep, "Background");
    }
    for (const ownerUid of ownerUids(last)) {
      const owner = queries.loadByUid(ownerUid);
      if (!owner?.object.metadata.deletionTimestamp) continue;
      if (!(owner.object.metadata.finalizers ?? []).includes(foregroundFinalizer)) continue;
      if (queries.countDependents(ownerUid) > 0) continue;
      const next = withoutFinalizer(owner.object, foregroundFinalizer, this.#journal.next);
      if ((next.metadata.finalizers ?? []).length === 0) this.#remove(owner.id, next);
      else this.#replace(owner, next);
    }
  }

  #replace(row: Row, next: KubeObject): void {
    const rv = this.#journal.take();
    next.metadata.resourceVersion = String(rv);
    const json = JSON.stringify(next);
    this.#s.update.run(rv, json, row.id);
    this.#writeLabels(row.id, row.object, next);
    this.#writeOwners(row.id, row.object, next);
    this.#journal.record("MODIFIED", next, json, row.object.metadata.labels);
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
}
