// The SQLite layout, versioned. A migration is appended, never edited: a data dir written by
// an older rlark is upgraded in place on open; one written by a newer rlark is refused.

import type { DatabaseSync } from "node:sqlite";

const migrations: readonly string[] = [
  // 1: objects as JSON documents keyed by kind/namespace/name, indexes for labels and owners,
  // and the event log that watches resume from (rv = resourceVersion, one event per rv).
  `
  CREATE TABLE objects (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    uid TEXT NOT NULL,
    rv INTEGER NOT NULL,
    data TEXT NOT NULL
  );
  CREATE UNIQUE INDEX objects_key ON objects(kind, namespace, name);
  CREATE UNIQUE INDEX objects_uid ON objects(uid);
  CREATE TABLE labels (
    object_id INTEGER NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (object_id, key)
  ) WITHOUT ROWID;
  CREATE INDEX labels_kv ON labels(key, value);
  CREATE TABLE owner_refs (
    owner_uid TEXT NOT NULL,
    object_id INTEGER NOT NULL,
    PRIMARY KEY (owner_uid, object_id)
  ) WITHOUT ROWID;
  CREATE INDEX owner_refs_object ON owner_refs(object_id);
  CREATE TABLE events (
    rv INTEGER PRIMARY KEY,
    type TEXT NOT NULL,
    kind TEXT NOT NULL,
    namespace TEXT NOT NULL,
    data TEXT NOT NULL,
    prev_labels TEXT
  );
  INSERT INTO meta(key, value) VALUES ('resource_version', '0'), ('compacted_through', '0');
  `,
];

export const schemaVersion = migrations.length;

/** Brings the database to the current schema, in one transaction. */
export function migrate(db: DatabaseSync, file: string): void {
  db.exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID");
  const row = db.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get() as
    | { value: string }
    | undefined;
  const current = row ? Number(row.value) : 0;
  if (current > schemaVersion) {
    throw new Error(
      `${file} has store schema version ${current}, newer than this rlark understands (${schemaVersion}); upgrade rlark or use another --data-dir`,
    );
  }
  if (current === schemaVersion) return;
  db.exec("BEGIN IMMEDIATE");
  try {
    for (let v = current; v < schemaVersion; v++) db.exec(migrations[v]!);
    db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)").run(
      String(schemaVersion),
    );
    db.exec("COMMIT");
  } catch (error) {
    db.exec("ROLLBACK");
    throw error;
  }
}
