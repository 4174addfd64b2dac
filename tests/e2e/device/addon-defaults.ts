// The embodied-runtime catalog entry with its default values put in, for tests, until the addons
// renderer (CONTRACTS §A) lands: a plain textual substitution of `{{ values.x.y }}` and
// `{{ addon.* }}` by the defaults of values.schema.json. A scalar that is exactly one reference
// takes the value's own type (written as JSON, which YAML reads as a flow node), and a document
// whose `rlark.io/render-if` is false is dropped, as the contract says.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import type { KubernetesObject } from "@kubernetes/client-node";
import YAML from "yaml";

export const ENTRY = path.resolve(import.meta.dirname, "../../../fleet/addons/embodied-runtime/0.1.0");

interface SchemaNode {
  default?: unknown;
  properties?: Record<string, SchemaNode>;
}

function defaults(node: SchemaNode): unknown {
  if (!node.properties) return node.default;
  const out: Record<string, unknown> = { ...((node.default as Record<string, unknown> | undefined) ?? {}) };
  for (const [key, child] of Object.entries(node.properties)) {
    const value = defaults(child);
    if (value !== undefined) out[key] = value;
  }
  return out;
}

function lookup(values: unknown, dotted: string, file: string): unknown {
  let at: unknown = values;
  for (const key of dotted.split(".")) at = (at as Record<string, unknown> | undefined)?.[key];
  if (at === undefined) throw new Error(`${file}: {{ values.${dotted} }} has no default`);
  return at;
}

/** Every object of the entry's manifests, in file order, with defaults and `namespace` put in. */
export function renderWithDefaults(namespace: string): { file: string; object: KubernetesObject }[] {
  const schema = JSON.parse(readFileSync(path.join(ENTRY, "values.schema.json"), "utf8")) as SchemaNode;
  const values = defaults(schema);
  const addon: Record<string, string> = { name: "embodied-runtime", version: "0.1.0", namespace };
  const out: { file: string; object: KubernetesObject }[] = [];
  for (const file of readdirSync(path.join(ENTRY, "manifests")).sort()) {
    const text = readFileSync(path.join(ENTRY, "manifests", file), "utf8")
      .replace(/"\{\{ values\.([\w.]+) \}\}"/g, (_m, ref: string) =>
        JSON.stringify(lookup(values, ref, file)),
      )
      .replace(/\{\{ values\.([\w.]+) \}\}/g, (_m, ref: string) => String(lookup(values, ref, file)))
      .replace(/\{\{ addon\.(\w+) \}\}/g, (_m, key: string) => addon[key] ?? `{{ addon.${key} }}`);
    for (const doc of YAML.parseAllDocuments(text)) {
      const object = doc.toJSON() as KubernetesObject | null;
      if (!object) continue;
      // `rlark.io/render-if` switches the document off when false and is not itself rendered.
      const annotations = object.metadata?.annotations as Record<string, unknown> | undefined;
      if (annotations && "rlark.io/render-if" in annotations) {
        const keep = annotations["rlark.io/render-if"];
        delete annotations["rlark.io/render-if"];
        if (Object.keys(annotations).length === 0) delete object.metadata?.annotations;
        if (keep === false) continue;
      }
      out.push({ file, object });
    }
  }
  return out;
}
