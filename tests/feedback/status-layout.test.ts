// The status branch's layout: files sharded by the SHA-1 of their name, read back by document
// path, and a branch written flat (before the sharded layout) moved over whole by the next commit.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import {
  createStatusBranchWriter,
  documentPathOnBranch,
  renderStatusYaml,
  type StatusDocument,
  statusBranchPath,
  statusDocumentPath,
} from "../../operators/feedback/index.ts";
import { FakeClock } from "../../operators/lib/clock.ts";
import { createGitRepository } from "../../operators/source/index.ts";
import { runGit } from "../helpers/git-server.ts";
import { repositoryOnGit } from "../helpers/repository-on-git.ts";

const doc = (kind: string, name: string, phase: string, namespace?: string): StatusDocument => ({
  path: statusDocumentPath(kind, name, namespace),
  content: renderStatusYaml({ kind, metadata: { name, namespace }, status: { phase } }),
});

t.test("paths: sharded by the first two hex digits of sha1(name), and read back", async (t) => {
  // printf %s train | sha1sum → 94…; eval → 82…; vm → 0a…
  t.equal(statusBranchPath("status/job/train.yaml"), "status/job/94/train.yaml");
  t.equal(statusBranchPath("status/node/agent-local/vm.yaml"), "status/node/agent-local/0a/vm.yaml");
  t.equal(statusBranchPath("status/job/train.yaml", "flat"), "status/job/train.yaml");
  t.equal(documentPathOnBranch("status/job/94/train.yaml"), "status/job/train.yaml");
  t.equal(documentPathOnBranch("status/node/agent-local/0a/vm.yaml"), "status/node/agent-local/vm.yaml");
  t.equal(documentPathOnBranch("status/job/train.yaml"), "status/job/train.yaml", "a flat file is itself");
  t.equal(
    documentPathOnBranch("status/job/82/train.yaml"),
    "status/job/82/train.yaml",
    "not its shard: flat",
  );
  for (const path of ["status/job/a.yaml", "status/node/ns/b-1.yaml", "status/bundle/site.yaml"])
    t.equal(documentPathOnBranch(statusBranchPath(path)), path, path);
});

async function branchFiles(gitBare: (...args: string[]) => Promise<string>, ref: string) {
  const out = new Map<string, string>(); // branch path → blob id
  for (const line of (await gitBare("ls-tree", "-r", ref)).split("\n").filter(Boolean)) {
    const [meta, path] = line.split("\t") as [string, string];
    out.set(path, meta.split(" ")[2]!);
  }
  return out;
}

t.test("the writer stores files sharded and a reader finds each by its document path", async (t) => {
  const { server, dataDir, repository } = await repositoryOnGit(t);
  await server.commit({ "jobs/train.yaml": "kind: Job\n" });
  const documents = [doc("Job", "train", "Running"), doc("Node", "vm", "Ready", "agent-local")];
  const writer = createStatusBranchWriter({
    remote: repository,
    dataDir,
    clock: new FakeClock(),
    documents: () => documents,
  });
  t.teardown(() => writer.stop());
  t.equal(writer.layout, "sharded", "the default layout");
  const result = await writer.flush();
  t.same(
    result.added,
    ["status/job/train.yaml", "status/node/agent-local/vm.yaml"],
    "reported by document path",
  );
  t.same([...(await branchFiles(server.gitBare, "rlark/status")).keys()].sort(), [
    "status/job/94/train.yaml",
    "status/node/agent-local/0a/vm.yaml",
  ]);
  t.equal(
    await server.gitBare("show", `rlark/status:${statusBranchPath("status/job/train.yaml")}`),
    documents[0]!.content,
  );
});

t.test("a branch written flat is moved to the sharded layout whole, and nothing is lost", async (t) => {
  const { server, dataDir, repository } = await repositoryOnGit(t);
  await server.commit({ "jobs/train.yaml": "kind: Job\n" });
  const documents = [
    ...Array.from({ length: 40 }, (_, i) => doc("Job", `job-${i}`, i % 2 ? "Running" : "Succeeded")),
    doc("Node", "vm", "Ready", "agent-local"),
    doc("Bundle", "site", "Ready"),
  ];
  const flat = createStatusBranchWriter({
    remote: repository,
    dataDir,
    layout: "flat",
    clock: new FakeClock(),
    documents: () => documents,
  });
  await flat.flush();
  await flat.stop();
  // Someone keeps notes on the branch by hand.
  const other = join(server.root, "other");
  await runGit(server.root, ["clone", "--quiet", "--branch", "rlark/status", server.bare, other]);
  await writeFile(join(other, "NOTES.md"), "kept by hand\n");
  await runGit(other, ["add", "NOTES.md"]);
  await runGit(other, ["commit", "--quiet", "-m", "notes"]);
  await runGit(other, ["push", "--quiet", "origin", "rlark/status"]);
  const old = (await server.gitBare("rev-parse", "rlark/status")).trim();
  const before = await branchFiles(server.gitBare, old);
  t.ok(before.has("status/job/job-0.yaml"), "the old branch is flat");

  // A hub of this version starts (its own clone) with the same statuses.
  const upgradedDir = await mkdtemp(join(tmpdir(), "rlark-data-"));
  t.teardown(() => rm(upgradedDir, { recursive: true, force: true }));
  const sharded = createStatusBranchWriter({
    remote: createGitRepository({ url: server.fileUrl, branch: "main", dataDir: upgradedDir }),
    dataDir: upgradedDir,
    clock: new FakeClock(),
    documents: () => documents,
  });
  t.teardown(() => sharded.stop());
  const moved = await sharded.flush();
  t.equal(moved.committed, true);
  t.same([moved.added, moved.changed, moved.deleted], [[], [], []], "no status changed");
  t.equal(moved.moved.length, documents.length, "every file moved");
  t.match(
    await server.gitBare("log", "-1", "--format=%s", "rlark/status"),
    /^rlark status: 42 moved to the sharded layout/,
  );
  await t.resolves(server.gitBare("merge-base", "--is-ancestor", old, "rlark/status"), "history kept");

  const after = await branchFiles(server.gitBare, "rlark/status");
  t.equal(after.get("NOTES.md"), before.get("NOTES.md"), "a file outside status/ is kept");
  t.equal(after.size, before.size, "as many files as before");
  for (const [path, blob] of before) {
    if (path === "NOTES.md") continue;
    const now = statusBranchPath(path);
    t.not(now, path);
    t.equal(after.get(now), blob, `${path} is at ${now} with the same content`);
  }
  t.same(
    [...after.keys()]
      .filter((p) => p !== "NOTES.md")
      .map(documentPathOnBranch)
      .sort(),
    [...before.keys()].filter((p) => p !== "NOTES.md").sort(),
    "read back by document path, the branch holds what it held",
  );

  // Once moved, a change is one file in one small directory.
  t.equal((await sharded.flush()).committed, false, "nothing more to move");
  documents[3] = doc("Job", "job-3", "Failed");
  const change = await sharded.flush();
  t.same(change.changed, ["status/job/job-3.yaml"]);
  t.same(change.moved, []);
  t.equal(
    (await server.gitBare("diff", "--name-only", "rlark/status~1", "rlark/status")).trim(),
    statusBranchPath("status/job/job-3.yaml"),
  );
});

t.test("a file someone else changed on the branch is put back to what the hub holds", async (t) => {
  // The writer diffs against the tip it pushed; a tip it did not push is listed afresh.
  const { server, dataDir, repository } = await repositoryOnGit(t);
  await server.commit({ "jobs/train.yaml": "kind: Job\n" });
  const documents = [doc("Job", "train", "Running"), doc("Job", "eval", "Pending")];
  const writer = createStatusBranchWriter({
    remote: repository,
    dataDir,
    clock: new FakeClock(),
    documents: () => documents,
  });
  t.teardown(() => writer.stop());
  await writer.flush();
  const other = join(server.root, "other");
  await runGit(server.root, ["clone", "--quiet", "--branch", "rlark/status", server.bare, other]);
  await writeFile(join(other, statusBranchPath("status/job/train.yaml")), "edited by hand\n");
  await runGit(other, ["commit", "--quiet", "-am", "edit"]);
  await runGit(other, ["push", "--quiet", "origin", "rlark/status"]);
  documents[1] = doc("Job", "eval", "Running");
  const result = await writer.flush();
  t.equal(result.attempts, 2, "rebuilt on top of their commit");
  t.same(result.changed, ["status/job/eval.yaml", "status/job/train.yaml"]);
  t.equal(
    await server.gitBare("show", `rlark/status:${statusBranchPath("status/job/train.yaml")}`),
    documents[0]!.content,
  );
  t.equal(
    await server.gitBare("show", `rlark/status:${statusBranchPath("status/job/eval.yaml")}`),
    documents[1]!.content,
  );
});
