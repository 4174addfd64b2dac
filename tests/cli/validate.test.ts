import path from "node:path";
import t from "tap";
import { rlark } from "../helpers/rlark-cli.ts";

t.test("a valid repository exits 0", async (t) => {
  const run = await rlark(["validate", "examples"]);
  t.equal(run.code, 0, run.stderr);
  t.match(run.stdout, /^\d+ documents valid\n$/);
});

t.test("an invalid repository exits 1 with file:line:col errors", async (t) => {
  const run = await rlark(["validate", "examples/invalid/schema-enum.yaml"]);
  t.equal(run.code, 1);
  t.match(
    run.stdout,
    'error: examples/invalid/schema-enum.yaml:14:17 Job typo-kind /spec/tasks/0/kubernetes/workload/kind: must be one of Deployment, StatefulSet, DaemonSet, Job (got "Deploymnet")',
  );
});

t.test("a missing path and a bad option are usage or I/O errors: exit 2", async (t) => {
  t.equal((await rlark(["validate", "no/such/dir"])).code, 2);
  const bad = await rlark(["validate", "--format", "xml", "examples"]);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /Allowed choices are text, json, github, junit/);
});

t.test("--format json is exactly the documented shape", async (t) => {
  const run = await rlark(["validate", "--format", "json", "examples/invalid/missing-domain.yaml"]);
  t.equal(run.code, 1);
  const report = JSON.parse(run.stdout);
  t.same(Object.keys(report), ["valid", "documents", "errors", "warnings"]);
  t.same(report, {
    valid: false,
    documents: 1,
    errors: [
      {
        file: "examples/invalid/missing-domain.yaml",
        line: 8,
        column: 11,
        kind: "Job",
        name: "lost-domain",
        path: "/spec/domain",
        rule: "cross/domain-exists",
        message: 'Domain "ppo-experiment-9" is not defined in the repository',
      },
    ],
    warnings: [],
  });
});

t.test("--format github prints workflow-command annotations", async (t) => {
  const run = await rlark(["validate", "--format", "github", "examples/invalid/cidr-overlap.yaml"]);
  t.equal(run.code, 1);
  t.match(
    run.stdout,
    /^::error file=examples\/invalid\/cidr-overlap\.yaml,line=15,col=9,title=cross\/cidr-overlap Domain narrow::\/spec\/cidr: 10\.7\.3\.0\/24 overlaps/m,
  );
});

t.test("--format junit prints one failing test case per file", async (t) => {
  const run = await rlark([
    "validate",
    "--format",
    "junit",
    "examples/invalid/two-heads.yaml",
    "examples/invalid/bad-cidr.yaml",
  ]);
  t.equal(run.code, 1);
  t.match(
    run.stdout,
    /^<\?xml version="1\.0" encoding="UTF-8"\?>\n<testsuites name="rlark validate" tests="2" failures="2">/,
  );
  t.equal(run.stdout.match(/<testcase /g)?.length, 2);
  t.equal(run.stdout.match(/<failure /g)?.length, 2);
  t.match(run.stdout, /type="cross\/single-head"/);
});

t.test("--help documents the command", async (t) => {
  const run = await rlark(["validate", "--help"]);
  t.equal(run.code, 0);
  t.match(run.stdout, /Exit status: 0 valid, 1 invalid, 2 usage or I\/O error/);
});

t.test(
  "control characters from the manifests are shown escaped in text, github and json output",
  async (t) => {
    const { mkdtemp, writeFile } = await import("node:fs/promises");
    const { tmpdir } = await import("node:os");
    const dir = await mkdtemp(path.join(tmpdir(), "rlark-validate-"));
    const file = path.join(dir, "evil.yaml");
    // An unknown key that would retitle the terminal, clear the screen and (C1 CSI) recolour.
    await writeFile(
      file,
      'apiVersion: rlinf.io/v1alpha1\nkind: Domain\nmetadata:\n  name: evil\nspec:\n  cidr: 10.0.0.0/24\n  "\\e]0;pwned\\a\\e[2J\\x9b31m\\x7f": 1\n',
    );
    // biome-ignore lint/suspicious/noControlCharactersInRegex: what must not be printed
    const raw = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;
    for (const format of ["text", "github"]) {
      const run = await rlark(["validate", "--format", format, file], { cwd: dir });
      t.equal(run.code, 1, format);
      t.notMatch(run.stdout, raw, `${format}: no raw control character`);
      t.match(run.stdout, "\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\x7f", `${format}: shown escaped`);
    }
    const json = await rlark(["validate", "--format", "json", file], { cwd: dir });
    t.notMatch(json.stdout.trimEnd(), raw, "json: no raw control character");
    const report = JSON.parse(json.stdout);
    t.equal(
      report.errors[0].path,
      "/spec/\u001b]0;pwned\u0007\u001b[2J\u009b31m\u007f",
      "json: the exact text",
    );
  },
);
