import { existsSync, readFileSync } from "node:fs";
import { symlink } from "node:fs/promises";
import { createServer, type IncomingHttpHeaders } from "node:http";
import { join } from "node:path";
import t, { type Test } from "tap";
import { FakeClock } from "../../operators/lib/clock.ts";
import {
  type ApplyRevisionInput,
  type ApplyRevisionResult,
  createGitRepository,
  createGitWatcher,
  type GitRepository,
  type SourceDiagnostic,
  type SourceStatus,
} from "../../operators/source/index.ts";
import { repositoryOnGit } from "../helpers/repository-on-git.ts";

const job = (name: string) => `apiVersion: rlinf.io/v1alpha1\nkind: Job\nmetadata:\n  name: ${name}\n`;

interface Recorder {
  calls: ApplyRevisionInput[];
  /** Files seen in `<dir>/<path>` at each call, read during the call. */
  seen: Array<Record<string, string>>;
  verdict: (input: ApplyRevisionInput) => ApplyRevisionResult;
  apply: (input: ApplyRevisionInput) => Promise<ApplyRevisionResult>;
}

function recorder(files: string[]): Recorder {
  const r: Recorder = {
    calls: [],
    seen: [],
    verdict: () => ({ accepted: true, errors: [] }),
    async apply(input) {
      r.calls.push(input);
      const seen: Record<string, string> = {};
      for (const file of files) {
        const full = join(input.dir, input.path, file);
        if (existsSync(full)) seen[file] = readFileSync(full, "utf8");
      }
      r.seen.push(seen);
      return r.verdict(input);
    },
  };
  return r;
}

async function setup(t: Test, options: { daemon?: boolean } = {}) {
  return { ...(await repositoryOnGit(t, options)), clock: new FakeClock() };
}

function nextStatus(watcher: { on: (e: "status", l: (s: SourceStatus) => void) => unknown }) {
  return new Promise<SourceStatus>((resolve) => {
    const listener = (status: SourceStatus) => resolve(status);
    watcher.on("status", listener);
  });
}

t.test("a pushed revision is applied with its sha and a directory holding its files", async (t) => {
  const { server, dataDir, clock, repository } = await setup(t);
  const rec = recorder(["jobs/a.yaml", "jobs/b.yaml"]);
  const first = await server.commit({ "manifests/jobs/a.yaml": job("a"), "README.md": "hi" });
  const watcher = createGitWatcher({
    repository,
    applyRevision: rec.apply,
    dataDir,
    path: "manifests",
    clock,
  });
  await watcher.start();
  let status = await watcher.trigger();
  t.equal(rec.calls.at(-1)?.revision, first);
  t.equal(rec.calls.at(-1)?.path, "manifests");
  t.same(rec.seen.at(-1), { "jobs/a.yaml": job("a") });
  t.same(
    [...(rec.calls.at(-1)?.blobs?.keys() ?? [])].sort(),
    ["README.md", "manifests/jobs/a.yaml"],
    "with git's blob ids of the revision's files, by path in the tree",
  );
  t.equal(status.state, "Synced");
  t.equal(status.lastAppliedRevision, first);
  t.equal(status.url, server.fileUrl);

  const second = await server.commit({ "manifests/jobs/b.yaml": job("b"), "manifests/jobs/a.yaml": null });
  status = await watcher.trigger();
  t.equal(rec.calls.at(-1)?.revision, second);
  t.same(rec.seen.at(-1), { "jobs/b.yaml": job("b") }, "a deleted file is gone from the new snapshot");
  t.equal(status.lastAppliedRevision, second);
  t.equal(status.lastAppliedTime, new Date(clock.now()).toISOString());
  t.same(clock.pendingDelays(), [60_000], "the next poll is one interval away");
  clock.advance(30_000);
  t.equal(watcher.metrics().revisionAgeSeconds, 30, "the revision-age gauge follows the clock");

  const calls = rec.calls.length;
  await watcher.trigger();
  t.equal(rec.calls.length, calls, "an unchanged branch is not applied again");
  await watcher.stop();

  const restarted = createGitWatcher({
    repository,
    applyRevision: rec.apply,
    dataDir,
    path: "manifests",
    clock,
  });
  await restarted.start();
  t.equal(restarted.status().lastAppliedRevision, second, "a restart knows the last applied revision");
  status = await restarted.trigger();
  t.equal(rec.calls.length, calls, "and does not apply it again");
  t.equal(status.state, "Synced");
  await restarted.stop();

  const reapplying = createGitWatcher({
    repository,
    applyRevision: rec.apply,
    dataDir,
    path: "manifests",
    clock,
    reapplyOnStart: true,
  });
  await reapplying.start();
  await reapplying.trigger();
  t.equal(rec.calls.length, calls + 1, "reapplyOnStart applies the persisted revision once more");
  t.equal(rec.calls.at(-1)?.revision, second);
  await reapplying.trigger();
  t.equal(rec.calls.length, calls + 1, "and only once");
  await reapplying.stop();
});

t.test("an invalid revision is refused, the last good one stays, and it is not retried", async (t) => {
  const { server, dataDir, clock, repository } = await setup(t);
  const rec = recorder(["job.yaml"]);
  const good = await server.commit({ "job.yaml": job("good") });
  const watcher = createGitWatcher({ repository, applyRevision: rec.apply, dataDir, clock });
  await watcher.start();
  await watcher.trigger();

  const error: SourceDiagnostic = {
    file: "job.yaml",
    line: 3,
    column: 9,
    kind: "Job",
    name: "bad name",
    path: "/metadata/name",
    rule: "schema",
    message: "must match DNS-1123",
  };
  rec.verdict = () => ({ accepted: false, errors: [error] });
  const bad = await server.commit({ "job.yaml": job("bad name") });
  const seen: SourceStatus[] = [];
  watcher.on("status", (s) => seen.push(s));
  let status = await watcher.trigger();
  t.equal(status.state, "Invalid");
  t.same(status.errors, [error]);
  t.equal(status.lastAttemptedRevision, bad);
  t.equal(status.lastAppliedRevision, good, "the last good revision stays applied");
  t.equal(seen.at(-1)?.state, "Invalid", "listeners hear about it");

  const calls = rec.calls.length;
  status = await watcher.trigger();
  clock.advance(60_000);
  status = await watcher.trigger();
  t.equal(rec.calls.length, calls, "the same invalid commit is not validated again");
  t.equal(status.state, "Invalid");

  await server.git("reset", "--hard", "--quiet", good);
  await server.git("push", "--quiet", "--force", "origin", "HEAD:refs/heads/main");
  status = await watcher.trigger();
  t.equal(status.state, "Synced", "reverting the branch to the applied commit is Synced again");
  t.same(status.errors, []);
  t.equal(rec.calls.length, calls, "without applying it again");

  rec.verdict = () => ({ accepted: true, errors: [] });
  const fixed = await server.commit({ "job.yaml": job("fixed") });
  status = await watcher.trigger();
  t.equal(status.state, "Synced");
  t.equal(status.lastAppliedRevision, fixed);
  t.same(status.errors, []);
  await watcher.stop();
});

t.test("a force-push that rewrites history is picked up", async (t) => {
  const { server, dataDir, clock, repository } = await setup(t);
  const rec = recorder(["a.yaml", "b.yaml", "c.yaml"]);
  await server.commit({ "a.yaml": job("a") });
  const doomed = await server.commit({ "b.yaml": job("b") });
  const watcher = createGitWatcher({ repository, applyRevision: rec.apply, dataDir, clock });
  await watcher.start();
  t.equal((await watcher.trigger()).lastAppliedRevision, doomed);

  await server.git("reset", "--hard", "--quiet", "HEAD~1");
  const rewritten = await server.commit({ "c.yaml": job("c") }, "rewritten");
  const status = await watcher.trigger();
  t.not(rewritten, doomed);
  t.equal(status.lastAppliedRevision, rewritten);
  t.same(rec.seen.at(-1), { "a.yaml": job("a"), "c.yaml": job("c") }, "the dropped commit's file is gone");
  await watcher.stop();
});

t.test("a missing --path refuses the revision with a diagnostic that says so", async (t) => {
  const { server, dataDir, clock, repository } = await setup(t);
  const rec = recorder([]);
  await server.commit({ "elsewhere/a.yaml": job("a") });
  const watcher = createGitWatcher({
    repository,
    applyRevision: rec.apply,
    dataDir,
    clock,
    path: "manifests",
  });
  await watcher.start();
  const status = await watcher.trigger();
  t.equal(status.state, "Invalid");
  t.equal(rec.calls.length, 0);
  t.equal(status.errors[0]?.rule, "source/path");
  t.match(status.errors[0]?.message, /manifests does not exist/);
  await watcher.stop();
});

t.test("a --path that is a symlink out of the repository is refused", async (t) => {
  const { server, dataDir, clock, repository } = await setup(t);
  const rec = recorder([]);
  await symlink("/etc", join(server.work, "manifests"));
  await server.commit({ "README.md": "x" });
  const watcher = createGitWatcher({
    repository,
    applyRevision: rec.apply,
    dataDir,
    clock,
    path: "manifests",
  });
  await watcher.start();
  const status = await watcher.trigger();
  t.equal(status.state, "Invalid");
  t.equal(rec.calls.length, 0, "the loader never sees /etc");
  t.match(status.errors[0]?.message, /symlink out of the repository/);
  await watcher.stop();
});

t.test("a --path linked out of the repository does not tell whether its target exists", async (t) => {
  const messages: string[] = [];
  for (const target of ["/etc", "/no/such/dir-for-rlark", "/etc/hostname"]) {
    const { server, dataDir, clock, repository } = await setup(t);
    await symlink(target, join(server.work, "manifests"));
    await server.commit({ "README.md": "x" });
    const watcher = createGitWatcher({
      repository,
      applyRevision: recorder([]).apply,
      dataDir,
      clock,
      path: "manifests",
    });
    await watcher.start();
    const status = await watcher.trigger();
    await watcher.stop();
    t.equal(status.state, "Invalid", target);
    messages.push(status.errors[0]?.message.replace(/revision [0-9a-f]+/, "revision R") ?? "");
  }
  t.equal(new Set(messages).size, 1, messages.join(" | "));
  t.notMatch(messages[0], "/etc");
});

t.test("an apply that throws (store down) is retried with backoff, not refused", async (t) => {
  const { server, dataDir, clock, repository } = await setup(t);
  const sha = await server.commit({ "a.yaml": job("a") });
  let calls = 0;
  const watcher = createGitWatcher({
    repository,
    dataDir,
    clock,
    applyRevision: async () => {
      calls++;
      if (calls === 1) throw new Error("store unavailable");
      return { accepted: true, errors: [] };
    },
  });
  const first = nextStatus(watcher);
  await watcher.start();
  let status = await first;
  t.equal(status.state, "Invalid");
  t.equal(status.errors[0]?.rule, "source/apply");
  t.match(status.errors[0]?.message, /store unavailable/);
  t.same(clock.pendingDelays(), [1_000], "retried after 1 s");
  t.equal(watcher.metrics().consecutiveFetchFailures, 0, "it is not a fetch failure");

  const next = nextStatus(watcher);
  clock.advance(1_000);
  status = await next;
  t.equal(calls, 2, "the same commit is applied again");
  t.equal(status.state, "Synced");
  t.equal(status.lastAppliedRevision, sha);
  await watcher.stop();
});

t.test("concurrent triggers share syncs instead of queueing one each", async (t) => {
  const { server, dataDir, clock, repository } = await setup(t);
  await server.commit({ "a.yaml": job("a") });
  let fetches = 0;
  const counting: GitRepository = {
    url: repository.url,
    branch: repository.branch,
    dir: repository.dir,
    timeoutMs: repository.timeoutMs,
    fetch: () => {
      fetches++;
      return repository.fetch();
    },
    materialise: (revision) => repository.materialise(revision),
    pruneSnapshots: (keep) => repository.pruneSnapshots(keep),
    commitTime: (revision) => repository.commitTime(revision),
    auth: () => repository.auth(),
    redact: (text) => repository.redact(text),
  };
  const rec = recorder([]);
  const watcher = createGitWatcher({ repository: counting, applyRevision: rec.apply, dataDir, clock });
  await watcher.start();
  const statuses = await Promise.all([1, 2, 3, 4, 5].map(() => watcher.trigger()));
  t.ok(fetches <= 2, `five triggers made ${fetches} fetches`);
  t.equal(rec.calls.length, 1);
  t.ok(statuses.every((s) => s.state === "Synced"));
  await watcher.stop();
});

t.test("a git daemon that goes down: FetchFailed with backoff, last good kept, then recovery", async (t) => {
  const { server, dataDir, clock, repository } = await setup(t, { daemon: true });
  const rec = recorder(["a.yaml"]);
  const good = await server.commit({ "a.yaml": job("a") });
  const watcher = createGitWatcher({
    repository,
    applyRevision: rec.apply,
    dataDir,
    clock,
    intervalMs: 60_000,
  });
  await watcher.start();
  t.equal((await watcher.trigger()).lastAppliedRevision, good, "applied over git://");

  await server.stopDaemon();
  let status = await watcher.trigger();
  t.equal(status.state, "FetchFailed");
  t.equal(status.lastAppliedRevision, good, "the last good revision stays");
  t.match(status.fetchError, /git fetch .*127\.0\.0\.1/);
  t.same(clock.pendingDelays(), [1_000], "first retry after 1 s");
  t.equal(watcher.metrics().consecutiveFetchFailures, 1);

  for (const expected of [2_000, 4_000, 8_000]) {
    const next = nextStatus(watcher);
    clock.advance(clock.pendingDelays()[0] ?? 0);
    status = await next;
    t.equal(status.state, "FetchFailed");
    t.same(clock.pendingDelays(), [expected], `then ${expected / 1000} s`);
  }

  await server.startDaemon();
  const newer = await server.commit({ "a.yaml": job("a2") });
  const next = nextStatus(watcher);
  clock.advance(8_000);
  status = await next;
  t.equal(status.state, "Synced");
  t.equal(status.lastAppliedRevision, newer);
  t.notOk("fetchError" in status, "the fetch error is cleared");
  t.same(clock.pendingDelays(), [60_000], "back to the normal interval");
  await watcher.stop();
});

t.test("backoff never waits longer than the poll interval", async (t) => {
  const { dataDir, clock } = await setup(t);
  const repository = createGitRepository({ url: join(dataDir, "no-such-repo"), branch: "main", dataDir });
  const watcher = createGitWatcher({
    repository,
    applyRevision: recorder([]).apply,
    dataDir,
    clock,
    intervalMs: 5_000,
  });
  await watcher.start();
  for (let i = 0; i < 4; i++) await watcher.trigger();
  t.same(clock.pendingDelays(), [5_000]);
  t.equal(watcher.status().state, "FetchFailed");
  await watcher.stop();
});

t.test("an https token travels as a header and never shows in status or errors", async (t) => {
  const headers: IncomingHttpHeaders[] = [];
  const urls: string[] = [];
  const http = createServer((req, res) => {
    headers.push(req.headers);
    urls.push(req.url ?? "");
    res.writeHead(500, { "content-type": "text/plain" });
    res.end("broken on purpose");
  });
  await new Promise<void>((r) => http.listen(0, "127.0.0.1", r));
  t.teardown(() => new Promise<void>((r) => http.close(() => r())));
  const address = http.address();
  const port = typeof address === "object" && address ? address.port : 0;
  const { dataDir, clock } = await setup(t);

  const token = "ghp_s3cretT0kenValue";
  const repository = createGitRepository({
    url: `https://deploy:${token}@127.0.0.1:${port}/org/manifests.git`.replace("https:", "http:"),
    branch: "main",
    dataDir,
  });
  t.equal(repository.url, `http://127.0.0.1:${port}/org/manifests.git`);
  const watcher = createGitWatcher({ repository, applyRevision: recorder([]).apply, dataDir, clock });
  await watcher.start();
  const status = await watcher.trigger();
  t.equal(status.state, "FetchFailed");
  t.equal(status.url, `http://127.0.0.1:${port}/org/manifests.git`);
  t.notMatch(JSON.stringify(status), token, "no token anywhere in the status");
  t.notMatch(JSON.stringify(status), "deploy:", "nor the userinfo");
  t.ok(headers.length > 0, "git reached the server");
  t.equal(
    headers[0]?.authorization,
    `Basic ${Buffer.from(`deploy:${token}`).toString("base64")}`,
    "the token is sent as an Authorization header",
  );
  t.notMatch(urls.join(" "), token);
  await watcher.stop();

  const explicit = createGitRepository({
    url: `http://127.0.0.1:${port}/org/other.git`,
    branch: "main",
    dataDir,
    credentials: { token },
  });
  const error = await explicit.fetch().then(
    () => "",
    (e: Error) => e.message,
  );
  t.match(error, /127\.0\.0\.1/);
  t.notMatch(error, token);
  t.equal(
    headers.at(-1)?.authorization,
    `Basic ${Buffer.from(`x-access-token:${token}`).toString("base64")}`,
  );
});
