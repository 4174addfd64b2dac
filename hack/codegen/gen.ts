// `npm run gen`: regenerates the TypeScript types and CRDs from schemas/*.schema.json.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { CRDS_DIR, generatedFiles, TYPES_DIR } from "./outputs.ts";

const files = generatedFiles();
// Files of removed kinds would otherwise linger; the generated directories hold nothing else.
for (const dir of [TYPES_DIR, CRDS_DIR]) {
  mkdirSync(dir, { recursive: true });
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (!files.has(path)) rmSync(path);
  }
}
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
