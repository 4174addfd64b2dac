// `npm run gen`: regenerates the TypeScript types and CRDs from schemas/*.schema.json, and the
// kustomize bases and Helm templates of the shipped addon catalog (addon-bases.ts).
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { strayFiles } from "./check.ts";
import { generatedFiles } from "./outputs.ts";

const files = generatedFiles();
// Files of removed kinds and catalog entries would otherwise linger.
for (const path of strayFiles(files)) rmSync(path, { recursive: true, force: true });
let written = 0;
for (const [path, content] of files) {
  mkdirSync(dirname(path), { recursive: true });
  let current: string | undefined;
  try {
    current = readFileSync(path, "utf8");
  } catch {
    current = undefined;
  }
  if (current === content) continue;
  writeFileSync(path, content);
  written++;
  console.log(`wrote ${path}`);
}
console.log(`${files.size} generated files, ${written} changed`);
