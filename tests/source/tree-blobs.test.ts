// A revision's files are told apart by git's blob ids (GitRepository.blobs): a file whose id is
// that of a file already parsed is not read again, and the store still ends as a whole apply
// leaves it.
import { symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import t from "tap";
import { silentLogger } from "../../operators/lib/logger.ts";
import { openSqliteStore } from "../../operators/lib/store/index.ts";
import { createRevisionApplier } from "../../operators/source/index.ts";
import { repositoryOnGit } from "../helpers/repository-on-git.ts";

const API = "rlinf.io/v1alpha1";
const job = (name: string, image = "busybox:1.36") =>
  `apiVersion: ${API}\nkind: Job\nmetadata: {name: ${name}}\nspec:\n  tasks:\n    - {name: main, role: Actor, agentType: Kubernetes, kubernetes: {workload: {kind: Deployment, template: {spec: {containers: [{name: main, image: ${image}}]}}}}}\n`;

t.test("blob ids: regular files by path, links and submodules left out, attributes in the id", async (t) => {
  const { server, repository } = await repositoryOnGit(t);
  await server.commit({ "jobs/a.yaml": job("a"), "b.yaml": job("b"), "run.sh": "#!/bin/sh\n" });
  await server.git("update-index", "--chmod=+x", "run.sh");
  await symlink("jobs/a.yaml", path.join(server.work, "link.yaml"));
  const first = await server.commit({});
  await repository.fetch();
  const blobs = await repository.blobs?.(first);
  const expected = (file: string) => server.git("rev-parse", `${first}:${file}`).then((s) => s.trim());
  t.same(
    [...(blobs ?? new Map())].sort(),
    [
      ["b.yaml", await expected("b.yaml")],
      ["jobs/a.yaml", await expected("jobs/a.yaml")],
      ["run.sh", await expected("run.sh")],
    ],
    "each regular file (executable too) by its path; the link is left out",
  );

  // Checkout may convert a file's bytes by the tree's attributes: a change to them changes every id.
  const second = await server.commit({ ".gitattributes": "*.yaml text eol=crlf\n" });
  await repository.fetch();
  const after = await repository.blobs?.(second);
  t.not(
    after?.get("b.yaml"),
    blobs?.get("b.yaml"),
    "an attributes file changes the identity of unchanged blobs",
  );
  t.match(after?.get("b.yaml"), new RegExp(`^${await expected("b.yaml")}\\+[0-9a-f]{16}$`));
  await t.rejects(repository.blobs?.("not-a-commit") ?? Promise.reject(), /not a full commit id/);
});

t.test("an unchanged blob is not read again; the store ends as a whole apply leaves it", async (t) => {
  const { server, repository, dataDir } = await repositoryOnGit(t);
  const incrementalStore = openSqliteStore({ dataDir: path.join(dataDir, "inc") });
  const wholeStore = openSqliteStore({ dataDir: path.join(dataDir, "whole") });
  t.teardown(async () => {
    await incrementalStore.close();
    await wholeStore.close();
  });
  const options = (store: typeof wholeStore) => ({
    store,
    artifactDir: path.join(dataDir, "artifacts"),
    logger: silentLogger,
  });
  const apply = createRevisionApplier(options(incrementalStore));
  const revision = async (files: Record<string, string | null>) => {
    const sha = await server.commit(files);
    await repository.fetch();
    const dir = await repository.materialise(sha);
    const blobs = await repository.blobs?.(sha);
    t.ok(blobs && blobs.size > 0, "git lists the revision's files");
    return { revision: sha, dir, path: ".", ...(blobs ? { blobs } : {}) };
  };

  const r1 = await revision({
    "jobs/a.yaml": [job("a1"), job("a2")].join("---\n"),
    "jobs/b.yaml": job("b1"),
  });
  t.ok((await apply(r1)).accepted, "the first revision is applied");
  const r2 = await revision({ "jobs/b.yaml": job("b1", "busybox:1.37"), "jobs/c.yaml": job("c1") });
  // a.yaml's blob is unchanged: what its checkout holds is not read (here, bytes git never had).
  await writeFile(path.join(r2.dir, "jobs/a.yaml"), job("tampered"));
  const second = await apply(r2);
  t.ok(second.accepted);
  t.match(second.changes, { created: 1, changed: 1, deleted: 0, unchanged: 2 }, "b1 changed, c1 created");
  t.ok(await incrementalStore.get("Job", undefined, "a1"), "a.yaml's objects are those of its blob");
  t.notOk(await incrementalStore.get("Job", undefined, "tampered"), "its checkout's bytes were not read");

  // Without ids (plain directories, as `rlark validate` reads) every file is read: the same store.
  await writeFile(path.join(r2.dir, "jobs/a.yaml"), [job("a1"), job("a2")].join("---\n"));
  for (const { revision: sha, dir } of [r1, r2]) {
    // A new applier each time: each revision read and applied whole.
    t.ok((await createRevisionApplier(options(wholeStore))({ revision: sha, dir, path: "." })).accepted);
  }
  const state = async (store: typeof wholeStore) =>
    (await store.list("Job")).items.map((o) => [o.metadata.name, o.spec, o.metadata.annotations]);
  t.same(await state(incrementalStore), await state(wholeStore), "the same Jobs as a whole apply");

  // A Domain deleted while an unchanged file names it: refused as a whole validation refuses it.
  const r3 = await revision({
    "jobs/c.yaml": null,
    "net.yaml": `apiVersion: ${API}\nkind: Domain\nmetadata: {name: net}\nspec: {cidr: "10.0.0.0/16"}\n`,
    "jobs/d.yaml": job("d1").replace("spec:\n", "spec:\n  domain: net\n"),
  });
  t.ok((await apply(r3)).accepted);
  const r4 = await revision({ "net.yaml": null });
  const refused = await apply(r4);
  t.notOk(refused.accepted, "refused");
  t.match(refused.errors, [{ file: "jobs/d.yaml", line: 5, rule: "cross/domain-exists", name: "d1" }]);
});
