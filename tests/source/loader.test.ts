import { mkdir, mkdtemp, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { loadManifests } from "../../operators/source/loader.ts";

async function tree(files: Record<string, string | Buffer>): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), "rlark-loader-"));
  for (const [name, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await writeFile(path.join(dir, name), content);
  }
  return dir;
}

t.test("documents come back in file order with positions that point into the source", async (t) => {
  const dir = await tree({
    "b.yaml": "kind: B\n",
    "a/one.yml":
      "kind: A\nspec:\n  tasks:\n    - name: x\n      kind: Deploymnet\n---\n# empty\n---\nkind: A2\n",
    "notes.txt": "kind: ignored\n",
  });
  const result = await loadManifests([dir], { baseDir: dir });
  t.same(result.diagnostics, []);
  t.same(
    result.documents.map((d) => [d.file, d.index, (d.value as { kind: string }).kind]),
    [
      ["a/one.yml", 0, "A"],
      ["a/one.yml", 2, "A2"],
      ["b.yaml", 0, "B"],
    ],
    "empty documents are skipped, other extensions ignored",
  );
  const doc = result.documents[0];
  t.same(doc?.locate("/spec/tasks/0/kind"), { line: 5, column: 13 }, "value position");
  t.same(doc?.locate("/spec/tasks/0/kind", "key"), { line: 5, column: 7 }, "key position");
  t.same(
    doc?.locate("/spec/tasks/0/missing"),
    { line: 4, column: 7 },
    "a missing field points at its parent",
  );
});

t.test("duplicate keys are an error at the second key", async (t) => {
  const dir = await tree({ "dup.yaml": "metadata:\n  name: a\n  name: b\n" });
  const { diagnostics, documents } = await loadManifests([dir], { baseDir: dir });
  t.equal(documents.length, 0);
  t.match(diagnostics, [
    { file: "dup.yaml", line: 3, column: 3, rule: "yaml/duplicate-key", message: 'duplicate key "name"' },
  ]);
});

t.test("a billion-laughs alias bomb is refused without expanding it", async (t) => {
  const lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
  for (let i = 1; i < 10; i++) {
    const name = String.fromCharCode(97 + i);
    const prev = String.fromCharCode(96 + i);
    lines.push(`${name}: &${name} [${Array(9).fill(`*${prev}`).join(",")}]`);
  }
  const dir = await tree({ "bomb.yaml": `${lines.join("\n")}\n` });
  const before = process.memoryUsage().heapUsed;
  const { diagnostics } = await loadManifests([dir], { baseDir: dir });
  t.match(diagnostics, [{ file: "bomb.yaml", rule: "yaml/alias-limit" }]);
  t.ok(process.memoryUsage().heapUsed - before < 200 * 1024 * 1024, "nothing was expanded");
});

t.test("documents nested 10,000 deep are refused, flow or block", async (t) => {
  const dir = await tree({
    "flow.yaml": `a: ${"[".repeat(10_000)}${"]".repeat(10_000)}\n`,
    "seq.yaml": `${"- ".repeat(10_000)}x\n`,
    "map.yaml": Array.from({ length: 2_000 }, (_, i) => `${" ".repeat(i)}k:`).join("\n"),
  });
  const { diagnostics } = await loadManifests([dir], { baseDir: dir });
  t.same(
    diagnostics.map((d) => [d.file, d.rule]),
    [
      ["flow.yaml", "yaml/too-deep"],
      ["map.yaml", "yaml/too-deep"],
      ["seq.yaml", "yaml/too-deep"],
    ],
  );
});

t.test("a 50 MB file is refused by its size, unread", async (t) => {
  const dir = await tree({ "big.yaml": Buffer.alloc(50 * 1024 * 1024, "a") });
  const { diagnostics } = await loadManifests([dir], { baseDir: dir });
  t.match(diagnostics, [{ file: "big.yaml", line: 0, rule: "io/too-large", message: /50\.0 MiB/ }]);
});

t.test("binary and non-UTF-8 files get their own errors", async (t) => {
  const dir = await tree({
    "binary.yaml": Buffer.from([0x6b, 0x3a, 0x00, 0x01, 0x02]),
    "latin1.yaml": Buffer.from("name: caf\xe9\n", "latin1"),
  });
  const { diagnostics } = await loadManifests([dir], { baseDir: dir });
  t.match(diagnostics, [
    { file: "binary.yaml", rule: "io/binary" },
    { file: "latin1.yaml", rule: "io/not-utf8", message: /offset 9/ },
  ]);
});

t.test("symlinks are followed inside the tree and refused when they leave it", async (t) => {
  const outside = await tree({ "secret.yaml": "kind: Secret\n" });
  const dir = await tree({ "real/job.yaml": "kind: Job\n" });
  await symlink(path.join(dir, "real"), path.join(dir, "alias"));
  await symlink(path.join(outside, "secret.yaml"), path.join(dir, "escape.yaml"));
  await symlink(path.join(dir, "nowhere.yaml"), path.join(dir, "broken.yaml"));
  const { documents, diagnostics } = await loadManifests([dir], { baseDir: dir });
  t.same(documents.map((d) => d.file).sort(), ["alias/job.yaml", "real/job.yaml"]);
  t.same(diagnostics.map((d) => [d.file, d.rule]).sort(), [
    ["broken.yaml", "io/broken-symlink"],
    ["escape.yaml", "io/symlink-outside-tree"],
  ]);
});

t.test("a path that does not exist is an I/O error", async (t) => {
  const dir = await tree({});
  const { diagnostics } = await loadManifests(["missing"], { baseDir: dir });
  t.match(diagnostics, [{ rule: "io/not-found", message: /missing/ }]);
});

t.test("the fast path and the anchor-safe path put a field at the same place", async (t) => {
  const body = [
    "kind: A",
    "spec:",
    "  tasks:",
    '    - name: "x"',
    "      kind: Deploymnet",
    "      env: [a, {b: c}]",
    "      script: |",
    "        echo hi",
    "      'q': 'v'",
    "",
  ].join("\n");
  const dir = await tree({ "fast.yaml": body, "careful.yaml": `${body}extra: &anchor 1\n` });
  const { documents } = await loadManifests([dir], { baseDir: dir });
  const [careful, fast] = documents;
  for (const pointer of [
    "/spec/tasks/0/kind",
    "/spec/tasks/0/name",
    "/spec/tasks/0/script",
    "/spec/tasks/0/q",
    "/spec/tasks/0/env/1/b",
    "/spec/nope",
    "/kind",
  ]) {
    t.same(fast?.locate(pointer), careful?.locate(pointer), `value of ${pointer}`);
    t.same(fast?.locate(pointer, "key"), careful?.locate(pointer, "key"), `key of ${pointer}`);
  }
  t.same(fast?.start, careful?.start);
});

t.test(
  "a link out of the tree names no outside path and does not tell whether its target exists",
  async (t) => {
    const outside = await tree({ "ca.key.yaml": "kind: Secret\n" });
    const dir = await tree({ "real/job.yaml": "kind: Job\n", "real/deep/x.yaml": "kind: X\n" });
    await symlink(path.join(outside, "ca.key.yaml"), path.join(dir, "exists.yaml"));
    await symlink(path.join(outside, "absent.yaml"), path.join(dir, "absent.yaml"));
    await symlink("../../../../../../../../../../../../etc/hostname.yaml", path.join(dir, "relative.yaml"));
    // A link that looks inside but reaches out through another link.
    await symlink(outside, path.join(dir, "real", "out"));
    await symlink("real/out/ca.key.yaml", path.join(dir, "chained.yaml"));
    await symlink("real/out/absent.yaml", path.join(dir, "chained-absent.yaml"));
    await symlink("loop-b.yaml", path.join(dir, "loop-a.yaml"));
    await symlink("loop-a.yaml", path.join(dir, "loop-b.yaml"));
    const { documents, diagnostics } = await loadManifests([dir], { baseDir: dir });
    t.same(documents.map((d) => d.file).sort(), ["real/deep/x.yaml", "real/job.yaml"]);
    t.same(diagnostics.map((d) => [d.file, d.rule]).sort(), [
      ["absent.yaml", "io/symlink-outside-tree"],
      ["chained-absent.yaml", "io/symlink-outside-tree"],
      ["chained.yaml", "io/symlink-outside-tree"],
      ["exists.yaml", "io/symlink-outside-tree"],
      ["loop-a.yaml", "io/symlink-loop"],
      ["loop-b.yaml", "io/symlink-loop"],
      ["real/out", "io/symlink-outside-tree"],
      ["relative.yaml", "io/symlink-outside-tree"],
    ]);
    const messages = new Set(
      diagnostics.filter((d) => d.rule === "io/symlink-outside-tree").map((d) => d.message),
    );
    t.equal(messages.size, 1, "one message whatever the target is");
    for (const d of diagnostics) {
      t.notMatch(d.message, outside, "no outside path");
      t.notMatch(d.message, dir, "no absolute path at all");
    }
  },
);
