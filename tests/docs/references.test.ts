// The docs cite only what the repository has: relative links, repository paths in backticks and
// other documents by name (ARCHITECTURE.md lives outside the repository and was cited anyway).
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import t from "tap";

const root = path.resolve(import.meta.dirname, "../..");

function markdownFiles(): string[] {
  const docs = readdirSync(path.join(root, "docs"), { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".md"))
    .map((f) => path.join("docs", f));
  return ["README.md", "CONTRIBUTING.md", ...docs].sort();
}

t.test("every file the docs cite exists", async (t) => {
  const missing: string[] = [];
  for (const file of markdownFiles()) {
    const text = readFileSync(path.join(root, file), "utf8");
    const dir = path.dirname(path.join(root, file));
    for (const [, target = ""] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const relative = target.split("#")[0] ?? "";
      if (relative && !/^[a-z]+:/.test(relative) && !existsSync(path.join(dir, relative)))
        missing.push(`${file}: link ${target}`);
    }
    for (const [, cited = ""] of text.matchAll(
      /`((?:operators|tests|hack|fleet|schemas|examples|docs)\/[^`\s]*)`/g,
    )) {
      if (!/[*<{]/.test(cited) && !existsSync(path.join(root, cited))) missing.push(`${file}: path ${cited}`);
    }
    for (const [, name = ""] of text.matchAll(/\b([A-Z][A-Z_]+\.md)\b/g)) {
      if (!existsSync(path.join(root, name)) && !existsSync(path.join(root, "docs", name)))
        missing.push(`${file}: document ${name}`);
    }
  }
  t.same(missing, []);
});
