// The hub's revision path applies each revision after the first by what changed in it (files by
// content hash): the store must end exactly as a whole apply of the same revision leaves it.
import { createHash } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { kinds } from "../../operators/api/index.ts";
import { silentLogger } from "../../operators/lib/logger.ts";
import { openSqliteStore, type Store } from "../../operators/lib/store/index.ts";
import { createRevisionApplier } from "../../operators/source/index.ts";

const API = "rlinf.io/v1alpha1";

function job(name: string, image = "busybox:1.36", domain?: string): string {
  return [
    `apiVersion: ${API}`,
    "kind: Job",
    "metadata:",
    `  name: ${name}`,
    "spec:",
    ...(domain ? [`  domain: ${domain}`] : []),
    "  tasks:",
    "    - name: main",
    "      role: Actor",
    "      agentType: Kubernetes",
    "      kubernetes:",
    "        workload:",
    "          kind: Deployment",
    "          template:",
    "            spec:",
    "              containers:",
    "                - name: main",
    `                  image: ${image}`,
    "",
  ].join("\n");
}

function domain(name: string): string {
  return `apiVersion: ${API}\nkind: Domain\nmetadata:\n  name: ${name}\nspec:\n  cidr: 10.${name.length}.0.0/16\n`;
}

/** Writes `files` (path → text) as a fresh checkout under `root`; returns its directory. */
async function checkout(root: string, revision: string, files: Record<string, string>): Promise<string> {
  const dir = path.join(root, revision);
  for (const [file, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
    await writeFile(path.join(dir, file), text);
  }
  return dir;
}

/** What git decides of every object the source wrote, by kind/namespace/name. */
async function gitState(store: Store): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const { kind } of kinds.filter((k) => k.writtenBy === "git")) {
    for (const o of (await store.list(kind)).items) {
      out[`${kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`] = {
        spec: o.spec,
        labels: o.metadata.labels,
        annotations: o.metadata.annotations,
        deleting: o.metadata.deletionTimestamp !== undefined,
      };
    }
  }
  return out;
}

t.test(
  "a revision after the first applies what changed and leaves the store as a whole apply would",
  async (t) => {
    const root = await mkdtemp(path.join(tmpdir(), "rlark-revision-"));
    t.teardown(() => rm(root, { recursive: true, force: true }));
    const incrementalStore = openSqliteStore({ dataDir: path.join(root, "inc") });
    const wholeStore = openSqliteStore({ dataDir: path.join(root, "whole") });
    t.teardown(async () => {
      await incrementalStore.close();
      await wholeStore.close();
    });
    const options = (store: Store) => ({
      store,
      artifactDir: path.join(root, "artifacts"),
      logger: silentLogger,
    });
    const incremental = createRevisionApplier(options(incrementalStore));

    const first = {
      "jobs/a.yaml": [job("a1"), job("a2"), job("a3", "busybox:1.36", "net")].join("---\n"),
      "jobs/b.yaml": [job("b1"), job("b2")].join("---\n"),
      "jobs/c.yaml": job("c1"),
      "domains/net.yaml": domain("net"),
    };
    const dir1 = await checkout(root, "r1", first);
    const r1 = await incremental({ revision: "r1", dir: dir1, path: "." });
    t.ok(r1.accepted, "the first revision is applied");
    t.equal(r1.changes?.created, 7, "whole: every object created");
    const whole1 = await createRevisionApplier(options(wholeStore))({ revision: "r1", dir: dir1, path: "." });
    t.ok(whole1.accepted);

    // b1 changes, b2 moves to a new file, c.yaml goes with c1, a new file brings d1; a.yaml stays.
    const second = {
      "jobs/a.yaml": first["jobs/a.yaml"],
      "jobs/b.yaml": job("b1", "busybox:1.37"),
      "jobs/moved.yaml": job("b2"),
      "jobs/d.yaml": job("d1"),
      "domains/net.yaml": first["domains/net.yaml"],
    };
    const dir2 = await checkout(root, "r2", second);
    await rm(dir1, { recursive: true });
    const r2 = await incremental({ revision: "r2", dir: dir2, path: "." });
    t.ok(r2.accepted, "the second revision is applied");
    t.match(
      r2.changes,
      { created: 1, changed: 1, deleted: 1, unchanged: 5 },
      "b1 changed, b2 moved (unchanged content), c1 deleted, d1 created; a.yaml and net.yaml not read into the store",
    );
    const whole2 = await createRevisionApplier(options(wholeStore))({ revision: "r2", dir: dir2, path: "." });
    t.ok(whole2.accepted);
    t.same(await gitState(incrementalStore), await gitState(wholeStore), "the same store as a whole apply");
    const moved = await incrementalStore.get("Job", undefined, "b2");
    t.equal(
      moved?.metadata.annotations?.["rlark.io/source-file"],
      "jobs/moved.yaml:1",
      "a moved object names its new file",
    );

    // The Domain goes while a3 in the unchanged a.yaml still names it: refused, and the error points
    // into a.yaml although its parse was kept from a checkout that no longer exists.
    const third = { ...second, "domains/net.yaml": "" };
    const dir3 = await checkout(root, "r3", third);
    await rm(dir2, { recursive: true });
    const r3 = await incremental({ revision: "r3", dir: dir3, path: "." });
    t.notOk(r3.accepted, "a revision breaking an unchanged file's reference is refused");
    const error = r3.errors.find((e) => e.name === "a3");
    t.equal(error?.file, "jobs/a.yaml", "the error names the unchanged file");
    t.ok((error?.line ?? 0) > 1, `and the line of the reference in it (${error?.line})`);

    // After the refusal, a valid revision is still compared with the last one applied (r2).
    const fourth = { ...second, "jobs/a.yaml": [job("a1"), job("a3", "busybox:1.36", "net")].join("---\n") };
    const dir4 = await checkout(root, "r4", fourth);
    const r4 = await incremental({ revision: "r4", dir: dir4, path: "." });
    t.ok(r4.accepted);
    t.match(r4.changes, { created: 0, changed: 0, deleted: 1, unchanged: 6 }, "a2 deleted, nothing else");
    const whole4 = await createRevisionApplier(options(wholeStore))({ revision: "r4", dir: dir4, path: "." });
    t.ok(whole4.accepted);
    t.same(
      await gitState(incrementalStore),
      await gitState(wholeStore),
      "still the same store as a whole apply",
    );
  },
);

t.test("a repository artifact named in an unchanged file is checked again with every revision", async (t) => {
  const root = await mkdtemp(path.join(tmpdir(), "rlark-revision-"));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const store = openSqliteStore({ dataDir: path.join(root, "data") });
  t.teardown(() => store.close());
  const apply = createRevisionApplier({
    store,
    artifactDir: path.join(root, "artifacts"),
    logger: silentLogger,
  });
  const script = "#!/bin/sh\necho hi\n";
  const raw = [
    `apiVersion: ${API}`,
    "kind: Job",
    "metadata:",
    "  name: raw",
    "spec:",
    "  tasks:",
    "    - name: main",
    "      role: Actor",
    "      agentType: Raw",
    "      raw:",
    "        kind: Job",
    "        artifact:",
    "          url: scripts/run.sh",
    `          sha256: ${createHash("sha256").update(script).digest("hex")}`,
    '        command: ["./run.sh"]',
    "",
  ].join("\n");
  const files = { "jobs/raw.yaml": raw, "scripts/run.sh": script, "jobs/other.yaml": job("other") };
  const r1 = await apply({ revision: "r1", dir: await checkout(root, "r1", files), path: "." });
  t.ok(r1.accepted, "the first revision is applied");
  // Only the script changes: no manifest does, yet its digest no longer matches.
  const r2 = await apply({
    revision: "r2",
    dir: await checkout(root, "r2", { ...files, "scripts/run.sh": "#!/bin/sh\necho changed\n" }),
    path: ".",
  });
  t.notOk(r2.accepted, "refused");
  t.match(r2.errors, [{ file: "jobs/raw.yaml", name: "raw", rule: "source/artifact", line: 13 }]);
  const r3 = await apply({
    revision: "r3",
    dir: await checkout(root, "r3", { ...files, "jobs/other.yaml": job("other", "busybox:1.37") }),
    path: ".",
  });
  t.ok(r3.accepted, "applied again once the script matches, another file having changed");
  t.match(r3.changes, { changed: 1, unchanged: 1 });
});
