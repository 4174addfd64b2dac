// Resolving a path of a checked-out repository as if the repository were the whole file system.
// realpath() would follow a link out of the checkout and stat what is there, so its errors (and
// timings) tell whether a file of the hub exists; this walk looks at one component at a time and
// stops at the first link that leaves, without ever touching anything outside `root`.
import { lstat, readlink } from "node:fs/promises";
import path from "node:path";

/** Links followed before giving up, as Linux's MAXSYMLINKS. */
const MAX_LINKS = 40;

export type Resolved =
  | { path: string; links: string[] }
  | { problem: "outside" | "missing" | "loop"; links: string[] };

/**
 * Resolves `relative` under `root` (itself a real path: no symlinks in it), following links only
 * while they stay inside. `links` lists, relative to `root`, the symlinks met on the way.
 */
export async function resolveInside(root: string, relative: string): Promise<Resolved> {
  const links: string[] = [];
  const done: string[] = [];
  const todo = relative.split(path.sep).filter((part) => part !== "" && part !== ".");
  while (todo.length > 0) {
    const part = todo.shift() as string;
    if (part === "..") {
      if (done.length === 0) return { problem: "outside", links };
      done.pop();
      continue;
    }
    const candidate = path.join(root, ...done, part);
    const info = await lstat(candidate).catch(() => undefined);
    if (!info) return { problem: "missing", links };
    if (!info.isSymbolicLink()) {
      done.push(part);
      continue;
    }
    links.push(path.relative(root, candidate));
    if (links.length > MAX_LINKS) return { problem: "loop", links };
    const target = await readlink(candidate);
    let rest: string;
    if (path.isAbsolute(target)) {
      // An absolute link can only stay inside by naming the checkout's own real path.
      if (target !== root && !target.startsWith(root + path.sep)) return { problem: "outside", links };
      rest = path.relative(root, target);
      done.length = 0;
    } else rest = target;
    todo.unshift(...rest.split(path.sep).filter((p) => p !== "" && p !== "."));
  }
  return { path: path.join(root, ...done), links };
}
