// Reading a pod's output: the last lines of `output.log.1` + `output.log` (see log-writer.ts for
// how they are written). A log may be many megabytes and the agent may be the hub's own process
// (`rlark up`), so the tail is read backwards from the end, in bounded chunks, through
// fs/promises (the thread pool, not the event loop), and never more than a byte cap.
import { open } from "node:fs/promises";

/** The slice of a FileHandle the reader uses; tests pass one that counts bytes. */
export interface LogHandle {
  stat(): Promise<{ size: number }>;
  read(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesRead: number }>;
  close(): Promise<void>;
}

export type OpenLog = (path: string) => Promise<LogHandle>;

export interface TailOptions {
  /** The last N lines; default (and at most) `maxLines`. */
  tail?: number;
  /** Default 10,000. */
  maxLines?: number;
  /** Default 1 MiB. */
  maxBytes?: number;
  open?: OpenLog;
}

const CHUNK = 64 * 1024;
const NEWLINE = 0x0a;

const openForReading: OpenLog = (path) => open(path, "r");

/** The last lines across the previous file and the live one, oldest first. */
export async function readLogTail(path: string, options: TailOptions = {}): Promise<string> {
  const maxLines = options.maxLines ?? 10_000;
  const maxBytes = options.maxBytes ?? 1024 * 1024;
  const wanted = Math.min(options.tail ?? maxLines, maxLines);
  if (wanted <= 0) return "";
  const opener = options.open ?? openForReading;
  // Newest bytes first; each chunk is prepended.
  const chunks: Buffer[] = [];
  let bytes = 0;
  let newlines = 0;
  let truncated = false;
  // One newline more than the lines wanted marks where the first wanted line starts.
  const enough = () => newlines > wanted;
  for (const file of [path, `${path}.1`]) {
    if (enough()) break;
    let handle: LogHandle;
    try {
      handle = await opener(file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") continue;
      throw error;
    }
    try {
      let position = (await handle.stat()).size;
      while (position > 0 && !enough()) {
        if (bytes >= maxBytes) {
          truncated = true;
          break;
        }
        const length = Math.min(CHUNK, position, maxBytes - bytes);
        position -= length;
        const chunk = Buffer.alloc(length);
        const { bytesRead } = await handle.read(chunk, 0, length, position);
        const got = chunk.subarray(0, bytesRead);
        chunks.unshift(got);
        bytes += bytesRead;
        for (let i = got.indexOf(NEWLINE); i >= 0; i = got.indexOf(NEWLINE, i + 1)) newlines++;
      }
    } finally {
      await handle.close();
    }
    if (truncated) break;
  }
  let all = Buffer.concat(chunks);
  if (truncated) {
    // The cap fell inside a line: start at the next whole one.
    const first = all.indexOf(NEWLINE);
    if (first >= 0) all = all.subarray(first + 1);
  }
  const text = all.toString("utf8");
  const parts = text.split("\n");
  const trailingNewline = text.endsWith("\n");
  if (trailingNewline) parts.pop();
  const kept = parts.slice(-wanted).join("\n");
  return trailingNewline && kept ? `${kept}\n` : kept;
}
