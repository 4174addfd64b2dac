// The addon renderer: catalog entry + values + identity → the exact objects, byte for byte the
// same each time (golden files; RLARK_UPDATE_GOLDEN=1 rewrites them after a deliberate change),
// and every problem named by manifest file, line and field.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import t, { type Test } from "tap";
import { stringify } from "yaml";
import { AddonRenderError, type CatalogEntry, renderAddon } from "../../operators/api/index.ts";
import { readAddonCatalogs } from "../../operators/source/index.ts";

const root = path.resolve(import.meta.dirname, "../..");
const fixtures = path.join(root, "tests/fixtures/addon-catalog");
const golden = path.join(root, "tests/fixtures/addon-render");

const { catalog, diagnostics } = readAddonCatalogs([fixtures], root);

function demo(version: string): CatalogEntry {
  const entry = catalog.get("demo", version);
  if (!entry) throw new Error(`no demo ${version}`);
  return entry;
}

function matchGolden(t: Test, name: string, actual: string): void {
  const file = path.join(golden, name);
  if (process.env.RLARK_UPDATE_GOLDEN === "1") {
    mkdirSync(golden, { recursive: true });
    writeFileSync(file, actual);
  }
  t.equal(actual, readFileSync(file, "utf8"), `${name} matches its golden file`);
}

t.test("the fixture catalog loads without problems", async (t) => {
  t.same(diagnostics, []);
  t.same(catalog.versions("demo"), ["0.9.0", "1.0.0", "1.1.0", "2.0.0"]);
  t.equal(demo("1.0.0").allowDowngrade, true);
  t.equal(demo("1.1.0").allowDowngrade, false);
  t.equal(demo("2.0.0").minKubernetesVersion, "99.0");
});

t.test("defaults render to the golden objects, deterministically", async (t) => {
  const entry = demo("1.0.0");
  const identity = { name: "demo", version: "1.0.0", namespace: "rlark-system" };
  const first = renderAddon(entry, catalog.withDefaults(entry, {}), identity);
  const again = renderAddon(entry, catalog.withDefaults(entry, {}), identity);
  t.equal(JSON.stringify(first), JSON.stringify(again));
  matchGolden(t, "demo-1.0.0-defaults.yaml.golden", first.map((o) => stringify(o)).join("---\n"));
  t.same(
    first.map((o) => `${o.kind} ${o.metadata.namespace ?? "-"}/${o.metadata.name}`),
    [
      "ServiceAccount rlark-system/demo",
      "ClusterRole -/rlark-system-demo",
      "ClusterRoleBinding -/rlark-system-demo",
      "ConfigMap rlark-system/demo-config",
      "DaemonSet rlark-system/demo-node",
      "Deployment rlark-system/demo-controller",
      "ConfigMap rlark-system/demo-extra",
    ],
    "file-name order, namespaced objects in the Addon's namespace",
  );
  for (const object of first)
    t.match(object.metadata.labels, { "rlark.io/addon": "demo", "rlark.io/managed-by": "rlark-addon" });
});

t.test("a whole-value reference keeps the value's type; an embedded one becomes text", async (t) => {
  const entry = demo("1.0.0");
  const values = catalog.withDefaults(entry, {
    replicas: 3,
    greeting: "hi",
    nodeSelector: { zone: "a", gpu: "yes" },
    extra: { enabled: false },
  });
  const objects = renderAddon(entry, values, { name: "x", version: "1.0.0", namespace: "ns1" });
  matchGolden(t, "demo-1.0.0-values.yaml.golden", objects.map((o) => stringify(o)).join("---\n"));
  const deployment = objects.find((o) => o.kind === "Deployment") as
    | { spec: { replicas: unknown } }
    | undefined;
  t.equal(deployment?.spec.replicas, 3, "a number stays a number");
  const daemonSet = objects.find((o) => o.kind === "DaemonSet") as
    | { spec: { template: { spec: { nodeSelector: unknown } } } }
    | undefined;
  t.same(daemonSet?.spec.template.spec.nodeSelector, { zone: "a", gpu: "yes" }, "a map is substituted whole");
  const config = objects.find((o) => o.metadata.name === "x-config") as
    | { data: Record<string, string> }
    | undefined;
  t.same(config?.data, { greeting: "hi, from x 1.0.0", replicas: "replicas=3" });
  t.notOk(
    objects.some((o) => o.metadata.name === "x-extra"),
    "render-if false drops the document",
  );
});

function entryWith(manifest: string): CatalogEntry {
  return {
    name: "broken",
    version: "1.0.0",
    description: "d",
    allowDowngrade: false,
    valuesSchema: {},
    dir: "broken/1.0.0",
    manifests: [{ file: "broken/1.0.0/manifests/00-a.yaml", text: manifest }],
  };
}

t.test("render errors name the file, line and field", async (t) => {
  const identity = { name: "b", version: "1.0.0", namespace: "ns" };
  const cases: [string, string][] = [
    [
      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  port: '{{ values.port }}'\n",
      "broken/1.0.0/manifests/00-a.yaml:6: /data/port: {{ values.port }} has no value",
    ],
    [
      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  x: 'a {{ values.map }}'\n",
      "broken/1.0.0/manifests/00-a.yaml:6: /data/x: {{ values.map }} is an object or list: it must be the whole value",
    ],
    [
      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: '{{ env.HOME }}'\n",
      "broken/1.0.0/manifests/00-a.yaml:4: /metadata/name: unknown reference {{ env.HOME }}: use values.* or addon.*",
    ],
    [
      "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\nkind: ConfigMap\nmetadata:\n  name: b\n",
      "broken/1.0.0/manifests/00-a.yaml:7: /: each document must be a Kubernetes object with apiVersion and kind",
    ],
    [
      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    rlark.io/render-if: 'yes'\n",
      "broken/1.0.0/manifests/00-a.yaml:1: /metadata/annotations/rlark.io~1render-if: must be a boolean",
    ],
    ["a: [1, 2\n", "broken/1.0.0/manifests/00-a.yaml:2: /: "],
    [
      `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  x: ${"[".repeat(300)}${"]".repeat(300)}\n`,
      "broken/1.0.0/manifests/00-a.yaml:6: /data/x/0/0/0",
    ],
  ];
  for (const [manifest, expected] of cases) {
    const error = t.throws(() => renderAddon(entryWith(manifest), { map: { a: 1 } }, identity)) as unknown;
    t.ok(error instanceof AddonRenderError, "an AddonRenderError");
    t.ok(
      (error as Error).message.startsWith(expected),
      `${(error as Error).message} starts with ${expected}`,
    );
  }
});

t.test("the catalog reader refuses broken entries with file and line", async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), "rlark-catalog-"));
  const entry = (name: string, version: string, meta: string, manifest?: string) => {
    const at = path.join(dir, name, version);
    mkdirSync(path.join(at, "manifests"), { recursive: true });
    writeFileSync(path.join(at, "addon.yaml"), meta);
    writeFileSync(path.join(at, "values.schema.json"), JSON.stringify({ type: "object" }));
    if (manifest) writeFileSync(path.join(at, "manifests", "00-a.yaml"), manifest);
  };
  entry("good", "1.0.0", "name: good\nversion: 1.0.0\ndescription: fine\n");
  entry("named", "1.0.0", "name: other\nversion: 1.0.0\ndescription: d\nminKubernetesVersion: 1.30\n");
  entry(
    "renders",
    "1.0.0",
    "name: renders\nversion: 1.0.0\ndescription: d\n",
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: '{{ values.missing }}'\n",
  );
  const loaded = readAddonCatalogs([dir], dir);
  t.same(
    loaded.catalog.entries().map((e) => e.name),
    ["good"],
  );
  t.same(
    loaded.diagnostics.map((d) => `${d.file}:${d.line} ${d.rule} ${d.path}: ${d.message}`),
    [
      'named/1.0.0/addon.yaml:1 catalog/addon-yaml /name: name must be "named", the entry\'s folder name',
      'named/1.0.0/addon.yaml:4 catalog/addon-yaml /minKubernetesVersion: minKubernetesVersion must be a string "major.minor" such as "1.30"',
      "renders/1.0.0/manifests/00-a.yaml:4 catalog/render /metadata/name: {{ values.missing }} has no value",
    ],
  );
});
