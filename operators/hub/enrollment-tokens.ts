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
}

export interface TokenStore {
  add(record: TokenRecord): void;
  /** Removes and returns the record with this id, atomically with respect to other takers. */
  take(id: string): TokenRecord | undefined;
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
    take(id) {
      return locked((records) => {
        const found = records.find((r) => r.id === id);
        if (!found) return { result: undefined };
        return { records: records.filter((r) => r !== found), result: found };
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
    take(id) {
      const found = records.get(id);
      records.delete(id);
      return found;
    },
  };
}
