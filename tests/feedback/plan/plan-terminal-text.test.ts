// Text from the repository (keys, names, diagnostics) reaches a terminal through `rlark plan` and
// a pull request through the Markdown comment: control characters are shown escaped, and nothing
// breaks out of a code span, table cell or <summary>.
import { spawnSync } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import {
  computePlan,
  type Plan,
  renderPlanMarkdown,
  renderPlanText,
} from "../../../operators/feedback/plan/index.ts";

const cli = path.resolve(import.meta.dirname, "../../../operators/cli/main.ts");
// biome-ignore lint/suspicious/noControlCharactersInRegex: what must not be printed
const RAW = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

t.test("rlark plan shows control characters from the manifests escaped in text and markdown", async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), "rlark-plan-escape-"));
  t.teardown(async () => (await import("node:fs/promises")).rm(dir, { recursive: true, force: true }));
  // An unknown key that would retitle the terminal, clear the screen and (C1 CSI) recolour.
  await writeFile(
    path.join(dir, "evil.yaml"),
    'apiVersion: rlinf.io/v1alpha1\nkind: Domain\nmetadata:\n  name: evil\nspec:\n  cidr: 10.0.0.0/24\n  "\\e]0;pwned\\a\\e[2J\\x9b31m\\x7f": 1\n',
  );
  for (const format of ["text", "markdown", "json"]) {
    const run = spawnSync(process.execPath, [cli, "plan", "--format", format, "."], {
      cwd: dir,
      encoding: "utf8",
    });
    t.equal(run.status, 1, `${format}: ${run.stderr}`);
    t.notMatch(run.stdout, RAW, `${format}: no raw control character`);
    if (format !== "json")
      t.match(run.stdout, "\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\x7f", `${format}: shown escaped`);
  }
});

// An invalid revision's plan, as computePlan makes it, with one schema error and one change
// carrying repository text.
function planWith(name: string, diff: string, pointer: string): Plan {
  const plan = computePlan({
    validation: {
      valid: false,
      documents: 1,
      errors: [
        {
          file: "evil.yaml",
          line: 3,
          column: 1,
          kind: "Job",
          name,
          path: pointer,
          rule: "schema",
          message: "bad",
        },
      ],
      warnings: [],
      objects: [],
    },
    live: [],
    revision: "",
    against: "an empty state",
  });
  return {
    ...plan,
    counts: { create: 0, change: 1, delete: 0, unchanged: 0 },
    changes: [{ action: "change", kind: "Job", name, namespace: "ns", file: "evil.yaml:3", diff }],
  };
}

t.test("nothing from the repository breaks out of a code span, a table row or a <summary>", async (t) => {
  const name = "a``b\n\n# injected\r\u001b[2J|x";
  const pointer = "/spec/`` |\n\n# injected";
  const diff = "-  a: 1\n+  a: \u001b[2J2\n";
  for (const level of ["full", "list"] as const) {
    const plan = planWith(name, level === "full" ? diff : "", pointer);
    const md = renderPlanMarkdown(plan);
    t.notMatch(md, RAW, `${level}: no raw control character`);
    t.notMatch(md, /^# injected/m, `${level}: no heading injected`);
    const errorRow = md.split("\n").find((l) => l.startsWith("| evil.yaml:3"));
    t.ok(errorRow, `${level}: the error is one table row`);
    // Outside code spans every `|` of the row is a cell border or escaped: the row keeps 4 cells.
    t.equal(errorRow?.replace(/\\\|/g, "").split("|").length, 6, `${level}: the row has its 4 cells`);
    const text = renderPlanText(plan);
    t.notMatch(text, RAW, `${level}: text has no raw control character`);
    t.notMatch(text, /^# injected/m);
  }
  const full = renderPlanMarkdown(planWith(name, diff, pointer));
  t.match(full, "+  a: \\x1b[2J2", "diff lines are escaped, line by line");
  t.match(full, "<code>a``b\\n\\n# injected\\r\\x1b[2J|x</code>", "the summary shows the name escaped");
  const list = renderPlanMarkdown(planWith(name, "", pointer));
  t.match(list, "```a``b\\n\\n# injected\\r\\x1b[2J|x```", "a code span longer than any backtick run in it");
});
