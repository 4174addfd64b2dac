import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, mkdir, readdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { type GitAuth, type GitCredentials, prepareGitAuth, repoKey } from "./git-auth.ts";
import { gitIn } from "./git-exec.ts";
import { DEFAULT_GIT_TIMEOUT_MS, gitRemote } from "./git-remote.ts";
import { treeBlobs } from "./tree-blobs.ts";

export interface GitRepositoryOptions {
  /** URL (https, ssh, git, file) or local path of the repository. */
  url: string;
  branch: string;
  /** Clones live in `<dataDir>/git/<hash-of-url>`, snapshots in `<dataDir>/snapshots/<sha>`. */
  dataDir: string;
  credentials?: GitCredentials;
  /**
   * Kill a git command talking to the remote when it has shown no progress this long (a frozen
   * or unreachable server); default 60 s (git-remote.ts). Local commands are not bound by it.
   */
  timeoutMs?: number;
}

/** A local mirror of one branch of a remote, and the trees of its revisions on disk. */
export interface GitRepository {
  /** The remote's URL with credentials scrubbed: safe for status, logs and errors. */
  readonly url: string;
  readonly branch: string;
  /** The bare clone. */
  readonly dir: string;
  /** How long a git command talking to the remote may show no progress (gitRemote's bound). */
  readonly timeoutMs: number;
  /** Fetches the branch (forced, so rewritten history replaces the old) and returns its commit. */
  fetch(): Promise<string>;
  /** Writes the tree of `revision` to `<dataDir>/snapshots/<revision>` (once) and returns that path. */
  materialise(revision: string): Promise<string>;
  /**
   * Each regular file's identity at `revision` (see tree-blobs.ts), by path in the tree; undefined
   * when git cannot say. Optional: a repository without it has its files read and hashed.
   */
  blobs?(revision: string): Promise<ReadonlyMap<string, string> | undefined>;
  /** Removes every snapshot not named in `keep`. */
  pruneSnapshots(keep: readonly string[]): Promise<void>;
  /** Committer time of a revision, for "how old is what we run". */
  commitTime(revision: string): Promise<Date>;
  /** Credentials for other writers to the same remote (the status branch). */
  auth(): Promise<GitAuth>;
  /** Removes credentials from a text. */
  redact(text: string): string;
}

const SHA = /^[0-9a-f]{40}([0-9a-f]{24})?$/;

export function createGitRepository(options: GitRepositoryOptions): GitRepository {
  return new Repository(options);
}

/** Error whose message has already been scrubbed of credentials. */
export class GitSourceError extends Error {
  override name = "GitSourceError";
}

class Repository implements GitRepository {
  readonly url: string;
  readonly branch: string;
  readonly dir: string;
  readonly timeoutMs: number;
  #options: GitRepositoryOptions;
  #auth: Promise<GitAuth> | undefined;
  #redact: (text: string) => string;
  #snapshots: string;

  constructor(options: GitRepositoryOptions) {
    if (!options.branch || options.branch.startsWith("-") || options.branch.includes(".."))
      throw new Error(`invalid branch name ${JSON.stringify(options.branch)}`);
    this.#options = options;
    this.branch = options.branch.replace(/^refs\/heads\//, "");
    this.dir = join(options.dataDir, "git", repoKey(options.url));
    this.timeoutMs = options.timeoutMs ?? DEFAULT_GIT_TIMEOUT_MS;
    this.#snapshots = join(options.dataDir, "snapshots");
    // Until prepareGitAuth ran, scrub at least the URL's userinfo and the explicit token.
    const token = options.credentials?.token;
    this.#redact = (text) => {
      let out = text.replace(/(https?:\/\/)[^/@\s'"]*@/gi, "$1");
      if (token) out = out.split(token).join("***");
      return out;
    };
    this.url = this.#redact(options.url);
  }

  auth(): Promise<GitAuth> {
    this.#auth ??= prepareGitAuth({
      url: this.#options.url,
      dataDir: this.#options.dataDir,
      ...(this.#options.credentials ? { credentials: this.#options.credentials } : {}),
    }).then((auth) => {
      this.#redact = auth.redact;
      return auth;
    });
    return this.#auth;
  }

  redact(text: string): string {
    return this.#redact(text);
  }

  /** For local commands (rev-parse, read-tree): gitIn's own silence bound, not the remote's. */
  async #git(env: Record<string, string> = {}) {
    const auth = await this.auth();
    return gitIn(this.dir, { env: { ...auth.env, ...env } });
  }

  async #scrubbed<T>(what: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new GitSourceError(`${what} ${this.url}: ${this.redact(message).trim()}`);
    }
  }

  async fetch(): Promise<string> {
    return this.#scrubbed(`git fetch of branch ${this.branch} from`, async () => {
      const auth = await this.auth();
      if (!existsSync(join(this.dir, "HEAD"))) {
        // Private, as the data dir around it: under a root `rlark up` the pods' group may search
        // the data dir on the way to their own directories (docs/process-runtime.md#users).
        await mkdir(join(this.dir, ".."), { recursive: true, mode: 0o700 });
        await chmod(join(this.dir, ".."), 0o700); // also one an older version made 0755
        await mkdir(this.dir, { recursive: true });
        await (await this.#git()).raw(["init", "--bare", "--quiet"]);
      }
      const ref = `refs/remotes/origin/${this.branch}`;
      // Forced refspec: a force-push or rewritten history simply replaces what we had. Bounded
      // (git-remote.ts): a frozen server fails this fetch, and the next poll tries again.
      await gitRemote(
        this.dir,
        [
          "fetch",
          "--prune",
          "--no-tags",
          "--quiet",
          "--progress",
          auth.remoteUrl,
          `+refs/heads/${this.branch}:${ref}`,
        ],
        { env: auth.env, timeoutMs: this.timeoutMs },
      );
      return (await (await this.#git()).raw(["rev-parse", "--verify", `${ref}^{commit}`])).trim();
    });
  }

  async materialise(revision: string): Promise<string> {
    if (!SHA.test(revision)) throw new Error(`not a full commit id: ${JSON.stringify(revision)}`);
    const target = join(this.#snapshots, revision);
    if (existsSync(target)) return target;
    await mkdir(this.#snapshots, { recursive: true, mode: 0o700 }); // private, as git/ above
    await chmod(this.#snapshots, 0o700);
    // Build beside the target and rename, so a crash never leaves a half-written snapshot behind.
    const temp = join(this.#snapshots, `.tmp-${revision}-${randomBytes(4).toString("hex")}`);
    const index = `${temp}.index`;
    await mkdir(temp);
    try {
      const git = await this.#git({ GIT_INDEX_FILE: index, GIT_WORK_TREE: temp });
      await git.raw(["read-tree", revision]);
      await git.raw(["checkout-index", "--all", "--force"]);
      try {
        await rename(temp, target);
      } catch (error) {
        if (!existsSync(target)) throw error;
      }
    } finally {
      await rm(temp, { recursive: true, force: true });
      await rm(index, { force: true });
    }
    return target;
  }

  async blobs(revision: string): Promise<ReadonlyMap<string, string> | undefined> {
    if (!SHA.test(revision)) throw new Error(`not a full commit id: ${JSON.stringify(revision)}`);
    return treeBlobs(await this.#git(), revision);
  }

  async pruneSnapshots(keep: readonly string[]): Promise<void> {
    const entries = await readdir(this.#snapshots).catch(() => []);
    await Promise.all(
      entries
        .filter((name) => !keep.includes(name))
        .map((name) => rm(join(this.#snapshots, name), { recursive: true, force: true })),
    );
  }

  async commitTime(revision: string): Promise<Date> {
    const git = await this.#git();
    const seconds = Number((await git.raw(["show", "-s", "--format=%ct", revision])).trim());
    return new Date(seconds * 1000);
  }
}
