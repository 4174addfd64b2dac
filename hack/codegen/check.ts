// Fails (exit 1, naming the files) when a generated file differs from what the schemas give.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ADDON_BASES_DIR, HELM_ADDON_PREFIX, HELM_TEMPLATES_DIR } from "./addon-bases.ts";
import { CRDS_DIR, generatedFiles, TYPES_DIR } from "./outputs.ts";

/** Generated files no schema or catalog entry gives any more. */
export function strayFiles(files: ReadonlyMap<string, string>): string[] {
  const list = (dir: string) => {
    try {
      return readdirSync(dir, { recursive: true, encoding: "utf8" }).map((name) => join(dir, name));
    } catch {
      return [];
    }
  };
  const generatedDirs = new Set([...files.keys()].map((p) => p.slice(0, p.lastIndexOf("/"))));
  return [
    ...list(TYPES_DIR),
    ...list(CRDS_DIR),
    ...list(ADDON_BASES_DIR).filter((p) => p.endsWith(".yaml") || !generatedDirs.has(p)),
    ...list(HELM_TEMPLATES_DIR).filter((p) =>
      p.slice(HELM_TEMPLATES_DIR.length + 1).startsWith(HELM_ADDON_PREFIX),
    ),
  ].filter((p) => !files.has(p));
}

export function staleFiles(): string[] {
  const files = generatedFiles();
  const stale: string[] = [];
  for (const [path, content] of files) {
    let current: string | undefined;
    try {
      current = readFileSync(path, "utf8");
    } catch {
      current = undefined;
    }
    if (current !== content) stale.push(current === undefined ? `${path} (missing)` : path);
  }
  for (const path of strayFiles(files)) stale.push(`${path} (not generated)`);
  return stale.sort();
}

if (import.meta.main) {
  const stale = staleFiles();
  if (stale.length > 0) {
    console.error("generated files are stale; run `npm run gen` and commit the result:");
    for (const path of stale) console.error(`  ${path}`);
    process.exit(1);
  }
  console.log("generated files are fresh");
}
