import { createHash } from "node:crypto";
import { EventEmitter } from "node:events";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type Clock, systemClock, type TimerId } from "../lib/clock.ts";
import { type Logger, silentLogger } from "../lib/logger.ts";
import { type GitAuth, gitIn, repoKey } from "../source/index.ts";

/** One file of the status branch. */
export interface StatusDocument {
  /** `status/<kind>/<name>.yaml` (see statusDocumentPath). */
  path: string;
  content: string;
}

/** The remote to write to: the tracked repository's, with its credentials. */
export interface StatusRemote {
  /** Scrubbed URL (for messages). */
  readonly url: string;
  /** The branch users push to; never written. */
  readonly branch: string;
  auth(): Promise<GitAuth>;
  redact(text: string): string;
}

export interface StatusBranchWriterOptions {
  remote: StatusRemote;
  /** The writer's own bare clone lives in `<dataDir>/status/<hash-of-url>`. */
  dataDir: string;
  /** Default `rlark/status`. */
  statusBranch?: string;
  /** Every status file as it should be now; files under `status/` not listed are deleted. */
  documents: () => readonly StatusDocument[] | Promise<readonly StatusDocument[]>;
  /** At most one commit per this many ms; default 10 s. */
  debounceMs?: number;
  /** Push attempts per commit when someone else moved the branch meanwhile; default 5. */
  maxAttempts?: number;
  author?: { name: string; email: string };
  clock?: Clock;
  logger?: Logger;
  timeoutMs?: number;
}

export interface StatusCommitResult {
  committed: boolean;
  /** The commit now at the tip of the status branch (ours, or the unchanged one). */
  commit: string | null;
  /** Push attempts made (0 when nothing changed). */
  attempts: number;
  added: string[];
  changed: string[];
  deleted: string[];
}

export interface StatusBranchWriter {
  readonly statusBranch: string;
  /** Something's status changed: commit within the debounce window. Cheap; call it freely. */
  notify(): void;
  /** Commit now (shutdown, tests); waits for a commit already running. */
  flush(): Promise<StatusCommitResult>;
  /** Cancels a pending commit and waits for one running; pass flush to write what is pending first. */
  stop(options?: { flush?: boolean }): Promise<void>;
  on(event: "commit", listener: (result: StatusCommitResult) => void): this;
  on(event: "failed", listener: (error: Error) => void): this;
  off(event: "commit", listener: (result: StatusCommitResult) => void): this;
  off(event: "failed", listener: (error: Error) => void): this;
}

export const DEFAULT_STATUS_BRANCH = "rlark/status";
const DEFAULT_AUTHOR = { name: "rlark-bot", email: "rlark-bot@users.noreply.rlark.io" };
const MANAGED_PREFIX = "status/";
const DOCUMENT_PATH = /^status\/(?:[A-Za-z0-9_-][A-Za-z0-9._-]*\/)*[A-Za-z0-9_-][A-Za-z0-9._-]*\.yaml$/;
const MAX_BACKOFF_MS = 300_000;

function branchName(ref: string): string {
  return ref.replace(/^refs\/heads\//, "");
}

function assertBranchName(name: string): void {
  if (
    !name ||
    name.startsWith("-") ||
    name.startsWith("/") ||
    name.endsWith("/") ||
    name.endsWith(".lock") ||
    name.includes("..") ||
    name.includes("//") ||
    /[\s~^:?*[\\]|@\{/.test(name)
  )
    throw new Error(`invalid status branch name ${JSON.stringify(name)}`);
}

function blobId(content: Buffer): string {
  return createHash("sha1").update(`blob ${content.length}\0`).update(content).digest("hex");
}

export function createStatusBranchWriter(options: StatusBranchWriterOptions): StatusBranchWriter {
  return new Writer(options);
}

class Writer extends EventEmitter implements StatusBranchWriter {
  readonly statusBranch: string;
  #remote: StatusRemote;
  #dir: string;
  #documents: StatusBranchWriterOptions["documents"];
  #debounce: number;
  #maxAttempts: number;
  #author: { name: string; email: string };
  #clock: Clock;
  #log: Logger;
  #timeoutMs: number | undefined;
  #timer: TimerId | undefined;
  #running: Promise<StatusCommitResult> | undefined;
  #dirty = false;
  #failures = 0;
  #fetched = false;
  #stopped = false;

  constructor(options: StatusBranchWriterOptions) {
    super();
    const status = branchName(options.statusBranch ?? DEFAULT_STATUS_BRANCH);
    assertBranchName(status);
    if (status === branchName(options.remote.branch))
      throw new Error(
        `refusing to write status to ${status}: it is the branch users push to; choose another --status-branch`,
      );
    this.statusBranch = status;
    this.#remote = options.remote;
    this.#dir = join(options.dataDir, "status", `${repoKey(options.remote.url)}.git`);
    this.#documents = options.documents;
    this.#debounce = options.debounceMs ?? 10_000;
    this.#maxAttempts = options.maxAttempts ?? 5;
    this.#author = options.author ?? DEFAULT_AUTHOR;
    this.#clock = options.clock ?? systemClock;
    this.#log = options.logger ?? silentLogger;
    this.#timeoutMs = options.timeoutMs;
  }

  notify(): void {
    if (this.#stopped) return;
    this.#dirty = true;
    if (this.#timer === undefined && !this.#running) this.#schedule(this.#debounce);
  }

  #schedule(delay: number): void {
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      void this.#run().catch(() => {});
    }, delay);
  }

  flush(): Promise<StatusCommitResult> {
    return this.#run();
  }

  async stop(options: { flush?: boolean } = {}): Promise<void> {
    if (options.flush && !this.#stopped) await this.flush().catch(() => {});
    this.#stopped = true;
    if (this.#timer) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#running?.catch(() => {});
  }

  #run(): Promise<StatusCommitResult> {
    if (this.#timer) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    // One commit at a time: a second run waits for the first, then writes what is current.
    const previous = this.#running?.catch(() => {}) ?? Promise.resolve();
    const running = previous
      .then(() => {
        this.#dirty = false;
        return this.#commit();
      })
      .then(
        (result) => {
          this.#failures = 0;
          if (result.committed) this.emit("commit", result);
          return result;
        },
        (error: unknown) => {
          this.#failures++;
          this.#dirty = true;
          const failure = new Error(
            this.#remote.redact(error instanceof Error ? error.message : String(error)),
          );
          this.#log.warn("status branch commit failed; will retry", { error: failure.message });
          this.emit("failed", failure);
          throw failure;
        },
      );
    this.#running = running;
    const settle = () => {
      if (this.#running !== running) return;
      this.#running = undefined;
      if (this.#dirty && !this.#stopped && this.#timer === undefined) {
        const backoff = this.#failures === 0 ? 0 : this.#debounce * 2 ** Math.min(this.#failures - 1, 20);
        this.#schedule(Math.max(this.#debounce, Math.min(backoff, MAX_BACKOFF_MS)));
      }
    };
    running.then(settle, settle);
    return running;
  }

  async #git(auth: GitAuth, env: Record<string, string> = {}, input?: string) {
    return gitIn(this.#dir, {
      env: { ...auth.env, ...env },
      ...(input === undefined ? {} : { input }),
      ...(this.#timeoutMs ? { timeoutMs: this.#timeoutMs } : {}),
    });
  }

  get #trackingRef(): string {
    return `refs/remotes/origin/${this.statusBranch}`;
  }

  /** Fetches the status branch; null when it does not exist yet. */
  async #fetchTip(auth: GitAuth): Promise<string | null> {
    const git = await this.#git(auth);
    const remoteRef = `refs/heads/${this.statusBranch}`;
    const listed = await git.raw(["ls-remote", auth.remoteUrl, remoteRef]);
    if (!listed.trim()) {
      await git.raw(["update-ref", "-d", this.#trackingRef]).catch(() => {});
      this.#fetched = true;
      return null;
    }
    await git.raw(["fetch", "--no-tags", "--quiet", auth.remoteUrl, `+${remoteRef}:${this.#trackingRef}`]);
    this.#fetched = true;
    return this.#localTip(auth);
  }

  async #localTip(auth: GitAuth): Promise<string | null> {
    const git = await this.#git(auth);
    try {
      return (
        (await git.raw(["rev-parse", "--verify", "--quiet", `${this.#trackingRef}^{commit}`])).trim() || null
      );
    } catch {
      return null;
    }
  }

  async #commit(): Promise<StatusCommitResult> {
    const documents = validate(await this.#documents());
    const auth = await this.#remote.auth();
    if (!existsSync(join(this.#dir, "HEAD"))) {
      await mkdir(this.#dir, { recursive: true });
      await (await this.#git(auth)).raw(["init", "--bare", "--quiet"]);
    }
    let parent = this.#fetched ? await this.#localTip(auth) : await this.#fetchTip(auth);
    for (let attempt = 1; attempt <= this.#maxAttempts; attempt++) {
      const built = await this.#build(auth, documents, parent);
      if (!built.commit) return { ...built.diff, committed: false, commit: parent, attempts: attempt - 1 };
      try {
        const git = await this.#git(auth);
        // Never forced: someone else's commit on the status branch is rebuilt upon, not overwritten.
        await git.raw(["push", "--quiet", auth.remoteUrl, `${built.commit}:refs/heads/${this.statusBranch}`]);
        await git.raw(["update-ref", this.#trackingRef, built.commit]);
        this.#log.info("committed status", {
          branch: this.statusBranch,
          commit: built.commit,
          added: built.diff.added.length,
          changed: built.diff.changed.length,
          deleted: built.diff.deleted.length,
        });
        return { ...built.diff, committed: true, commit: built.commit, attempts: attempt };
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        if (attempt === this.#maxAttempts) throw error;
        this.#log.info("status branch moved meanwhile; rebuilding on top", {
          attempt,
          reason: this.#remote.redact(message.split("\n")[0] ?? ""),
        });
        parent = await this.#fetchTip(auth);
      }
    }
    throw new Error("unreachable");
  }

  /** Builds (but does not push) the commit putting `documents` on top of `parent`; none if nothing changed. */
  async #build(
    auth: GitAuth,
    documents: ReadonlyMap<string, Buffer>,
    parent: string | null,
  ): Promise<{ commit: string | null; diff: Pick<StatusCommitResult, "added" | "changed" | "deleted"> }> {
    const git = await this.#git(auth);
    const existing = new Map<string, { mode: string; id: string }>();
    if (parent) {
      const listing = await git.raw(["ls-tree", "-r", "-z", "--full-tree", parent]);
      for (const entry of listing.split("\0")) {
        const match = /^(\d+) \w+ ([0-9a-f]+)\t(.*)$/s.exec(entry);
        if (match) existing.set(match[3]!, { mode: match[1]!, id: match[2]! });
      }
    }
    const ids = new Map<string, string>();
    for (const [path, content] of documents) ids.set(path, blobId(content));
    const added: string[] = [];
    const changed: string[] = [];
    const deleted: string[] = [];
    for (const [path, id] of ids) {
      const before = existing.get(path);
      if (!before) added.push(path);
      else if (before.id !== id || before.mode !== "100644") changed.push(path);
    }
    for (const path of existing.keys())
      if (path.startsWith(MANAGED_PREFIX) && !ids.has(path)) deleted.push(path);
    const diff = { added, changed, deleted };
    if (added.length + changed.length + deleted.length === 0) return { commit: null, diff };

    const scratch = await mkdtemp(join(this.#dir, "scratch-"));
    try {
      const fresh = [...added, ...changed];
      if (fresh.length > 0) {
        const files = await Promise.all(
          fresh.map(async (path, i) => {
            const file = join(scratch, String(i));
            await writeFile(file, documents.get(path)!);
            return file;
          }),
        );
        const hashed = (
          await (
            await this.#git(auth, {}, `${files.join("\n")}\n`)
          ).raw(["hash-object", "-w", "--no-filters", "--stdin-paths"])
        )
          .trim()
          .split("\n");
        fresh.forEach((path, i) => {
          if (hashed[i] !== ids.get(path))
            throw new Error(`git stored ${path} as ${hashed[i]}, expected ${ids.get(path)}`);
        });
      }
      // Everything outside status/ (a README, someone's notes) is carried over untouched.
      const entries: string[] = [];
      for (const [path, entry] of existing)
        if (!path.startsWith(MANAGED_PREFIX)) entries.push(`${entry.mode} ${entry.id}\t${path}`);
      for (const [path, id] of ids) entries.push(`100644 ${id}\t${path}`);
      const index = { GIT_INDEX_FILE: join(scratch, "index") };
      await (await this.#git(auth, index, `${entries.join("\0")}\0`)).raw([
        "update-index",
        "-z",
        "--index-info",
      ]);
      const tree = (await (await this.#git(auth, index)).raw(["write-tree"])).trim();
      const date = `@${Math.floor(this.#clock.now() / 1000)} +0000`;
      const identity = {
        GIT_AUTHOR_NAME: this.#author.name,
        GIT_AUTHOR_EMAIL: this.#author.email,
        GIT_AUTHOR_DATE: date,
        GIT_COMMITTER_NAME: this.#author.name,
        GIT_COMMITTER_EMAIL: this.#author.email,
        GIT_COMMITTER_DATE: date,
      };
      const message = commitMessage(diff);
      const commit = (
        await (
          await this.#git(auth, identity, message)
        ).raw(["commit-tree", tree, ...(parent ? ["-p", parent] : [])])
      ).trim();
      return { commit, diff };
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  }
}

function validate(documents: readonly StatusDocument[]): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const doc of [...documents].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    if (!DOCUMENT_PATH.test(doc.path) || doc.path.split("/").some((s) => s === "." || s === ".."))
      throw new Error(
        `status document path ${JSON.stringify(doc.path)} must look like status/<kind>/<name>.yaml`,
      );
    if (out.has(doc.path)) throw new Error(`status document ${doc.path} is listed twice`);
    out.set(doc.path, Buffer.from(doc.content, "utf8"));
  }
  return out;
}

function commitMessage(diff: Pick<StatusCommitResult, "added" | "changed" | "deleted">): string {
  const total = diff.added.length + diff.changed.length + diff.deleted.length;
  const lines = [
    ...diff.added.map((p) => `A ${p}`),
    ...diff.changed.map((p) => `M ${p}`),
    ...diff.deleted.map((p) => `D ${p}`),
  ];
  const shown = lines.slice(0, 100);
  if (lines.length > shown.length) shown.push(`... and ${lines.length - shown.length} more`);
  const counts = `+${diff.added.length} ~${diff.changed.length} -${diff.deleted.length}`;
  return `rlark status: ${total} object${total === 1 ? "" : "s"} (${counts})\n\n${shown.join("\n")}\n`;
}
