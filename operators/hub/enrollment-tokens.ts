import { closeSync, existsSync, openSync, readFileSync, rmSync, statSync } from "node:fs";
import { type Clock, systemClock } from "../lib/clock.ts";
import { writeFileAtomic } from "../lib/pki/index.ts";

/** A bootstrap token as stored: the secret itself is never written, only its SHA-256. */
export interface TokenRecord {
  id: string;
  /** hex SHA-256 of the token's secret part. */
  hash: string;
  cluster: string;
  createdAt: number;
  expiresAt: number;
  /**
   * Set by the token's first enrollment, in the same write as the certificate issued: the key it
   * certified (hex SHA-256 of its SSH blob) and that certificate. A retry with the same key gets
   * the same certificate (its first answer may have been cut by a hub kill); another key is refused.
   */
  used?: { key: string; certPem: string; at: number };
}

/** What a token's enrollment gets: the certificate, or why not. */
export type BindOutcome = { certPem: string } | { refused: string };

export interface TokenStore {
  add(record: TokenRecord): void;
  /** The record with this id, if any. */
  get(id: string): TokenRecord | undefined;
  /** Removes and returns the record with this id, atomically with respect to other takers. */
  take(id: string): TokenRecord | undefined;
  /**
   * Binds the token to `key` and keeps the certificate `issue()` makes, in one locked write: a
   * token bound to `key` already answers with its certificate, one bound to another key refuses.
   */
  bind(id: string, key: string, now: number, issue: () => string): BindOutcome;
}

/** The bind rule, one for every store: `record` is changed in place when it is bound now. */
function bindRecord(
  record: TokenRecord | undefined,
  key: string,
  now: number,
  issue: () => string,
): { outcome: BindOutcome; changed: boolean } {
  if (!record) return { outcome: { refused: "unknown or already used token" }, changed: false };
  if (now >= record.expiresAt)
    return {
      outcome: { refused: `token expired at ${new Date(record.expiresAt).toISOString()}` },
      changed: false,
    };
  if (record.used) {
    return record.used.key === key
      ? { outcome: { certPem: record.used.certPem }, changed: false }
      : { outcome: { refused: "this token was already used to enroll another key" }, changed: false };
  }
  const certPem = issue();
  record.used = { key, certPem, at: now };
  return { outcome: { certPem }, changed: true };
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Tokens in `<path>` (0600), shared by the hub and `rlark token create` running as another
 * process; a lock file serialises read-modify-write so a token is never taken twice.
 */
export function fileTokenStore(path: string, clock: Clock = systemClock): TokenStore {
  const lockPath = `${path}.lock`;
  function locked<T>(fn: (records: TokenRecord[]) => { records?: TokenRecord[]; result: T }): T {
    for (let attempt = 0; ; attempt++) {
      try {
        closeSync(openSync(lockPath, "wx", 0o600));
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
        // A lock older than 30 s belongs to a crashed process.
        if (attempt > 200 || clock.now() - statSync(lockPath).mtimeMs > 30_000)
          rmSync(lockPath, { force: true });
        sleepSync(5);
      }
    }
    try {
      const records: TokenRecord[] = existsSync(path)
        ? (JSON.parse(readFileSync(path, "utf8")) as TokenRecord[])
        : [];
      const { records: next, result } = fn(records);
      if (next) {
        // Expired tokens are dropped on every write.
        const live = next.filter((r) => r.expiresAt > clock.now());
        writeFileAtomic(path, `${JSON.stringify(live, null, 2)}\n`, 0o600);
      }
      return result;
    } finally {
      rmSync(lockPath, { force: true });
    }
  }
  return {
    add(record) {
      locked((records) => ({ records: [...records, record], result: undefined }));
    },
    get(id) {
      return locked((records) => ({ result: records.find((r) => r.id === id) }));
    },
    take(id) {
      return locked((records) => {
        const found = records.find((r) => r.id === id);
        if (!found) return { result: undefined };
        return { records: records.filter((r) => r !== found), result: found };
      });
    },
    bind(id, key, now, issue) {
      return locked((records) => {
        const { outcome, changed } = bindRecord(
          records.find((r) => r.id === id),
          key,
          now,
          issue,
        );
        return changed ? { records, result: outcome } : { result: outcome };
      });
    },
  };
}

/** For tests and for a hub whose tokens live in its store. */
export function memoryTokenStore(): TokenStore {
  const records = new Map<string, TokenRecord>();
  return {
    add(record) {
      records.set(record.id, record);
    },
    get(id) {
      return records.get(id);
    },
    take(id) {
      const found = records.get(id);
      records.delete(id);
      return found;
    },
    bind(id, key, now, issue) {
      return bindRecord(records.get(id), key, now, issue).outcome;
    },
  };
}
