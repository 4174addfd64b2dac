// `npm test`'s failure digest, read from a real tap run over one failing and one passing file: the
// digest must name the failing file, its failing subtest with its source line, and nothing else.
import { spawn } from "node:child_process";
import { readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { FailureDigest } from "../../hack/test-failures.ts";

const tapCli = join(process.cwd(), "node_modules", "tap", "dist", "esm", "run.mjs");

/**
 * Runs tap in `project`, a project of its own: a tap run clears its project's `.tap/processinfo`
 * and `.tap/coverage` on start, so an inner run at the repository's root would wipe the outer
 * run's state while it is being written.
 */
async function tapOutput(project: string, files: string[]): Promise<string[]> {
  const child = spawn(
    process.execPath,
    [tapCli, "--disable-coverage", "--reporter=tap", "--jobs=2", ...files],
    { cwd: project, stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  let err = "";
  child.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString("utf8");
  });
  child.stderr.on("data", (chunk: Buffer) => {
    err = (err + chunk.toString("utf8")).slice(-4096);
  });
  const code = await new Promise((resolve) => child.once("close", resolve));
  // an inner run that printed no test point failed before running anything: say what it said
  if (!/^(not )?ok \d/m.test(out)) t.comment(`inner tap exited ${code} with no result; stderr:\n${err}`);
  return out.split("\n");
}

t.test("a real tap run's failures, with where they are", async (t) => {
  const dir = t.testdir({
    "fails.test.ts": [
      'import t from "tap";',
      't.test("outer", async (t) => {',
      '  t.test("inner passes", async (t) => t.pass("fine"));',
      '  t.test("inner fails", async (t) => {',
      '    t.equal(1, 2, "one is two");',
      "  });",
      "});",
      "",
    ].join("\n"),
    "passes.test.ts": 'import t from "tap";\nt.pass("ok");\n',
  });
  // the project's own tap settings (its plugin list), so the shared node_modules needs no rebuild
  const tap = { plugin: JSON.parse(readFileSync("package.json", "utf8")).tap.plugin };
  writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module", tap }));
  symlinkSync(join(process.cwd(), "node_modules"), join(dir, "node_modules"));
  const files = ["fails.test.ts", "passes.test.ts"];
  const digest = new FailureDigest();
  for (const line of await tapOutput(dir, files)) digest.line(line);

  t.same(
    digest.files.map((f) => f.file),
    [files[0]],
    "only the failing file is listed",
  );
  const summary = digest.summary();
  t.equal(summary[0], "== failed: 1 test file");
  t.match(summary.join("\n"), `one is two (${files[0]}:5)`, "the failing assertion and its line");
  t.match(summary.join("\n"), "inner fails", "the subtest around it");
  t.notMatch(summary.join("\n"), "inner passes", "no passing subtest");
});

t.test("a file that times out or crashes is listed with no subtests", async (t) => {
  const digest = new FailureDigest();
  for (const line of [
    "# Subtest: tests/x.test.ts",
    "    1..0 # no tests found",
    "not ok 3 - tests/x.test.ts # time=1.5ms",
    "  ---",
    "  exitCode: 1",
    "  ...",
  ]) {
    digest.line(line);
  }
  t.same(digest.summary(), ["== failed: 1 test file", "  tests/x.test.ts"]);
});

t.test("nothing failed, nothing printed", async (t) => {
  const digest = new FailureDigest();
  digest.line("ok 1 - tests/y.test.ts # time=2ms");
  t.same(digest.summary(), []);
});
