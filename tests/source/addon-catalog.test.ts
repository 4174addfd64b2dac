import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { validateDocuments } from "../../operators/api/index.ts";
import { loadAddonCatalog } from "../../operators/source/index.ts";
import { parseManifestText } from "../../operators/source/manifest-parser.ts";

const ADDON = `apiVersion: rlinf.io/v1alpha1
kind: Addon
metadata:
  name: demo
  namespace: agent-edge
spec:
  addonName: demo-plugin
  version: 1.0.0
  values:
    replicas: many
`;

function catalogDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "rlark-catalog-"));
  const entry = path.join(dir, "demo-plugin", "1.0.0");
  mkdirSync(entry, { recursive: true });
  writeFileSync(path.join(entry, "addon.yaml"), "name: demo-plugin\nversion: 1.0.0\ndescription: a demo\n");
  writeFileSync(
    path.join(entry, "values.schema.json"),
    JSON.stringify({ type: "object", properties: { replicas: { type: "integer" } } }),
  );
  return dir;
}

const addonErrors = (catalog: ReturnType<typeof loadAddonCatalog>) => {
  const parsed = parseManifestText(ADDON, "addon.yaml");
  return validateDocuments(parsed.documents, parsed.diagnostics, { catalog })
    .errors.filter((e) => e.rule.startsWith("cross/addon"))
    .map((e) => `${e.rule} ${e.path}: ${e.message}`);
};

t.test("Addons are checked against the catalog the caller passes in", async (t) => {
  const catalog = loadAddonCatalog(catalogDir());
  t.same(
    catalog.entries().map((e) => `${e.name}@${e.version}: ${e.description}`),
    ["demo-plugin@1.0.0: a demo"],
  );
  t.same(addonErrors(catalog), ["cross/addon-values /spec/values/replicas: must be integer"]);
  // The shipped catalog has no such entry.
  t.match(addonErrors(loadAddonCatalog()), [/^cross\/addon-catalog \/spec\/addonName: /]);
});
