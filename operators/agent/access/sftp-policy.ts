// The path policy of SFTP into a pod: every path a request names must stay inside the policy
// root, and writes stay under a size limit. Requests are checked before OpenSSH's sftp-server
// sees them; a refused one is answered here. Where the pod's files are on this machine (process
// runtime) a path is resolved, symlinks followed (insideLocal); where they are in a container the
// agent cannot see (kubernetes), a path is judged by its name (insideNamed), see docs/access.md.
import { isUtf8 } from "node:buffer";
import { realpathSync } from "node:fs";
import { basename, dirname, isAbsolute, join, posix, relative, resolve, sep } from "node:path";

export const SFTP = {
  INIT: 1,
  OPEN: 3,
  WRITE: 6,
  LSTAT: 7,
  SETSTAT: 9,
  OPENDIR: 11,
  REMOVE: 13,
  MKDIR: 14,
  RMDIR: 15,
  REALPATH: 16,
  STAT: 17,
  RENAME: 18,
  READLINK: 19,
  SYMLINK: 20,
  STATUS: 101,
  EXTENDED: 200,
} as const;

/** Requests that carry only a handle (or nothing): the handle came from a checked open. */
const HANDLE_ONLY = new Set([4, 5, 8, 10, 12]);
/** Requests whose last path component is followed if it is a symlink. */
const FOLLOWS = new Set<number>([SFTP.OPEN, SFTP.SETSTAT, SFTP.OPENDIR, SFTP.REALPATH, SFTP.STAT]);
const EXTENSIONS_WITH_PATHS: Record<string, number> = {
  "posix-rename@openssh.com": 2,
  "statvfs@openssh.com": 1,
  // scp's SFTP mode resolves remote paths with it; "~" (the agent's home) is refused below.
  "expand-path@openssh.com": 1,
};
const EXTENSIONS_WITHOUT_PATHS = new Set(["fstatvfs@openssh.com", "fsync@openssh.com", "limits@openssh.com"]);

/**
 * A path's bytes as text. Names that are not UTF-8 are refused: the policy would judge the
 * decoded text (invalid bytes become U+FFFD) while the server opens the bytes, so a symlink named
 * with such bytes would not be the path the policy looked at.
 */
function pathText(bytes: Buffer): string {
  if (!isUtf8(bytes)) throw new PolicyRefusal("names that are not UTF-8 are not served");
  return bytes.toString("utf8");
}

class PolicyRefusal extends Error {}

function readString(packet: Buffer, at: number): { value: Buffer; next: number } {
  if (at + 4 > packet.length) throw new Error("truncated");
  const length = packet.readUInt32BE(at);
  if (at + 4 + length > packet.length) throw new Error("truncated");
  return { value: packet.subarray(at + 4, at + 4 + length), next: at + 4 + length };
}

export interface PolicyOptions {
  /** What the root is, for refusals: "the pod's directory", "/workspace". */
  place: string;
  /**
   * Whether `path` (relative paths are the root's) stays inside the root; `followLast` when the
   * request follows its last component if that is a symlink. `named` for realpath requests, which
   * only name a path: resolving one touches nothing.
   */
  inside(path: string, followLast: boolean, named: boolean): boolean;
  /** Largest offset + length a write may reach. */
  maxFileBytes: number;
  /**
   * Set where `inside` only judges names (the files are in a container): the filter then asks
   * the server where each path really leads (its realpath, symlinks followed in the container)
   * and this says whether that absolute, resolved path is inside the root.
   */
  resolvedInside?(resolved: string): boolean;
}

/** A path a passed request acts on, for a policy that resolves paths in the server. */
export interface RequestPath {
  path: string;
  /** The request follows the last component if it is a symlink (open, stat), or acts on it (lstat, remove). */
  followLast: boolean;
}

/** A refusal, or the paths the request acts on (none for handle requests and realpath). */
export type Verdict = { refusal: string } | { paths: RequestPath[] };

const PASS: Verdict = { paths: [] };

/** Checks one request packet (type byte onwards, without the length). */
export function checkRequest(packet: Buffer, options: PolicyOptions): Verdict {
  const type = packet[0] ?? 0;
  if (type === SFTP.INIT || HANDLE_ONLY.has(type)) return PASS;
  try {
    if (type === SFTP.WRITE) {
      const handle = readString(packet, 5);
      const offset = packet.readBigUInt64BE(handle.next);
      const data = readString(packet, handle.next + 8);
      const end = offset + BigInt(data.value.length);
      return end > BigInt(options.maxFileBytes)
        ? { refusal: `files are limited to ${options.maxFileBytes} bytes` }
        : PASS;
    }
    let paths: string[];
    let follows = FOLLOWS.has(type);
    let named = type === SFTP.REALPATH;
    if (type === SFTP.RENAME) {
      const first = readString(packet, 5);
      paths = [pathText(first.value), pathText(readString(packet, first.next).value)];
    } else if (type === SFTP.EXTENDED) {
      const name = readString(packet, 5);
      const extension = name.value.toString();
      if (EXTENSIONS_WITHOUT_PATHS.has(extension)) return PASS;
      const count = EXTENSIONS_WITH_PATHS[extension];
      if (count === undefined) return { refusal: `${extension} is not served` };
      paths = [];
      let at = name.next;
      for (let i = 0; i < count; i++) {
        const path = readString(packet, at);
        paths.push(pathText(path.value));
        at = path.next;
      }
      follows = extension !== "posix-rename@openssh.com";
      named = extension === "expand-path@openssh.com";
      if (named && paths[0]?.startsWith("~")) return { refusal: `~ is outside ${options.place}` };
    } else if (
      [
        SFTP.OPEN,
        SFTP.LSTAT,
        SFTP.SETSTAT,
        SFTP.OPENDIR,
        SFTP.REMOVE,
        SFTP.MKDIR,
        SFTP.RMDIR,
        SFTP.REALPATH,
        SFTP.STAT,
        SFTP.READLINK,
      ].includes(type as 3)
    ) {
      paths = [pathText(readString(packet, 5).value)];
    } else {
      return { refusal: "this request is not served" };
    }
    for (const path of paths) {
      if (!options.inside(path, follows, named)) return { refusal: `${path} is outside ${options.place}` };
    }
    // a realpath request only asks where a name leads: nothing is read or written there
    return named ? PASS : { paths: paths.map((path) => ({ path, followLast: follows })) };
  } catch (error) {
    return { refusal: error instanceof PolicyRefusal ? error.message : "malformed request" };
  }
}

/** The real location of `path`: its deepest existing ancestor resolved, the rest appended. */
function realLocation(path: string): string {
  let existing = path;
  const rest: string[] = [];
  for (;;) {
    try {
      return resolve(realpathSync(existing), ...rest.reverse());
    } catch {
      const parent = dirname(existing);
      if (parent === existing) return path;
      rest.push(existing.slice(parent.length).replace(/^\//, ""));
      existing = parent;
    }
  }
}

function within(root: string, path: string): boolean {
  const r = relative(root, path);
  return r === "" || (!r.startsWith(`..${sep}`) && r !== ".." && !isAbsolute(r));
}

/** Whether `path` (relative paths are the pod directory's) stays inside `root` on this machine. */
export function insideLocal(root: string, path: string, followLast: boolean): boolean {
  const realRoot = realLocation(resolve(root));
  const absolute = resolve(realRoot, path);
  // The last component of a request that does not follow it (lstat, remove, rename) may itself
  // be a symlink pointing out: that is harmless, only where it sits matters.
  const location = followLast
    ? realLocation(absolute)
    : join(realLocation(dirname(absolute)), basename(absolute));
  return within(realRoot, location);
}

/**
 * Whether `path` (relative paths are the root's) names a place inside `root`, an absolute POSIX
 * path in a filesystem this process cannot look at: judged by the name alone. `..` is refused
 * outright except in a realpath request (`named`, as `cd ..` sends): after a symlink, `..` is
 * the symlink target's parent, which no name tells, while a realpath request only asks where a
 * name leads. Symlinks already there are followed by the server; see docs/access.md.
 */
export function insideNamed(root: string, path: string, named: boolean): boolean {
  if (!named && path.split("/").includes("..")) return false;
  const r = posix.relative(root, posix.resolve(root, path));
  return r === "" || (r !== ".." && !r.startsWith("../") && !posix.isAbsolute(r));
}
