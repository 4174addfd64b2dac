// Makes one kind's schema self-contained: every definition it reaches through a `$ref`, in its
// own file or another, is copied into its `$defs` and the reference rewritten to `#/$defs/<Name>`.
// Definition names are unique across all schema files, so copies never clash. Consumers outside
// this process (kubeconform, the CRD converter, editors) get one file per kind without a resolver.
import { type JsonSchema, sourceSchema } from "./source-schemas.ts";

interface RefTarget {
  file: string;
  name: string;
}

/** Parses the only reference forms our schemas use: `#/$defs/X` and `<file>#/$defs/X`. */
export function parseRef(ref: string, currentFile: string): RefTarget {
  const match = /^([a-z0-9.-]*)#\/\$defs\/([A-Za-z0-9]+)$/.exec(ref);
  if (!match) throw new Error(`unsupported $ref ${JSON.stringify(ref)} in ${currentFile}`);
  return { file: match[1] || currentFile, name: match[2]! };
}

function definition(target: RefTarget): JsonSchema {
  const defs = sourceSchema(target.file).$defs as Record<string, JsonSchema> | undefined;
  const def = defs?.[target.name];
  if (!def) throw new Error(`${target.file} has no $defs/${target.name}`);
  return def;
}

function rewrite(node: unknown, file: string, reached: (target: RefTarget) => void): unknown {
  if (Array.isArray(node)) return node.map((item) => rewrite(item, file, reached));
  if (node === null || typeof node !== "object") return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === "$ref" && typeof value === "string") {
      const target = parseRef(value, file);
      reached(target);
      out[key] = `#/$defs/${target.name}`;
    } else if (key === "$defs") {
      // Own definitions are re-added below only if reached, so unused ones do not leak in.
    } else {
      out[key] = rewrite(value, file, reached);
    }
  }
  return out;
}

/** The self-contained form of the schema in `file`. */
export function bundleSchema(file: string): JsonSchema {
  const defs = new Map<string, JsonSchema>();
  const origin = new Map<string, string>();
  const queue: RefTarget[] = [];
  const reached = (target: RefTarget): void => {
    const seen = origin.get(target.name);
    if (seen === undefined) {
      origin.set(target.name, target.file);
      queue.push(target);
    } else if (seen !== target.file) {
      throw new Error(`$defs/${target.name} is defined in both ${seen} and ${target.file}`);
    }
  };
  const root = rewrite(sourceSchema(file), file, reached) as JsonSchema;
  for (let target = queue.shift(); target; target = queue.shift()) {
    defs.set(target.name, rewrite(definition(target), target.file, reached) as JsonSchema);
  }
  if (defs.size > 0) {
    root.$defs = Object.fromEntries([...defs.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  }
  return root;
}
