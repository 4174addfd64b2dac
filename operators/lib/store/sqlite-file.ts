// The database file and how a commit becomes durable: owner-only mode, WAL, and either
// synchronous=FULL (SQLite fsyncs inside COMMIT) or, pipelined, synchronous=OFF with our own
// fdatasync of the WAL (see group-commit.ts) and checkpoints only under full syncs.

import { chmodSync, closeSync, fsyncSync, mkdirSync, openSync } from "node:fs";
import { dirname, join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { migrate } from "./sqlite-schema.ts";

export interface SqliteFile {
  file: string;
  db: DatabaseSync;
  /** True when the WAL is synced by us, off the event loop. */
  pipelined: boolean;
  /** The WAL, open for fdatasync; -1 unless pipelined. */
  walFd: number;
}

/** Opens (creating or upgrading) `<dataDir>/<fileName>`. */
export function openSqliteFile(
  dataDir: string,
  fileName: string,
  durability: "pipelined" | "inline",
): SqliteFile {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, fileName);
  // Objects may carry credentials (Users' keys, tokens): owner-only, and SQLite gives its WAL
  // and shared-memory files the same mode as the database file.
  closeSync(openSync(file, "a", 0o600));
  chmodSync(file, 0o600);
  const db = new DatabaseSync(file);
  const mode = (db.prepare("PRAGMA journal_mode = WAL").get() as { journal_mode: string }).journal_mode;
  const pipelined = durability === "pipelined" && mode === "wal";
  db.exec("PRAGMA synchronous = FULL");
  db.exec("PRAGMA foreign_keys = OFF");
  db.exec("PRAGMA busy_timeout = 5000");
  migrate(db, file);
  let walFd = -1;
  if (pipelined) {
    // Checkpoints only when we say so, with full syncs: a WAL restart must never overwrite
    // frames whose pages are not yet safely in the database file.
    db.exec("PRAGMA wal_autocheckpoint = 0");
    db.exec("PRAGMA synchronous = OFF");
    walFd = openSync(`${file}-wal`, "a", 0o600);
    const dirFd = openSync(dirname(file), "r");
    try {
      fsyncSync(dirFd);
    } finally {
      closeSync(dirFd);
    }
  }
  return { file, db, pipelined, walFd };
}

/** Copies the WAL into the database with full syncs (WAL first, then database), then truncates it. */
export function checkpoint({ db, pipelined }: SqliteFile): void {
  db.exec("PRAGMA synchronous = FULL");
  try {
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  } finally {
    if (pipelined) db.exec("PRAGMA synchronous = OFF");
  }
}

export function closeSqliteFile({ db, walFd }: SqliteFile): void {
  db.close();
  if (walFd >= 0) closeSync(walFd);
}
