import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { validateDocuments } from "../../operators/api/index.ts";
import { loadAddonCatalog, validatePaths } from "../../operators/source/index.ts";
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

t.test("a repository's .rlark/addons/ adds entries; broken ones are errors with file and line", async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), "rlark-repo-"));
  const entry = path.join(dir, ".rlark", "addons", "mine", "0.1.0");
  mkdirSync(path.join(entry, "manifests"), { recursive: true });
  writeFileSync(path.join(entry, "addon.yaml"), "name: mine\nversion: 0.1.0\ndescription: ours\n");
  writeFileSync(
    path.join(entry, "values.schema.json"),
    JSON.stringify({ type: "object", properties: { size: { type: "integer", default: 1 } } }),
  );
  writeFileSync(
    path.join(entry, "manifests", "00-cm.yaml"),
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mine\ndata:\n  size: 'n={{ values.size }}'\n",
  );
  writeFileSync(
    path.join(dir, "addon.yaml"),
    "apiVersion: rlinf.io/v1alpha1\nkind: Addon\nmetadata:\n  name: mine\n  namespace: agent-a\nspec:\n  addonName: mine\n  version: 0.1.0\n",
  );
  writeFileSync(
    path.join(dir, "cluster.yaml"),
    "apiVersion: rlinf.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: a\nspec:\n  runtime: kubernetes\n",
  );
  const ok = await validatePaths([dir], { baseDir: dir });
  t.same(ok.errors, [], "the Addon names the repository's own entry; the catalog's files are not manifests");
  t.ok(ok.catalog.get("mine", "0.1.0"));

  writeFileSync(
    path.join(entry, "addon.yaml"),
    "name: mine\nversion: 0.1.0\ndescription: ours\ncolour: red\n",
  );
  const broken = await validatePaths([dir], { baseDir: dir });
  t.same(
    broken.errors.map((e) => `${e.file}:${e.line} ${e.rule} ${e.path}`),
    [
      ".rlark/addons/mine/0.1.0/addon.yaml:4 catalog/addon-yaml /colour",
      "addon.yaml:7 cross/addon-catalog /spec/addonName",
    ],
  );
});
