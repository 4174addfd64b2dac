// A pod's output as a stream: the tail (log-file.ts), then, when following, what the writer
// appends after it. The writer (log-writer.ts) renames `output.log` to `output.log.1` when it is
// full and starts a new one; the open handle keeps pointing at the renamed file, so a follower
// drains it to its end and then moves to the new `output.log` from its first byte: nothing is
// lost or repeated across a rotation. Reads go through fs/promises in bounded chunks and only as
// fast as the consumer pulls (an async generator behind Readable.from), so a slow reader holds
// one chunk, not the log.
import { open } from "node:fs/promises";
import { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { type LogHandle, readLogTail, type TailOptions } from "./log-file.ts";

export interface FollowOptions {
  /** The last N lines first (default: the runtime's tail default). */
  tail?: number;
  /** Stop after this many bytes in all (the tail included). */
  limitBytes?: number;
  /** Keep reading what is appended until the consumer stops. */
  follow?: boolean;
  /** How often a follower looks for new output once it has read everything. Default 200 ms. */
  pollMs?: number;
}

const CHUNK = 64 * 1024;

interface LiveHandle extends LogHandle {
  stat(): Promise<{ size: number; ino: number }>;
}

async function openLive(path: string): Promise<LiveHandle | undefined> {
  try {
    return await open(path, "r");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

async function inodeOf(path: string): Promise<number | undefined> {
  const handle = await openLive(path);
  if (!handle) return undefined;
  try {
    return (await handle.stat()).ino;
  } finally {
    await handle.close();
  }
}

/** The tail of `path` (and `path.1`), then, with `follow`, everything appended, across rotations. */
export function logStream(path: string, tailDefaults: TailOptions, options: FollowOptions): Readable {
  // Destroying the stream aborts the generator's wait for output first: a generator can only be
  // returned from at a yield, and a follow of a quiet pod might not yield again.
  const stop = new AbortController();
  const iterator = chunks(path, tailDefaults, options, stop.signal);
  return new Readable({
    read() {
      iterator.next().then(
        ({ value, done }) => this.push(done ? null : value),
        (error: Error) => this.destroy(error),
      );
    },
    destroy(error, callback) {
      stop.abort();
      iterator.return(undefined).then(
        () => callback(error),
        (failure: Error) => callback(error ?? failure),
      );
    },
  });
}

async function* chunks(
  path: string,
  tailDefaults: TailOptions,
  options: FollowOptions,
  signal: AbortSignal,
): AsyncGenerator<Buffer> {
  let budget = options.limitBytes ?? Number.POSITIVE_INFINITY;
  const pollMs = options.pollMs ?? 200;
  let live = await openLive(path);
  try {
    // The tail is read at one size of the live file; following starts exactly there.
    let position = live ? (await live.stat()).size : 0;
    const fixed = live;
    const tail = await readLogTail(path, {
      ...tailDefaults,
      ...(options.tail === undefined ? {} : { tail: options.tail }),
      open: async (file) => {
        if (file !== path || !fixed) return open(file, "r");
        return {
          stat: async () => ({ size: position }),
          read: fixed.read.bind(fixed),
          close: async () => {},
        };
      },
    });
    if (tail) {
      const bytes = Buffer.from(tail, "utf8");
      const given = bytes.subarray(0, Math.min(bytes.length, budget));
      budget -= given.length;
      yield given;
    }
    if (!options.follow) return;
    while (budget > 0 && !signal.aborted) {
      if (live) {
        const buffer = Buffer.alloc(Math.min(CHUNK, budget));
        const { bytesRead } = await live.read(buffer, 0, buffer.length, position);
        if (bytesRead > 0) {
          position += bytesRead;
          budget -= bytesRead;
          yield buffer.subarray(0, bytesRead);
          continue;
        }
        // At the end of what we hold: a rotation gives `path` a new file; a trim empties this one.
        const [current, own] = [await inodeOf(path), await live.stat()];
        if (current !== undefined && current !== own.ino) {
          // Bytes the writer appended between our last read and its rename are still ours to read
          // (the size is taken after the inode, so it holds everything written before the rename).
          if (own.size > position) continue;
          await live.close();
          // Rotated twice since the last look: the file in between is `.1` now; read it first.
          const previous = await openLive(`${path}.1`);
          if (previous && (await previous.stat()).ino !== own.ino) {
            live = previous;
            position = 0;
            continue;
          }
          await previous?.close();
          live = await openLive(path);
          position = 0;
          continue;
        }
        if (own.size < position) position = 0;
      } else {
        live = await openLive(path);
        position = 0;
        if (live) continue;
      }
      await sleep(pollMs, undefined, { signal }).catch(() => {});
    }
  } finally {
    await live?.close();
  }
}
