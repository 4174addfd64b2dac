import { existsSync, readFileSync, statSync } from "node:fs";
import { writeFileAtomic } from "./files.ts";
import { normalizeSerial } from "./verify.ts";

export interface RevokedEntry {
  serial: string;
  revokedAt: string;
  reason: string;
}

/**
 * The revocation list, a JSON file beside the CA. forge cannot write X.509 CRLs, and nothing
 * outside the hub reads this list: the hub checks it on every tunnel authentication.
 */
export class RevocationList {
  #path: string;
  #entries = new Map<string, RevokedEntry>();
  #loadedMtime = -1;

  constructor(path: string) {
    this.#path = path;
    this.reload();
  }

  /** Re-reads the file, so a revocation written by `rlark` in another process takes effect. */
  reload(): void {
    this.#entries.clear();
    if (!existsSync(this.#path)) {
      this.#loadedMtime = -1;
      return;
    }
    this.#loadedMtime = statSync(this.#path).mtimeMs;
    const parsed: unknown = JSON.parse(readFileSync(this.#path, "utf8"));
    if (!Array.isArray(parsed)) throw new Error(`${this.#path}: expected a JSON array of revoked serials`);
    for (const item of parsed) {
      const entry = item as Partial<RevokedEntry>;
      if (typeof entry.serial !== "string") throw new Error(`${this.#path}: an entry has no serial`);
      const serial = normalizeSerial(entry.serial);
      this.#entries.set(serial, {
        serial,
        revokedAt: String(entry.revokedAt ?? ""),
        reason: String(entry.reason ?? ""),
      });
    }
  }

  has(serial: string): boolean {
    const mtime = existsSync(this.#path) ? statSync(this.#path).mtimeMs : -1;
    if (mtime !== this.#loadedMtime) this.reload();
    return this.#entries.has(normalizeSerial(serial));
  }

  add(serial: string, reason: string, at: Date): void {
    const key = normalizeSerial(serial);
    if (this.#entries.has(key)) return;
    this.#entries.set(key, { serial: key, revokedAt: at.toISOString(), reason });
    const sorted = [...this.#entries.values()].sort((a, b) => a.serial.localeCompare(b.serial));
    writeFileAtomic(this.#path, `${JSON.stringify(sorted, null, 2)}\n`, 0o644);
    this.#loadedMtime = statSync(this.#path).mtimeMs;
  }

  list(): RevokedEntry[] {
    return [...this.#entries.values()];
  }
}
