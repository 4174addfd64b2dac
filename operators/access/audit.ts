// The access audit trail: one JSON line per access (who, what, where, when, how much, how it
// ended), never the bytes that flowed, keys or tokens. Rotated by size: audit.jsonl, then
// audit.jsonl.1 ... audit.jsonl.<keep>.
import {
  appendFileSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
} from "node:fs";
import { dirname } from "node:path";
import type { AccessVerb } from "./authorize.ts";

export type AuditResult = "ok" | "denied" | "refused" | "revoked" | "error";

export interface AuditRecord {
  /** The user (or the login name when no user matched). */
  actor: string;
  /** Source address of the client. */
  ip?: string;
  /** An access verb, or `read`: a refused API read of another team's object (docs/teams.md#visibility). */
  verb: AccessVerb | "read";
  /** `cluster/namespace/pod[/container]`, with `:port` for forwarding; empty when none was resolved. */
  target: string;
  /** exec: the program (argv[0]) only; its arguments may hold secrets. */
  program?: string;
  via: "ssh" | "http" | "web";
  start: string;
  end: string;
  bytesIn: number;
  bytesOut: number;
  result: AuditResult;
  exitCode?: number;
  error?: string;
}

export interface AuditLogOptions {
  path: string;
  /** Rotate when the file would pass this size. Default 10 MiB. */
  maxBytes?: number;
  /** Rotated files kept. Default 5. */
  keep?: number;
}

/** Longest error text recorded: errors can quote input, and a line must stay a line. */
const MAX_ERROR = 500;

export class AuditLog {
  readonly #path: string;
  readonly #maxBytes: number;
  readonly #keep: number;
  #size: number;

  constructor(options: AuditLogOptions) {
    this.#path = options.path;
    this.#maxBytes = options.maxBytes ?? 10 * 1024 * 1024;
    this.#keep = options.keep ?? 5;
    mkdirSync(dirname(this.#path), { recursive: true, mode: 0o700 });
    this.#size = existsSync(this.#path) ? statSync(this.#path).size : 0;
  }

  get path(): string {
    return this.#path;
  }

  /** Appends one record (synchronously: an access must not finish before its line is written). */
  write(record: AuditRecord): void {
    const clean = { ...record, ...(record.error ? { error: record.error.slice(0, MAX_ERROR) } : {}) };
    const line = `${JSON.stringify(clean)}\n`;
    const bytes = Buffer.byteLength(line);
    if (this.#size > 0 && this.#size + bytes > this.#maxBytes) this.#rotate();
    appendFileSync(this.#path, line, { mode: 0o600 });
    this.#size += bytes;
  }

  #rotate(): void {
    rmSync(`${this.#path}.${this.#keep}`, { force: true });
    for (let i = this.#keep - 1; i >= 1; i--) {
      if (existsSync(`${this.#path}.${i}`)) renameSync(`${this.#path}.${i}`, `${this.#path}.${i + 1}`);
    }
    renameSync(this.#path, `${this.#path}.1`);
    this.#size = 0;
  }

  /** The newest records, newest first, reading at most the last `maxBytes` of the current file. */
  recent(limit = 200, maxBytes = 1024 * 1024): AuditRecord[] {
    if (!existsSync(this.#path)) return [];
    const fd = openSync(this.#path, "r");
    try {
      const size = statSync(this.#path).size;
      const length = Math.min(size, maxBytes);
      const buffer = Buffer.alloc(length);
      readSync(fd, buffer, 0, length, size - length);
      const lines = buffer.toString("utf8").split("\n");
      if (length < size) lines.shift(); // a cut first line
      const records: AuditRecord[] = [];
      for (const line of lines.reverse()) {
        if (!line) continue;
        try {
          records.push(JSON.parse(line) as AuditRecord);
        } catch {
          // A torn line (crash mid-write) is skipped, not fatal.
        }
        if (records.length >= limit) break;
      }
      return records;
    } finally {
      closeSync(fd);
    }
  }
}
