// The resourceVersion counter and the event log watches resume from. Changes recorded during a
// transaction are kept in memory too, to be delivered to watches once the commit is durable.

import type { DatabaseSync, StatementSync } from "node:sqlite";
import { ExpiredError, InvalidError } from "./errors.ts";
import { namespaceOf } from "./object-rules.ts";
import type { KubeObject } from "./types.ts";
import type { ChangeRecord } from "./watchers.ts";

/** Where a savepoint started, to forget what it recorded if it rolls back. */
export interface JournalMark {
  rv: number;
  changes: number;
}

export class Journal {
  /** The last resourceVersion handed out. */
  rv: number;
  compactedThrough: number;
  #retention: number;
  #changes: ChangeRecord[] = [];
  #s: Record<"insertEvent" | "events" | "compact" | "setMeta", StatementSync>;

  constructor(db: DatabaseSync, retention: number) {
    const meta = (key: string) =>
      Number((db.prepare("SELECT value FROM meta WHERE key = ?").get(key) as { value: string }).value);
    this.rv = meta("resource_version");
    this.compactedThrough = meta("compacted_through");
    this.#retention = retention;
    const p = (sql: string) => db.prepare(sql);
    this.#s = {
      insertEvent: p(
        "INSERT INTO events(rv, type, kind, namespace, data, prev_labels) VALUES (?, ?, ?, ?, ?, ?)",
      ),
      events: p(
        "SELECT rv, type, namespace, data, prev_labels FROM events WHERE kind = ? AND rv > ? ORDER BY rv",
      ),
      compact: p("DELETE FROM events WHERE rv <= ?"),
      setMeta: p("UPDATE meta SET value = ? WHERE key = ?"),
    };
  }

  /** The resourceVersion the next change will get. */
  get next(): number {
    return this.rv + 1;
  }

  take(): number {
    return ++this.rv;
  }

  /** Logs a change at the current resourceVersion. */
  record(
    type: ChangeRecord["type"],
    object: KubeObject,
    json: string,
    prevLabels: ChangeRecord["prevLabels"],
  ): void {
    const namespace = namespaceOf(object);
    this.#s.insertEvent.run(
      this.rv,
      type,
      object.kind,
      namespace,
      json,
      prevLabels === undefined ? null : JSON.stringify(prevLabels),
    );
    this.#changes.push({
      resourceVersion: this.rv,
      type,
      kind: object.kind,
      namespace,
      json,
      labels: object.metadata.labels,
      prevLabels: type === "MODIFIED" ? (prevLabels ?? {}) : undefined,
    });
  }

  mark(): JournalMark {
    return { rv: this.rv, changes: this.#changes.length };
  }

  /** Forgets what was recorded since the mark (its savepoint or transaction rolled back). */
  rollBack(mark: JournalMark): void {
    this.rv = mark.rv;
    this.#changes.length = mark.changes;
  }

  /** Inside the transaction, before COMMIT: saves the counter and compacts the event log. */
  save(since: JournalMark): void {
    if (this.rv === since.rv) return;
    this.#s.setMeta.run(String(this.rv), "resource_version");
    this.#compact();
  }

  /** The changes recorded since the last call, for delivery once they are durable. */
  takeChanges(): ChangeRecord[] {
    const changes = this.#changes;
    this.#changes = [];
    return changes;
  }

  /** After a removal the DELETED event carries the last state; find it among this write's changes. */
  lastDeleted(object: KubeObject): KubeObject {
    for (let i = this.#changes.length - 1; i >= 0; i--) {
      const change = this.#changes[i]!;
      if (change.type === "DELETED" && change.kind === object.kind) {
        const gone = JSON.parse(change.json) as KubeObject;
        if (gone.metadata.uid === object.metadata.uid) return gone;
      }
    }
    return object;
  }

  /** The logged changes of `kind` after resourceVersion `from`; Expired when they are not all kept. */
  since(kind: string, from: string): ChangeRecord[] {
    const rv = Number(from);
    if (!Number.isSafeInteger(rv) || rv < 0)
      throw new InvalidError(`resourceVersion "${from}" is not a number`);
    if (rv < this.compactedThrough || rv > this.rv) {
      throw new ExpiredError(
        rv > this.rv
          ? `resourceVersion ${rv} is newer than the store (${this.rv}): list again and watch from the list's resourceVersion`
          : `resourceVersion ${rv} is too old (events up to ${this.compactedThrough} were compacted): list again and watch from the list's resourceVersion`,
        { kind },
      );
    }
    return (
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
      prevLabels: e.prev_labels === null ? undefined : (JSON.parse(e.prev_labels) as Record<string, string>),
    }));
  }

  #compact(): void {
    const slack = Math.max(100, Math.floor(this.#retention / 10));
    if (this.rv - this.compactedThrough <= this.#retention + slack) return;
    const cutoff = this.rv - this.#retention;
    this.#s.compact.run(cutoff);
    this.#s.setMeta.run(String(cutoff), "compacted_through");
    this.compactedThrough = cutoff;
  }
}
