import fc from "fast-check";
import t from "tap";
import { unifiedDiff } from "../../../operators/feedback/plan/index.ts";

/** Applies a unified diff to `before`; the diff is right when this gives `after` back. */
function patch(before: string, diff: string): string {
  const lines = before === "" ? [] : before.replace(/\n$/, "").split("\n");
  const out: string[] = [];
  let cursor = 0;
  const body = diff.replace(/\n$/, "").split("\n");
  for (let i = 0; i < body.length; i++) {
    const header = /^@@ -(\d+),(\d+) \+\d+,\d+ @@$/.exec(body[i] as string);
    if (!header) continue;
    const start = Number(header[2]) === 0 ? Number(header[1]) : Number(header[1]) - 1;
    while (cursor < start) out.push(lines[cursor++] as string);
    for (i++; i < body.length && !(body[i] as string).startsWith("@@"); i++) {
      const line = body[i] as string;
      if (line.startsWith(" ")) {
        out.push(lines[cursor++] as string);
      } else if (line.startsWith("-")) cursor++;
      else out.push(line.slice(1));
    }
    i--;
  }
  while (cursor < lines.length) out.push(lines[cursor++] as string);
  return out.length === 0 ? "" : `${out.join("\n")}\n`;
}

const text = fc
  .array(fc.constantFrom("a: 1", "b: 2", "c: 3", "  d: 4", "e: x", "- f"), { maxLength: 25 })
  .map((ls) => (ls.length === 0 ? "" : `${ls.join("\n")}\n`));

t.test("applying the diff of two texts to the first gives the second", async (t) => {
  fc.assert(
    fc.property(text, text, (before, after) => {
      const diff = unifiedDiff(before, after);
      if (before === after) return diff === "";
      return patch(before, diff) === after;
    }),
    { numRuns: 500 },
  );
  t.pass();
});

t.test("a changed line shows as a removal, then an addition, with three lines of context", async (t) => {
  const before = "a\nb\nc\nd\ne\nf\ng\nh\n";
  const after = "a\nb\nc\nd\nE\nf\ng\nh\n";
  t.equal(unifiedDiff(before, after), "@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n");
});
