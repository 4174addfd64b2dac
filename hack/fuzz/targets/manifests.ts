// Manifests from git: YAML text of objects built from the kinds' schemas (valid and broken in one
// place), as text with a byte flipped, and raw text; parsed and validated as the source does.
import fc from "fast-check";
import { stringify } from "yaml";
import { addonCatalog, validateDocuments } from "../../../operators/api/index.ts";
import { parseManifestText } from "../../../operators/source/index.ts";
import { kindArbitrary, SCHEMAS, validAndBroken } from "../schema-arbitrary.ts";
import { clearly, type FuzzTarget, flip } from "../target.ts";

const kinds = [...SCHEMAS.keys()].filter((f) => f !== "common.schema.json");
const object = fc.oneof(...kinds.map((f) => validAndBroken(kindArbitrary(f))));
const yamlText = fc
  .array(object, { minLength: 1, maxLength: 3 })
  .map((docs) => docs.map((d) => stringify(d)).join("---\n"));
const catalog = addonCatalog([]);

export const manifests: FuzzTarget<string> = {
  name: "manifests",
  about: "YAML manifests from git: operators/source/manifest-parser.ts, then operators/api/validate",
  input: fc.oneof(
    { weight: 6, arbitrary: yamlText },
    {
      weight: 2,
      arbitrary: fc
        .tuple(
          yamlText,
          fc.nat(),
          fc.constantFrom(0x3a, 0x2d, 0x20, 0x0a, 0x26, 0x2a, 0x7b, 0x5b, 0x22, 0x00),
        )
        .map(([t, at, b]) => flip(t, at, b).toString("utf8")),
    },
    { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 300 }) },
    {
      weight: 1,
      // anchors and aliases: the careful parser's path, with its alias limit
      arbitrary: fc.tuple(fc.nat({ max: 12 }), fc.nat({ max: 6 })).map(([n, w]) =>
        [
          `a0: &a0 [x${"".padEnd(w, ",x")}]`,
          ...Array.from(
            { length: n },
            (_, i) =>
              `a${i + 1}: &a${i + 1} [${Array(w + 1)
                .fill(`*a${i}`)
                .join(",")}]`,
          ),
        ].join("\n"),
      ),
    },
  ),
  async run(text) {
    const parsed = await clearly(() => parseManifestText(text, "fuzz.yaml"));
    if (!parsed) return;
    await clearly(() => validateDocuments(parsed.documents, parsed.diagnostics, { catalog }));
  },
};
