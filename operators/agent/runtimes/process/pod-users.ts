// The users process-runtime pods run as on a root agent (docs/process-runtime.md#users): each
// Task gets a uid of its own from a range, its working directory is given to that uid with mode
// 0700, and its programs and the access sessions into its pods run as that uid with no groups
// and no new privileges. So the kernel keeps a pod out of other Tasks' directories, the runtime's
// records and logs (pods/, 0700 root) and the agent's credentials (0600 root). The replicas of one
// Task share its uid, as they share its working directory. A Task that sets raw.runAsRoot runs as
// the agent's user instead.
//
// The way down to a pod's directory: the data dir and the directories under it stay closed to
// others (0700 for `rlark up`'s, which holds the CA key and tokens); the pods' users share one
// supplementary group, rlark-pods, and a private directory on the way becomes root:rlark-pods
// 0710, searchable by the pods alone, listable by none of them. A directory above that is
// neither searchable by others nor root's alone to regroup is refused with its name, not opened.
import { execFileSync } from "node:child_process";
import { chmodSync, chownSync, mkdirSync, statSync } from "node:fs";
import { dirname, relative } from "node:path";
import { ensurePodAccount, ensurePodGroup } from "./pod-account.ts";

export interface PodUsersOptions {
  /** The first uid (and gid) of the range. */
  firstUid: number;
  /** How many uids the range holds: at most this many Tasks run at once. Default 1000. */
  count?: number;
}

function chown(dir: string, uid: number): void {
  // -h: a link the pod left there is changed itself, never what it points to.
  execFileSync("chown", ["-hR", "--", `${uid}:${uid}`, dir], { stdio: ["ignore", "ignore", "pipe"] });
}

export class PodUsers {
  readonly #first: number;
  readonly #count: number;
  readonly #workDir: string;
  /** The group rlark-pods: every pod user's one supplementary group. */
  readonly #group: number;
  /** The uid each live pod runs as, by pod key, with its Task's key and working directory. */
  readonly #pods = new Map<string, { task: string; uid: number; dir: string }>();

  /** `reserved`: uids the range must not hold (the Domain sidecars'). */
  constructor(options: PodUsersOptions, workDir: string, reserved: readonly number[] = []) {
    const count = options.count ?? 1000;
    if (!Number.isInteger(options.firstUid) || options.firstUid < 1 || !Number.isInteger(count) || count < 1)
      throw new Error(`the pods' uid range ${options.firstUid}+${count} must be whole numbers above 0`);
    const last = options.firstUid + count - 1;
    const clash = reserved.find((uid) => uid >= options.firstUid && uid <= last);
    if (clash !== undefined)
      throw new Error(
        `the pods' uids ${options.firstUid}-${last} hold ${clash}, the sidecars' uid: a pod's traffic would bypass the REDIRECT`,
      );
    this.#first = options.firstUid;
    this.#count = count;
    this.#workDir = workDir;
    this.#group = ensurePodGroup();
  }

  /** The gid of rlark-pods, which may search the runtime's directories down to the pods'. */
  get group(): number {
    return this.#group;
  }

  /** Whether `uid` is one of the range's (a record's uid from an earlier configuration may not be). */
  #inRange(uid: number): boolean {
    return uid >= this.#first && uid < this.#first + this.#count;
  }

  /**
   * The uid pod `key` of Task `task` runs as, working in `dir`: its Task's when another replica
   * holds one, `recorded` when an earlier run had it, else the lowest free one. Gives `dir` to it
   * (when it lies in the runtime's work dir) and makes its account.
   */
  claim(key: string, task: string, dir: string, recorded?: number): number {
    const held = this.#pods.get(key)?.uid ?? [...this.#pods.values()].find((p) => p.task === task)?.uid;
    const taken = new Set([...this.#pods.values()].filter((p) => p.task !== task).map((p) => p.uid));
    let uid =
      held ??
      (recorded !== undefined && this.#inRange(recorded) && !taken.has(recorded) ? recorded : undefined);
    for (let candidate = this.#first; uid === undefined && candidate < this.#first + this.#count; candidate++)
      if (!taken.has(candidate)) uid = candidate;
    if (uid === undefined)
      throw new Error(`all ${this.#count} pod uids from ${this.#first} are in use by other Tasks`);
    ensurePodAccount(uid);
    this.#own(dir, uid);
    this.#pods.set(key, { task, uid, dir });
    return uid;
  }

  /**
   * Pod `key` is gone. When it was its Task's last, its directory goes back to root: the uid may
   * be another Task's next, and must find nothing of this one's.
   */
  release(key: string): void {
    const pod = this.#pods.get(key);
    if (!pod) return;
    this.#pods.delete(key);
    if ([...this.#pods.values()].some((p) => p.task === pod.task)) return;
    if (this.#inside(pod.dir)) {
      try {
        chown(pod.dir, 0);
      } catch {
        // already removed
      }
    }
  }

  /** The command that runs what follows as `uid`: rlark-pods its one other group, no way back up. */
  prefix(uid: number): string[] {
    return ["setpriv", `--reuid=${uid}`, `--regid=${uid}`, `--groups=${this.#group}`, "--no-new-privs", "--"];
  }

  /**
   * `path` (the agent's PATH) without the directories a pod's user cannot search: a root agent's
   * PATH often starts in its own 0700 home (pyenv shims, cargo, go), and a shell that finds a
   * program there stops at "Permission denied" instead of going on to /usr/bin. Decided by mode
   * bits (others', or rlark-pods' group bits), per directory and its parents; kept in order.
   */
  reachablePath(path: string): string {
    const cached = this.#paths.get(path);
    if (cached !== undefined) return cached;
    const kept = path.split(":").filter((dir) => dir !== "" && this.#searchable(dir));
    const result = kept.join(":");
    if (this.#paths.size < 16) this.#paths.set(path, result);
    return result;
  }

  readonly #paths = new Map<string, string>();

  #searchable(dir: string): boolean {
    for (let at = dir; ; at = dirname(at)) {
      let stat: { mode: number; gid: number };
      try {
        stat = statSync(at);
      } catch {
        return false;
      }
      const { mode, gid } = stat;
      if ((mode & 0o001) === 0 && !(gid === this.#group && (mode & 0o010) !== 0)) return false;
      if (dirname(at) === at) return true;
    }
  }

  #inside(dir: string): boolean {
    const rel = relative(this.#workDir, dir);
    return rel !== "" && !rel.startsWith("..") && !rel.startsWith("/");
  }

  /** A directory the Task names outside the work dir is its own business and left as it is. */
  #own(dir: string, uid: number): void {
    if (!this.#inside(dir)) return;
    const stat = statSync(dir);
    if (stat.uid !== uid) chown(dir, uid);
    if ((stat.mode & 0o777) !== 0o700) chmodSync(dir, 0o700);
  }

  /**
   * Lets the pods' users reach `dir` (the work or artifact directory, made if missing) and nothing
   * more: `dir` becomes root:rlark-pods, 0710 (work/: each pod reaches its own directory and lists
   * none) or 0750 (artifacts/: shared, read-only). Every directory above it must be searchable by
   * them: one that others may search is left alone, one that is root's alone (no group bits, as a
   * 0700 data dir) is given to rlark-pods with search only, and any other is refused with its name.
   */
  openToPods(dir: string, listable: boolean): void {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chownSync(dir, 0, this.#group);
    chmodSync(dir, listable ? 0o750 : 0o710);
    for (let at = dirname(dir); ; at = dirname(at)) {
      const { mode, uid, gid } = statSync(at);
      const searchable = (mode & 0o001) !== 0 || (gid === this.#group && (mode & 0o010) !== 0);
      if (!searchable) {
        if (uid !== 0 || (mode & 0o070) !== 0)
          throw new Error(
            `the pods' users (group rlark-pods) cannot reach ${dir}: ${at} (mode ${(mode & 0o7777).toString(8)}, uid ${uid}, gid ${gid}) ` +
              "is not searchable by others, and not root's alone to give them; chmod o+x it, or choose a state dir below directories others may search",
          );
        chownSync(at, 0, this.#group);
        chmodSync(at, (mode & 0o7777) | 0o010);
      }
      if (dirname(at) === at) return;
    }
  }
}
