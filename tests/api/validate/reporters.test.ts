import t from "tap";
import { type Diagnostic, validateDocuments } from "../../../operators/api/validate/index.ts";
import { renderReport } from "../../../operators/api/validate/reporters.ts";
import { loadAddonCatalog } from "../../../operators/source/addon-catalog.ts";
import { parseManifestText } from "../../../operators/source/manifest-parser.ts";

function errorsOf(file: string, text: string): Diagnostic[] {
  const parsed = parseManifestText(text, file);
  return validateDocuments(parsed.documents, parsed.diagnostics, { catalog: loadAddonCatalog() }).errors;
}

t.test(
  "JUnit: one test case per failing file, one failure each, and never more failures than tests",
  async (t) => {
    const errors = [
      // Two errors in one file.
      ...errorsOf(
        "a.yaml",
        "apiVersion: rlinf.io/v1alpha1\nkind: Domain\nmetadata: { name: a }\nspec: { cidr: nope }\n---\napiVersion: rlinf.io/v1alpha1\nkind: Workflw\nmetadata: { name: w }\n",
      ),
      ...errorsOf("b.yaml", "apiVersion: rlinf.io/v1alpha1\nkind: Domain\nmetadata: { name: b }\nspec: {}\n"),
    ];
    t.equal(errors.length, 3);
    const xml = renderReport({ valid: false, documents: 3, errors, warnings: [] }, "junit");
    t.match(xml, /<testsuites name="rlark validate" tests="2" failures="2">/);
    t.match(xml, /<testsuite name="rlark validate" tests="2" failures="2" errors="0" skipped="0">/);
    t.equal(xml.match(/<testcase /g)?.length, 2);
    t.equal(xml.match(/<failure /g)?.length, 2, "a test case has at most one failure element");
    const a =
      /<testcase classname="rlark.validate" name="a.yaml">([\s\S]*?)<\/testcase>/.exec(xml)?.[1] ?? "";
    t.match(a, /<failure type="schema\/pattern, schema\/unknown-kind" message="2 errors: /);
    t.match(
      a,
      /a\.yaml:4:15 Domain a \/spec\/cidr: .*\na\.yaml:7:7 Workflw w \/kind: unknown kind/,
      "both errors in it",
    );
    t.match(xml, /<failure type="schema\/required" message="missing required field &quot;cidr&quot;">/);

    const clean = renderReport({ valid: true, documents: 1, errors: [], warnings: [] }, "junit");
    t.match(clean, /tests="1" failures="0"/);
  },
);
