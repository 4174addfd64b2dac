// The fast parse gives each document's start (the line every object's source-file annotation
// names) from its own events; it must say what the careful parser (the `yaml` library) says.
import fc from "fast-check";
import t from "tap";
import { LineCounter, parseAllDocuments } from "yaml";
import { parseManifestText } from "../../operators/source/index.ts";

const FRAGMENTS = [
  "apiVersion: rlinf.io/v1alpha1\nkind: Job\nmetadata:\n  name: a\n",
  "# a comment first\n\nkind: Domain\nspec: {cidr: 10.0.0.0/16}\n",
  "  indented: true\n  more: [1, 2]\n",
  "{kind: Flow, metadata: {name: f}}\n",
  '"a quoted root"\n',
  "- a\n- b\n",
  "key: |\n  block\n  text\n",
  "\n\n\nlate: start\n",
];

/** Where the `yaml` library says each non-empty document's content starts. */
function careful(text: string): { line: number; column: number }[] {
  const lineCounter = new LineCounter();
  return parseAllDocuments(text, { lineCounter })
    .filter((doc) => doc.toJS() !== null && doc.toJS() !== undefined)
    .map((doc) => {
      const pos = lineCounter.linePos(doc.contents?.range?.[0] ?? doc.range[0]);
      return { line: pos.line, column: pos.col };
    });
}

t.test("the fast parse's document starts are the careful parser's", async (t) => {
  let documents = 0;
  await fc.assert(
    fc.property(
      fc.array(fc.constantFrom(...FRAGMENTS), { minLength: 1, maxLength: 6 }),
      fc.array(fc.constantFrom("---\n", "--- # marker\n", "\n---\n"), { minLength: 6, maxLength: 6 }),
      (docs, separators) => {
        const text = docs.map((d, i) => (i === 0 ? d : `${separators[i]}${d}`)).join("");
        const fast = parseManifestText(text, "f.yaml").documents.map((d) => d.start);
        documents += fast.length;
        if (JSON.stringify(fast) === JSON.stringify(careful(text))) return true;
        t.same(fast, careful(text), JSON.stringify(text));
        return false;
      },
    ),
    { numRuns: 200 },
  );
  t.ok(documents > 400, `${documents} documents' starts compared`);
});
