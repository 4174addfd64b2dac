import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t, { type Test } from "tap";
import {
  createStatusBranchWriter,
  documentPathOnBranch,
  renderStatusYaml,
  type StatusCommitResult,
  type StatusDocument,
} from "../../operators/feedback/index.ts";
import { FakeClock } from "../../operators/lib/clock.ts";
import { createGitRepository, repoKey } from "../../operators/source/index.ts";
import { runGit } from "../helpers/git-server.ts";
import { repositoryOnGit } from "../helpers/repository-on-git.ts";

const jobStatus = (name: string, phase: string): StatusDocument => ({
  path: `status/job/${name}.yaml`,
  content: renderStatusYaml({ kind: "Job", metadata: { name }, status: { phase } }),
});

async function setup(t: Test, options: { daemon?: boolean } = {}) {
  const { server, dataDir, repository: remote } = await repositoryOnGit(t, options);
  const tracked = await server.commit({ "jobs/train.yaml": "kind: Job\n" });
  const clock = new FakeClock();
  let documents: StatusDocument[] = [];
  const writer = createStatusBranchWriter({ remote, dataDir, clock, documents: () => documents });
  t.teardown(() => writer.stop());
  return {
    server,
    dataDir,
    tracked,
    writer,
    clock,
    set(docs: StatusDocument[]) {
      documents = docs;
    },
    /** Files on the remote status branch: document path (whatever the layout) → content. */
    async remoteFiles(): Promise<Record<string, string>> {
      const out: Record<string, string> = {};
      const paths = (await server.gitBare("ls-tree", "-r", "--name-only", "rlark/status"))
        .split("\n")
        .filter(Boolean);
      for (const path of paths)
        out[documentPathOnBranch(path)] = await server.gitBare("show", `rlark/status:${path}`);
      return out;
    },
    commits: async () => Number((await server.gitBare("rev-list", "--count", "rlark/status")).trim()),
  };
}

function nextCommit(writer: { on(e: "commit", l: (r: StatusCommitResult) => void): unknown }) {
  return new Promise<StatusCommitResult>((resolve) => writer.on("commit", resolve));
}

t.test("status files are committed to rlark/status by rlark-bot, never to the tracked branch", async (t) => {
  const { server, tracked, writer, set, remoteFiles } = await setup(t);
  set([jobStatus("train", "Running"), jobStatus("eval", "Pending")]);
  const result = await writer.flush();
  t.equal(result.committed, true);
  t.same(result.added, ["status/job/eval.yaml", "status/job/train.yaml"]);
  t.same(await remoteFiles(), {
    "status/job/eval.yaml": "kind: Job\nmetadata:\n  name: eval\nstatus:\n  phase: Pending\n",
    "status/job/train.yaml": "kind: Job\nmetadata:\n  name: train\nstatus:\n  phase: Running\n",
  });
  t.equal(
    (await server.gitBare("log", "-1", "--format=%an <%ae>|%cn <%ce>", "rlark/status")).trim(),
    "rlark-bot <rlark-bot@users.noreply.rlark.io>|rlark-bot <rlark-bot@users.noreply.rlark.io>",
  );
  t.equal(result.commit, (await server.gitBare("rev-parse", "rlark/status")).trim());
  t.equal((await server.gitBare("rev-parse", "main")).trim(), tracked, "the tracked branch is untouched");
});

t.test("two changes within the debounce window make one commit, after 10 s", async (t) => {
  const { writer, clock, set, remoteFiles, commits } = await setup(t);
  set([jobStatus("train", "Pending")]);
  writer.notify();
  clock.advance(4_000);
  set([jobStatus("train", "Running")]);
  writer.notify();
  t.same(clock.pendingDelays(), [6_000], "one timer for both changes, due 10 s after the first");
  clock.advance(5_999);
  t.equal(clock.pendingDelays().length, 1, "nothing committed before 10 s have passed");

  const committed = nextCommit(writer);
  clock.advance(1);
  const result = await committed;
  t.equal(result.committed, true);
  t.equal(await commits(), 1, "exactly one commit");
  t.match((await remoteFiles())["status/job/train.yaml"], /phase: Running/, "with the latest content");

  // Changes right after a commit wait another full window.
  set([jobStatus("train", "Succeeded")]);
  writer.notify();
  t.same(clock.pendingDelays(), [10_000]);
  const again = nextCommit(writer);
  clock.advance(10_000);
  await again;
  t.equal(await commits(), 2);
});

t.test("nothing is committed when no content changed", async (t) => {
  const { writer, set, commits } = await setup(t);
  set([jobStatus("train", "Running")]);
  t.equal((await writer.flush()).committed, true);
  const same = await writer.flush();
  t.equal(same.committed, false);
  t.equal(same.attempts, 0);
  set([jobStatus("train", "Running")]);
  t.equal((await writer.flush()).committed, false, "identical content rendered again");
  t.equal(await commits(), 1);
});

t.test("a restarted writer continues the branch and commits nothing when unchanged", async (t) => {
  const { server, writer, set, commits } = await setup(t);
  const docs = [jobStatus("train", "Running")];
  set(docs);
  await writer.flush();
  await writer.stop();
  const dataDir = await mkdtemp(join(tmpdir(), "rlark-data-"));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const restarted = createStatusBranchWriter({
    remote: createGitRepository({ url: server.fileUrl, branch: "main", dataDir }),
    dataDir,
    clock: new FakeClock(),
    documents: () => docs,
  });
  t.teardown(() => restarted.stop());
  t.equal((await restarted.flush()).committed, false, "a fresh clone sees the content is already there");
  t.equal(await commits(), 1);
});

t.test("an object that is gone has its status file deleted", async (t) => {
  const { writer, set, remoteFiles } = await setup(t);
  set([jobStatus("train", "Running"), jobStatus("eval", "Running")]);
  await writer.flush();
  set([jobStatus("train", "Running")]);
  const result = await writer.flush();
  t.same(result.deleted, ["status/job/eval.yaml"]);
  t.same(Object.keys(await remoteFiles()), ["status/job/train.yaml"]);
});

t.test(
  "a concurrent push to the status branch is rebuilt upon and both survive (over git daemon)",
  async (t) => {
    const { server, writer, set, remoteFiles } = await setup(t, { daemon: true });
    set([jobStatus("train", "Running")]);
    await writer.flush();

    // Someone else (another hub, a person) pushes to the status branch meanwhile.
    const other = join(server.root, "other");
    await runGit(server.root, ["clone", "--quiet", "--branch", "rlark/status", server.bare, other]);
    await writeFile(join(other, "NOTES.md"), "kept by hand\n");
    await runGit(other, ["add", "NOTES.md"]);
    await runGit(other, ["commit", "--quiet", "-m", "notes"]);
    await runGit(other, ["push", "--quiet", "origin", "rlark/status"]);
    const theirs = (await runGit(other, ["rev-parse", "HEAD"])).trim();

    set([jobStatus("train", "Succeeded"), jobStatus("eval", "Pending")]);
    const result = await writer.flush();
    t.equal(result.committed, true);
    t.equal(result.attempts, 2, "the first push was refused as non-fast-forward, the second went through");
    const files = await remoteFiles();
    t.equal(files["NOTES.md"], "kept by hand\n", "their file survives");
    t.match(files["status/job/train.yaml"], /phase: Succeeded/, "our status is on top");
    t.match(files["status/job/eval.yaml"], /phase: Pending/);
    await t.resolves(
      server.gitBare("merge-base", "--is-ancestor", theirs, "rlark/status"),
      "their commit is in the branch's history",
    );
  },
);

t.test("a push that keeps failing is retried a bounded number of times and reported", async (t) => {
  const { server, set } = await setup(t);
  const dataDir = await mkdtemp(join(tmpdir(), "rlark-data-"));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  // A pre-receive hook that refuses every update of the status branch.
  const hook = join(server.bare, "hooks", "pre-receive");
  const tries = join(dataDir, "tries");
  await writeFile(hook, `#!/bin/sh\necho try >> '${tries}'\necho 'status branch is frozen' >&2\nexit 1\n`);
  await chmod(hook, 0o755);
  const clock = new FakeClock();
  const writer = createStatusBranchWriter({
    remote: createGitRepository({ url: server.fileUrl, branch: "main", dataDir }),
    dataDir,
    clock,
    maxAttempts: 3,
    documents: () => [jobStatus("train", "Running")],
  });
  t.teardown(() => writer.stop());
  const failures: Error[] = [];
  writer.on("failed", (e) => failures.push(e));
  set([]);
  await t.rejects(writer.flush(), /frozen/);
  t.equal(failures.length, 1);
  t.equal(
    (await readFile(tries, "utf8")).split("\n").filter(Boolean).length,
    3,
    "three pushes, then it gave up",
  );
  t.same(clock.pendingDelays(), [10_000], "and retried after the debounce window");
});

t.test("writing the tracked branch is refused", async (t) => {
  const remote = {
    url: "file:///nowhere.git",
    branch: "main",
    auth: async () => ({}) as never,
    redact: String,
  };
  const base = { remote, dataDir: "/nonexistent", documents: () => [] };
  t.throws(() => createStatusBranchWriter({ ...base, statusBranch: "main" }), /users push to/);
  t.throws(() => createStatusBranchWriter({ ...base, statusBranch: "refs/heads/main" }), /users push to/);
  t.throws(
    () => createStatusBranchWriter({ ...base, remote: { ...remote, branch: "refs/heads/rlark/status" } }),
    /users push to/,
  );
  t.throws(() => createStatusBranchWriter({ ...base, statusBranch: "bad..name" }), /invalid status branch/);
  t.equal(createStatusBranchWriter(base).statusBranch, "rlark/status");
});

t.test("document paths outside status/ are refused", async (t) => {
  const { writer, set, commits } = await setup(t);
  for (const path of ["README.md", "status/../jobs/train.yaml", "/status/job/x.yaml", "status/job/x.yml"]) {
    set([{ path, content: "x" }]);
    await t.rejects(writer.flush(), /must look like status/, path);
  }
  await t.rejects(commits(), "no status branch was created");
});

t.test("a lock left on the writer's index by a killed git does not stop a restarted writer", async (t) => {
  const { server, dataDir, writer, set, remoteFiles } = await setup(t);
  set([jobStatus("train", "Running")]);
  await writer.flush();
  await writer.stop();
  // The writer keeps its index in its own clone, <data-dir>/status/<key>.git.
  const clone = join(dataDir, "status", `${repoKey(server.fileUrl)}.git`);
  await readFile(join(clone, "rlark-status.index")); // it is there
  await writeFile(join(clone, "rlark-status.index.lock"), "");
  const restarted = createStatusBranchWriter({
    remote: createGitRepository({ url: server.fileUrl, branch: "main", dataDir }),
    dataDir,
    clock: new FakeClock(),
    documents: () => [jobStatus("train", "Succeeded")],
  });
  t.teardown(() => restarted.stop());
  t.equal((await restarted.flush()).committed, true);
  t.match((await remoteFiles())["status/job/train.yaml"], /phase: Succeeded/);
});
