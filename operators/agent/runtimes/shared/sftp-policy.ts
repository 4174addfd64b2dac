// The path policy of SFTP into a pod: every path a request names must stay inside the policy
// root, and writes stay under a size limit. Requests are checked before OpenSSH's sftp-server
// sees them; a refused one is answered here. Where the pod's files are on this machine (process
// runtime) a path is resolved as the kernel will resolve it, symlinks followed (insideLocal);
// where they are in a container the agent cannot see (kubernetes), a path is judged by its name
// (insideNamed), see docs/access.md. Paths are bounded (PATH_MAX and a component count) before
// any of that, and resolved asynchronously: one request never holds the event loop.
import { isUtf8 } from "node:buffer";
import { lstat, readlink } from "node:fs/promises";
import { isAbsolute, posix, relative, sep } from "node:path";

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

/** The status codes of refusals (SFTP v3's SSH_FX_*). */
export const STATUS = { FAILURE: 4, PERMISSION_DENIED: 3 } as const;

/** Linux's PATH_MAX: no longer path can be opened there, and checking one costs work for nothing. */
export const MAX_PATH_BYTES = 4096;
/** Components of one path: deeper trees than this are not served (each costs a lookup). */
export const MAX_PATH_COMPONENTS = 256;
/** Symlinks followed resolving one path: Linux's own limit, past which it fails with ELOOP. */
const MAX_LINKS = 40;
/** Components looked up resolving one path, those of the symlinks' targets included. */
const MAX_LOOKUPS = 4 * MAX_PATH_COMPONENTS;

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
 * A path's bytes as text, within the bounds. Names that are not UTF-8 are refused: the policy
 * would judge the decoded text (invalid bytes become U+FFFD) while the server opens the bytes, so
 * a symlink named with such bytes would not be the path the policy looked at.
 */
function pathText(bytes: Buffer): string {
  if (bytes.length > MAX_PATH_BYTES)
    throw new PolicyRefusal(`paths are limited to ${MAX_PATH_BYTES} bytes`, STATUS.FAILURE);
  if (!isUtf8(bytes)) throw new PolicyRefusal("names that are not UTF-8 are not served");
  // sftp-server reads a name up to a NUL byte at its end: the policy would judge a longer one.
  if (bytes.includes(0)) throw new PolicyRefusal("names with a NUL byte are not served");
  const text = bytes.toString("utf8");
  let components = 0;
  for (const component of text.split("/")) if (component !== "" && component !== ".") components++;
  if (components > MAX_PATH_COMPONENTS)
    throw new PolicyRefusal(`paths are limited to ${MAX_PATH_COMPONENTS} components`, STATUS.FAILURE);
  return text;
}

/** A request refused with why, and the status it is answered with. */
export class PolicyRefusal extends Error {
  readonly status: number;
  constructor(message: string, status: number = STATUS.PERMISSION_DENIED) {
    super(message);
    this.status = status;
  }
}

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
   * only name a path: resolving one touches nothing. May throw a PolicyRefusal saying why not.
   */
  inside(path: string, followLast: boolean, named: boolean): boolean | Promise<boolean>;
  /** Largest offset + length a write may reach. */
  maxFileBytes: number;
  /**
   * Set where `inside` only judges names (the files are in a container): the filter then asks
   * the server where each path really leads (its realpath, symlinks followed in the container)
   * and this says whether that absolute, resolved path is inside the root.
   */
  resolvedInside?(resolved: string): boolean;
}

/** A path a request names. */
export interface RequestPath {
  path: string;
  /** The request follows the last component if it is a symlink (open, stat), or acts on it (lstat, remove). */
  followLast: boolean;
  /** A realpath request's: it only asks where the name leads. */
  named: boolean;
}

/** A refusal (answered with `status`, PERMISSION_DENIED by default), or the paths the request names. */
export type Verdict = { refusal: string; status?: number } | { paths: RequestPath[] };

const PASS: Verdict = { paths: [] };

/**
 * Decodes one request packet (type byte onwards, without the length): a refusal for what is
 * never served, malformed or out of bounds, or the paths to judge (judgePaths) before it goes on.
 */
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
    return { paths: paths.map((path) => ({ path, followLast: follows, named })) };
  } catch (error) {
    return error instanceof PolicyRefusal
      ? { refusal: error.message, status: error.status }
      : { refusal: "malformed request" };
  }
}

/** The first of `paths` the policy's `inside` refuses, or none. */
export async function judgePaths(paths: RequestPath[], options: PolicyOptions): Promise<Verdict | undefined> {
  for (const { path, followLast, named } of paths) {
    try {
      if (!(await options.inside(path, followLast, named)))
        return { refusal: `${path} is outside ${options.place}` };
    } catch (error) {
      if (!(error instanceof PolicyRefusal)) throw error;
      return { refusal: error.message, status: error.status };
    }
  }
  return undefined;
}

/** The components of `path` that name something: empty ones and `.` say nothing. */
const components = (path: string) => path.split("/").filter((name) => name !== "" && name !== ".");

/**
 * Where `path` leads on this machine, resolved as the kernel resolves it: component by component
 * from `/` (absolute) or `base` (relative, already real), each symlink met replaced by its target
 * (a relative one read from the link's directory), so `..` after a link is its target's parent,
 * never the link's own. The last component is followed only with `followLast` (or a trailing
 * slash, as the kernel does). A missing last component is where a create would put it: a link
 * whose target does not exist leads where the target would be made. Undefined when the kernel
 * fails the path itself (a missing or non-directory component before the last, a symlink loop):
 * nothing is reached or made through it.
 */
export async function kernelLocation(
  base: string,
  path: string,
  followLast: boolean,
): Promise<string | undefined> {
  const follow = followLast || /\/\.?$/.test(path);
  // a stack: the next component last
  const pending = components(path).reverse();
  let current = path.startsWith("/") ? "/" : base;
  let links = 0;
  let lookups = 0;
  while (pending.length > 0) {
    const name = pending.pop() as string;
    if (name === "..") {
      current = posix.dirname(current);
      continue;
    }
    const next = current === "/" ? `/${name}` : `${current}/${name}`;
    const last = pending.length === 0;
    if (last && !follow) return next;
    if (++lookups > MAX_LOOKUPS)
      throw new PolicyRefusal(`${path} leads through more than ${MAX_LOOKUPS} components`, STATUS.FAILURE);
    let target: Buffer | undefined;
    try {
      const stats = await lstat(next);
      if (stats.isSymbolicLink()) target = await readlink(next, { encoding: "buffer" });
      else if (!last && !stats.isDirectory()) return undefined;
    } catch {
      return last ? next : undefined;
    }
    if (target === undefined) {
      current = next;
      continue;
    }
    if (++links > MAX_LINKS) return undefined;
    // decoded, such a target would name other entries than the kernel follows
    if (!isUtf8(target)) throw new PolicyRefusal(`${path} leads through a symlink whose target is not UTF-8`);
    const link = target.toString("utf8");
    if (link.startsWith("/")) current = "/";
    pending.push(...components(link).reverse());
  }
  return current;
}

function within(root: string, path: string): boolean {
  const r = relative(root, path);
  return r === "" || (!r.startsWith(`..${sep}`) && r !== ".." && !isAbsolute(r));
}

/**
 * Whether `path` (relative paths are `realRoot`'s, a real path: no symlink in it) stays inside
 * it on this machine. The last component of a request that does not follow it (lstat, remove,
 * rename, mkdir) may itself be a symlink pointing out: that is harmless, only where it sits
 * matters. A path the kernel cannot resolve passes: the server's request fails the same way.
 */
export async function insideLocal(realRoot: string, path: string, followLast: boolean): Promise<boolean> {
  const location = await kernelLocation(realRoot, path, followLast);
  return location === undefined || within(realRoot, location);
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
