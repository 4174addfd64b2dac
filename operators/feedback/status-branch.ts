import { createHash } from "node:crypto";
import { EventEmitter } from "node:events";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type Clock, systemClock, type TimerId } from "../lib/clock.ts";
import { type Logger, silentLogger } from "../lib/logger.ts";
import { type GitAuth, gitIn, gitRemote, repoKey } from "../source/index.ts";
import { documentPathOnBranch, type StatusBranchLayout, statusBranchPath } from "./status-layout.ts";

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
  /** How long a git command talking to it may show no progress (the hub's --git-timeout). */
  readonly timeoutMs?: number;
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
  /**
   * Where each file goes on the branch; default "sharded" (see statusBranchPath). A branch written
   * in another layout is moved to this one by the next commit, contents unchanged.
   */
  layout?: StatusBranchLayout;
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
  /** Files that only moved to the writer's layout (same content, new place on the branch). */
  moved: string[];
}

export interface StatusBranchWriter {
  readonly statusBranch: string;
  readonly layout: StatusBranchLayout;
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
/** Scratch files written at once when storing new blobs. */
const WRITE_BATCH = 64;

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
  readonly layout: StatusBranchLayout;
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
  /** The full listing of the branch tip this writer last pushed: the next commit diffs against it without `ls-tree -r`. */
  #tip: { commit: string; files: Map<string, { mode: string; id: string }> } | undefined;
  /** The commit whose tree the writer's index file holds; unknown after a restart. */
  #indexCommit: string | null | undefined;
  /** Blob ids of the contents last written, by document path: unchanged files are not hashed again. */
  #blobIds = new Map<string, { content: string; id: string; place: string }>();
  /** documentPathOnBranch of the files on the tip (a SHA-1 each; 100,000 of them per commit added up). */
  #origins = new Map<string, string>();

  constructor(options: StatusBranchWriterOptions) {
    super();
    const status = branchName(options.statusBranch ?? DEFAULT_STATUS_BRANCH);
    assertBranchName(status);
    if (status === branchName(options.remote.branch))
      throw new Error(
        `refusing to write status to ${status}: it is the branch users push to; choose another --status-branch`,
      );
    this.statusBranch = status;
    this.layout = options.layout ?? "sharded";
    if (this.layout !== "flat" && this.layout !== "sharded")
      throw new Error(`unknown status branch layout ${JSON.stringify(this.layout)}: flat or sharded`);
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

  /** A command that talks to the remote: bounded, so a frozen server fails it (git-remote.ts). */
  #gitRemote(auth: GitAuth, args: string[]): Promise<string> {
    const timeoutMs = this.#timeoutMs ?? this.#remote.timeoutMs;
    return gitRemote(this.#dir, args, { env: auth.env, ...(timeoutMs ? { timeoutMs } : {}) });
  }

  get #trackingRef(): string {
    return `refs/remotes/origin/${this.statusBranch}`;
  }

  /** Fetches the status branch; null when it does not exist yet. */
  async #fetchTip(auth: GitAuth): Promise<string | null> {
    const git = await this.#git(auth);
    const remoteRef = `refs/heads/${this.statusBranch}`;
    const listed = await this.#gitRemote(auth, ["ls-remote", auth.remoteUrl, remoteRef]);
    if (!listed.trim()) {
      await git.raw(["update-ref", "-d", this.#trackingRef]).catch(() => {});
      this.#fetched = true;
      return null;
    }
    await this.#gitRemote(auth, [
      "fetch",
      "--no-tags",
      "--quiet",
      "--progress",
      auth.remoteUrl,
      `+${remoteRef}:${this.#trackingRef}`,
    ]);
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
      if (!built.commit) {
        if (parent) this.#tip = { commit: parent, files: built.files };
        return { ...built.diff, committed: false, commit: parent, attempts: attempt - 1 };
      }
      try {
        const git = await this.#git(auth);
        // Never forced: someone else's commit on the status branch is rebuilt upon, not overwritten.
        await this.#gitRemote(auth, [
          "push",
          "--quiet",
          "--progress",
          auth.remoteUrl,
          `${built.commit}:refs/heads/${this.statusBranch}`,
        ]);
        await git.raw(["update-ref", this.#trackingRef, built.commit]);
        this.#tip = { commit: built.commit, files: built.files };
        // Nothing else in this clone runs git's automatic gc (no fetch on the happy path), and every
        // commit leaves loose objects behind; synchronous so nothing outlives the writer.
        await git.raw(["-c", "gc.autoDetach=false", "gc", "--auto", "--quiet"]).catch(() => {});
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
    documents: ReadonlyMap<string, string>,
    parent: string | null,
  ): Promise<{ commit: string | null; diff: StatusDiff; files: Map<string, { mode: string; id: string }> }> {
    const git = await this.#git(auth);
    // The branch's files (every path, not only status/): the tip this writer pushed last, or listed.
    let existing = new Map<string, { mode: string; id: string }>();
    if (parent && this.#tip?.commit === parent) existing = this.#tip.files;
    else if (parent) {
      const listing = await git.raw(["ls-tree", "-r", "-z", "--full-tree", parent]);
      for (const entry of listing.split("\0")) {
        const match = /^(\d+) \w+ ([0-9a-f]+)\t(.*)$/s.exec(entry);
        if (match) existing.set(match[3]!, { mode: match[1]!, id: match[2]! });
      }
    }
    this.#tip = undefined; // `existing` is updated in place below
    // Compared by document path, so a branch in another layout shows as moved, not as deleted and added.
    const before = new Map<string, { path: string; mode: string; id: string }>();
    const origins = new Map<string, string>();
    for (const [path, entry] of existing) {
      if (!path.startsWith(MANAGED_PREFIX)) continue;
      const origin = this.#origins.get(path) ?? documentPathOnBranch(path);
      origins.set(path, origin);
      before.set(origin, { path, ...entry });
    }
    this.#origins = origins;
    const ids = new Map<string, string>();
    const places = new Map<string, string>();
    const blobIds = new Map<string, { content: string; id: string; place: string }>();
    for (const [path, content] of documents) {
      const known = this.#blobIds.get(path);
      const id = known?.content === content ? known.id : blobId(Buffer.from(content, "utf8"));
      const place = known?.place ?? statusBranchPath(path, this.layout);
      ids.set(path, id);
      places.set(path, place);
      blobIds.set(path, { content, id, place });
    }
    this.#blobIds = blobIds;
    const added: string[] = [];
    const changed: string[] = [];
    const deleted: string[] = [];
    const moved: string[] = [];
    for (const [path, id] of ids) {
      const old = before.get(path);
      if (!old) added.push(path);
      else if (old.id !== id || old.mode !== "100644") changed.push(path);
      else if (old.path !== places.get(path)) moved.push(path);
    }
    for (const path of before.keys()) if (!ids.has(path)) deleted.push(path);
    // The exact change to the branch's tree: status/ files to remove, and to write (new id or place).
    const wanted = new Map<string, string>();
    for (const [path, id] of ids) wanted.set(places.get(path)!, id);
    const updates: [path: string, entry: { mode: string; id: string } | null][] = [];
    for (const path of existing.keys())
      if (path.startsWith(MANAGED_PREFIX) && !wanted.has(path)) updates.push([path, null]);
    for (const [path, id] of wanted) {
      const old = existing.get(path);
      if (old?.id !== id || old.mode !== "100644") updates.push([path, { mode: "100644", id }]);
    }
    const diff = { added, changed, deleted, moved };
    if (updates.length === 0) return { commit: null, diff, files: existing };
    // Index order (bytes; the paths are ASCII): git inserts out-of-order entries one by one.
    updates.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

    const scratch = await mkdtemp(join(this.#dir, "scratch-"));
    try {
      const fresh = [...added, ...changed];
      if (fresh.length > 0) {
        // A bounded number open at once: 100,000 at a time ran out of file descriptors (EMFILE).
        const files = fresh.map((_, i) => join(scratch, String(i)));
        for (let from = 0; from < fresh.length; from += WRITE_BATCH)
          await Promise.all(
            fresh
              .slice(from, from + WRITE_BATCH)
              .map((path, i) => writeFile(files[from + i]!, documents.get(path)!)),
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
      // The index holds the parent's tree (read-tree also primes its cache of tree ids), so only the
      // changed entries go through update-index and write-tree rehashes only the directories they
      // are in: a commit costs what it changes, not what the branch holds. Files outside status/
      // (a README, someone's notes) are carried over untouched.
      const index = { GIT_INDEX_FILE: join(this.#dir, "rlark-status.index") };
      if (this.#indexCommit !== parent) {
        this.#indexCommit = undefined;
        // A git killed mid-update (a timeout, a crash) leaves its lock; the index is rebuilt anyway.
        await rm(`${index.GIT_INDEX_FILE}.lock`, { force: true });
        if (parent) await (await this.#git(auth, index)).raw(["read-tree", parent]);
        else await rm(index.GIT_INDEX_FILE, { force: true });
      }
      this.#indexCommit = undefined; // until the commit is built from what the index holds
      const lines = updates.map(([path, entry]) =>
        entry ? `${entry.mode} ${entry.id}\t${path}` : `0 ${"0".repeat(40)}\t${path}`,
      );
      await (await this.#git(auth, index, `${lines.join("\0")}\0`)).raw([
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
      const message = commitMessage(diff, this.layout);
      const commit = (
        await (
          await this.#git(auth, identity, message)
        ).raw(["commit-tree", tree, ...(parent ? ["-p", parent] : [])])
      ).trim();
      this.#indexCommit = commit;
      for (const [path, entry] of updates) {
        if (entry) existing.set(path, entry);
        else existing.delete(path);
      }
      return { commit, diff, files: existing };
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  }
}

function validate(documents: readonly StatusDocument[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const doc of [...documents].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    if (!DOCUMENT_PATH.test(doc.path) || doc.path.split("/").some((s) => s === "." || s === ".."))
      throw new Error(
        `status document path ${JSON.stringify(doc.path)} must look like status/<kind>/<name>.yaml`,
      );
    if (out.has(doc.path)) throw new Error(`status document ${doc.path} is listed twice`);
    out.set(doc.path, doc.content);
  }
  return out;
}

type StatusDiff = Pick<StatusCommitResult, "added" | "changed" | "deleted" | "moved">;

function commitMessage(diff: StatusDiff, layout: StatusBranchLayout): string {
  const total = diff.added.length + diff.changed.length + diff.deleted.length;
  const lines = [
    ...diff.added.map((p) => `A ${p}`),
    ...diff.changed.map((p) => `M ${p}`),
    ...diff.deleted.map((p) => `D ${p}`),
  ];
  const shown = lines.slice(0, 100);
  if (lines.length > shown.length) shown.push(`... and ${lines.length - shown.length} more`);
  const counts = `+${diff.added.length} ~${diff.changed.length} -${diff.deleted.length}`;
  const move = diff.moved.length > 0 ? `${diff.moved.length} moved to the ${layout} layout` : "";
  if (total === 0) return `rlark status: ${move || "rewritten"}\n`;
  return `rlark status: ${total} object${total === 1 ? "" : "s"} (${counts})${move ? `; ${move}` : ""}\n\n${shown.join("\n")}\n`;
}
