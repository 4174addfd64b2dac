// The file source of the peers state: `<socket dir>/peers.json`, which the writer replaces
// atomically (write a temporary file, rename). Watched; a file that does not parse is logged and
// the last good state kept, so a bad write never tears down routes that work.

import { renameSync, rmSync, watch, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "../lib/logger.ts";

/** The file the file source reads, in the nodeserver's `--socket-dir`. */
export const PEERS_FILE = "peers.json";

import { type PeersState, parsePeersState } from "../api/index.ts";

export function watchPeersFile(
  dir: string,
  onState: (state: PeersState) => void,
  logger: Logger,
): { close(): void } {
  const path = join(dir, PEERS_FILE);
  let last = "";
  let reading = false;
  let again = false;
  const load = async () => {
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    try {
      do {
        again = false;
        let text: string;
        try {
          text = await readFile(path, "utf8");
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== "ENOENT")
            logger.warn("peers state unreadable", { path, error: String(error) });
          continue;
        }
        if (text === last) continue;
        try {
          const state = parsePeersState(text, path);
          last = text;
          onState(state);
        } catch (error) {
          logger.error("peers state rejected; keeping the last good one", {
            error: (error as Error).message,
          });
        }
      } while (again);
    } finally {
      reading = false;
    }
  };
  const watcher = watch(dir, (_event, name) => {
    if (name === PEERS_FILE) void load();
  });
  void load();
  return { close: () => watcher.close() };
}

/** Replaces `<dir>/peers.json` atomically (temporary file, rename), 0600: it holds Domain keys. */
export function writePeersFile(dir: string, state: PeersState): void {
  const path = join(dir, PEERS_FILE);
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    writeFileSync(temporary, `${JSON.stringify(state)}\n`, { mode: 0o600 });
    renameSync(temporary, path);
  } catch (error) {
    // the file in force stays whole; a half-written temporary (ENOSPC) is not left behind
    rmSync(temporary, { force: true });
    throw error;
  }
}
