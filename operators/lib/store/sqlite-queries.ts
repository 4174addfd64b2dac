// Reads from the objects table and its label and owner indexes.

import type { DatabaseSync, StatementSync } from "node:sqlite";
import { describe, NotFoundError } from "./errors.ts";
import { indexableRequirement, matches, type Selector } from "./label-selector.ts";
import { type ListWindow, listWindow } from "./list-window.ts";
import type { KubeObject } from "./types.ts";

/** A stored object and its row id (what the label and owner indexes point at). */
export interface Row {
  id: number;
  object: KubeObject;
}

export function ownerUids(object: KubeObject): string[] {
  return [...new Set((object.metadata.ownerReferences ?? []).map((r) => r.uid))];
}

function byNamespaceName(a: KubeObject, b: KubeObject): number {
  const na = a.metadata.namespace ?? "";
  const nb = b.metadata.namespace ?? "";
  if (na !== nb) return na < nb ? -1 : 1;
  return a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0;
}

function toRow(row: unknown): Row | undefined {
  const r = row as { id: number; data: string } | undefined;
  return r ? { id: r.id, object: JSON.parse(r.data) as KubeObject } : undefined;
}

export class Queries {
  #s: Record<
    | "get"
    | "getById"
    | "getByUid"
    | "listKind"
    | "listKindNs"
    | "listLabel"
    | "listLabelNs"
    | "listKindAfter"
    | "listKindNsAfter"
    | "dependents"
    | "countDependents"
    | "counts",
    StatementSync
  >;

  constructor(db: DatabaseSync) {
    const p = (sql: string) => db.prepare(sql);
    this.#s = {
      get: p("SELECT id, data FROM objects WHERE kind = ? AND namespace = ? AND name = ?"),
      getById: p("SELECT id, data FROM objects WHERE id = ?"),
      getByUid: p("SELECT id, data FROM objects WHERE uid = ?"),
      listKind: p("SELECT data FROM objects WHERE kind = ? ORDER BY namespace, name"),
      listKindNs: p("SELECT data FROM objects WHERE kind = ? AND namespace = ? ORDER BY name"),
      // Row values: the objects_key index serves the range (kind, then namespace and name after the position).
      listKindAfter: p(
        "SELECT data FROM objects WHERE kind = ? AND (namespace, name) > (?, ?) ORDER BY namespace, name LIMIT ?",
      ),
      listKindNsAfter: p(
        "SELECT data FROM objects WHERE kind = ? AND namespace = ? AND (namespace, name) > (?, ?) ORDER BY name LIMIT ?",
      ),
      listLabel: p(
        "SELECT o.data FROM labels l JOIN objects o ON o.id = l.object_id WHERE l.key = ? AND l.value = ? AND o.kind = ?",
      ),
      listLabelNs: p(
        "SELECT o.data FROM labels l JOIN objects o ON o.id = l.object_id WHERE l.key = ? AND l.value = ? AND o.kind = ? AND o.namespace = ?",
      ),
      dependents: p("SELECT object_id FROM owner_refs WHERE owner_uid = ? ORDER BY object_id"),
      countDependents: p("SELECT count(*) AS n FROM owner_refs WHERE owner_uid = ?"),
      counts: p("SELECT kind, count(*) AS n FROM objects GROUP BY kind ORDER BY kind"),
    };
  }

  /** The stored JSON of an object, unparsed. */
  json(kind: string, ns: string, name: string): string | undefined {
    return (this.#s.get.get(kind, ns, name) as { data: string } | undefined)?.data;
  }

  load(kind: string, ns: string, name: string): Row | undefined {
    return toRow(this.#s.get.get(kind, ns, name));
  }

  mustLoad(kind: string, ns: string, name: string): Row {
    const row = this.load(kind, ns, name);
    if (!row) throw new NotFoundError(`${describe(kind, ns, name)} not found`, { kind, namespace: ns, name });
    return row;
  }

  loadById(id: number): Row | undefined {
    return toRow(this.#s.getById.get(id));
  }

  loadByUid(uid: string): Row | undefined {
    return toRow(this.#s.getByUid.get(uid));
  }

  hasUid(uid: string): boolean {
    return this.#s.getByUid.get(uid) !== undefined;
  }

  /**
   * Objects of `kind` (in `namespace`, if given) that the selector matches, by namespace and name;
   * with `window`, only those after its position and at most its limit of them.
   */
  select(
    kind: string,
    namespace: string | undefined,
    selector: Selector,
    window: ListWindow = {},
  ): KubeObject[] {
    const parse = (rows: unknown[]) =>
      rows.map((r) => JSON.parse((r as { data: string }).data) as KubeObject);
    const indexed = indexableRequirement(selector);
    if (selector.requirements.length === 0 && (window.after || window.limit !== undefined)) {
      // A page is read as a range of the index, never the whole kind: paging 100,000 Jobs costs a
      // page. The empty position is before every object (none is named "").
      const after = window.after ?? { namespace: "", name: "" };
      const limit = window.limit ?? -1;
      const rows =
        namespace === undefined
          ? this.#s.listKindAfter.all(kind, after.namespace, after.name, limit)
          : this.#s.listKindNsAfter.all(kind, namespace, after.namespace, after.name, limit);
      // The empty position is before everything but ("", ""), which no object is named.
      return parse(rows);
    }
    return listWindow(this.#selectAll(kind, namespace, selector, indexed, parse), window);
  }

  #selectAll(
    kind: string,
    namespace: string | undefined,
    selector: Selector,
    indexed: ReturnType<typeof indexableRequirement>,
    parse: (rows: unknown[]) => KubeObject[],
  ): KubeObject[] {
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

  countByKind(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const row of this.#s.counts.all() as { kind: string; n: number }[]) out[row.kind] = row.n;
    return out;
  }

  /** Dependents of uid, each read when reached: an earlier one's cascade may change or remove a later one. */
  *dependents(uid: string): Generator<Row> {
    const ids = this.#s.dependents.all(uid) as { object_id: number }[];
    for (const { object_id } of ids) {
      const row = this.loadById(object_id);
      if (row && ownerUids(row.object).includes(uid)) yield row;
    }
  }

  countDependents(uid: string): number {
    return (this.#s.countDependents.get(uid) as { n: number }).n;
  }
}
