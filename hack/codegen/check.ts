// Fails (exit 1, naming the files) when a generated file differs from what the schemas give.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { CRDS_DIR, generatedFiles, TYPES_DIR } from "./outputs.ts";

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
  for (const dir of [TYPES_DIR, CRDS_DIR]) {
    let names: string[] = [];
    try {
      names = readdirSync(dir);
    } catch {
      names = [];
    }
    for (const name of names)
      if (!files.has(join(dir, name))) stale.push(`${join(dir, name)} (not generated)`);
  }
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
