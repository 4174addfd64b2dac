import { Ajv2020 } from "ajv/dist/2020.js";
import t from "tap";
import { API_VERSION, kindByPlural, kindInfo, kinds } from "../../operators/api/index.ts";
import { sourceSchemas } from "../../operators/api/source-schemas.ts";

t.test("the registry holds the kinds of the architecture with their scope and writer", async (t) => {
  t.equal(API_VERSION, "rlinf.io/v1alpha1");
  t.same(
    kinds.map((k) => [k.kind, k.plural, k.singular, k.namespaced, k.writtenBy]),
    [
      ["Job", "jobs", "job", false, "git"],
      ["Workflow", "workflows", "workflow", false, "git"],
      ["Domain", "domains", "domain", false, "git"],
      ["Addon", "addons", "addon", true, "git"],
      ["Cluster", "clusters", "cluster", false, "git"],
      ["Node", "nodes", "node", true, "git"],
      ["User", "users", "user", false, "git"],
      ["Team", "teams", "team", false, "git"],
      ["AccessPolicy", "accesspolicies", "accesspolicy", false, "git"],
      ["SealedSecret", "sealedsecrets", "sealedsecret", true, "git"],
      ["Bundle", "bundles", "bundle", false, "git"],
      ["Task", "tasks", "task", true, "hub"],
      ["DomainPeer", "domainpeers", "domainpeer", true, "hub"],
      ["AddonRelease", "addonreleases", "addonrelease", true, "hub"],
      ["BundleRelease", "bundlereleases", "bundlerelease", true, "hub"],
      ["Pod", "pods", "pod", true, "agent"],
    ],
  );
});

t.test("kinds are found by name and by plural, and unknown names are undefined", async (t) => {
  t.equal(kindInfo("DomainPeer")?.plural, "domainpeers");
  t.equal(kindByPlural("domainpeers")?.kind, "DomainPeer");
  t.equal(kindInfo("domainpeer"), undefined, "kind names are case-sensitive");
  t.equal(kindByPlural("Jobs"), undefined);
  t.equal(kindInfo("toString"), undefined, "no prototype keys");
});

function walk(node: unknown, visit: (node: Record<string, unknown>, path: string) => void, path = ""): void {
  if (Array.isArray(node)) {
    for (const [i, item] of node.entries()) walk(item, visit, `${path}/${i}`);
  } else if (node !== null && typeof node === "object") {
    visit(node as Record<string, unknown>, path);
    for (const [key, value] of Object.entries(node)) walk(value, visit, `${path}/${key}`);
  }
}

t.test("each kind's schema is self-contained: every $ref points into its own $defs", async (t) => {
  for (const info of kinds) {
    const defs = (info.schema.$defs ?? {}) as Record<string, unknown>;
    walk(info.schema, (node, path) => {
      if (typeof node.$ref !== "string") return;
      const name = node.$ref.replace(/^#\/\$defs\//, "");
      if (name === node.$ref || !(name in defs)) t.fail(`${info.kind} ${path}: dangling $ref ${node.$ref}`);
    });
    t.equal(info.schema.$id, `https://rlinf.io/schemas/v1alpha1/${info.schemaFile}`);
  }
});

t.test("the bundled schemas validate the same on their own, without the other files", async (t) => {
  const ajv = new Ajv2020({ strict: false });
  for (const info of kinds) t.ok(ajv.compile(info.schema), `${info.kind} compiles alone`);
});

t.test("every schema file is valid JSON Schema 2020-12", async (t) => {
  const ajv = new Ajv2020({ strict: false, validateSchema: true });
  for (const [file, schema] of sourceSchemas) {
    t.ok(ajv.validateSchema(schema), `${file}: ${ajv.errorsText(ajv.errors)}`);
  }
});

t.test("every property of every schema has a description", async (t) => {
  const missing: string[] = [];
  for (const [file, schema] of sourceSchemas) {
    walk(schema, (node, path) => {
      // Property maps inside if/then branches restate fields described elsewhere.
      if (/\/(if|then|not)(\/|$)/.test(path)) return;
      const properties = node.properties;
      if (properties === null || typeof properties !== "object") return;
      for (const [name, property] of Object.entries(properties)) {
        if (typeof property !== "object" || property === null) continue;
        if (typeof (property as Record<string, unknown>).description !== "string") {
          missing.push(`${file}${path}/properties/${name}`);
        }
      }
    });
  }
  t.same(missing, []);
});

t.test("closed objects: every object with properties forbids unknown fields", async (t) => {
  const open: string[] = [];
  for (const [file, schema] of sourceSchemas) {
    walk(schema, (node, path) => {
      if (/\/(if|then|not)(\/|$)/.test(path) || /\/properties\/(metadata|labels|annotations)$/.test(path))
        return;
      if (node.type === "object" && node.properties && node.additionalProperties === undefined)
        open.push(`${file}${path}`);
    });
  }
  t.same(open, []);
});
