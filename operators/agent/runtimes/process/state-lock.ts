// One runtime per state dir: two agents supervising the same pod records would each start every
// process. The lock names its holder by pid and process start time, so a lock left by an agent
// that was killed is recognised as stale and taken over.
import { randomBytes } from "node:crypto";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { isSameProcessAlive, readProcStat } from "./proc.ts";

interface LockRecord {
  pid: number;
  startTime?: number;
  token: string;
}

function readLock(path: string): LockRecord | undefined {
  try {
    const parsed: unknown = JSON.parse(readFileSync(path, "utf8"));
    if (typeof parsed === "object" && parsed !== null && typeof (parsed as LockRecord).pid === "number") {
      return parsed as LockRecord;
    }
  } catch {
    // Missing or torn: nobody holds it.
  }
  return undefined;
}

export class StateLock {
  readonly #path: string;
  readonly #token: string;

  private constructor(path: string, token: string) {
    this.#path = path;
    this.#token = token;
  }

  /** Takes the lock, or throws when another live process holds it. */
  static acquire(path: string, stateDir: string): StateLock {
    const holder = readLock(path);
    if (holder && holder.pid !== process.pid && isSameProcessAlive(holder.pid, holder.startTime)) {
      throw new Error(
        `state dir ${stateDir} is in use by the process runtime of pid ${holder.pid}; ` +
          "stop that agent or give this one its own --state-dir",
      );
    }
    const token = randomBytes(8).toString("hex");
    const startTime = readProcStat(process.pid)?.startTime;
    const record: LockRecord =
      startTime === undefined ? { pid: process.pid, token } : { pid: process.pid, startTime, token };
    writeFileSync(path, `${JSON.stringify(record)}\n`, { mode: 0o600 });
    return new StateLock(path, token);
  }

  /** After release: whether another runtime has taken the state dir (and with it the pods). */
  takenOver(): boolean {
    const holder = readLock(this.#path);
    return holder !== undefined && holder.token !== this.#token;
  }

  release(): void {
    if (readLock(this.#path)?.token === this.#token) rmSync(this.#path, { force: true });
  }
}
