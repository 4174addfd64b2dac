// api/ is the vocabulary every layer shares, the agent included: it reads no files and imports
// nothing of ours but lib/, so the catalog and the manifests are handed to it.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import t from "tap";

const root = path.resolve(import.meta.dirname, "../../operators");
const api = path.join(root, "api");

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sources(full);
    return entry.name.endsWith(".ts") ? [full] : [];
  });
}

t.test("api/ imports only api/, lib/ and packages", async (t) => {
  const outside: string[] = [];
  for (const file of sources(api)) {
    const text = readFileSync(file, "utf8");
    for (const match of text.matchAll(/(?:from|import)\s*\(?\s*"(\.[^"]+)"/g)) {
      const target = path.resolve(path.dirname(file), match[1] ?? "");
      const inside = [api, path.join(root, "lib")].some((dir) => target.startsWith(`${dir}${path.sep}`));
      // The JSON Schemas the generated types come from live in schemas/ at the top.
      if (!inside && !target.startsWith(path.resolve(root, "../schemas"))) {
        outside.push(`${path.relative(root, file)} -> ${match[1]}`);
      }
    }
  }
  t.same(outside, []);
});
