// The project runs without native addons (the brief: no compiler on the target, no prebuilt
// binaries from outside the registries). npm 11 still runs dependencies' install scripts unless
// package.json's allowScripts denies them, and two of ours (ssh2, cpu-features) compile one when
// they can — which then silently changes what the tests and benchmarks measure.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";

const root = join(import.meta.dirname, "../..");

function nativeAddons(dir: string, found: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) nativeAddons(path, found);
    else if (entry.name.endsWith(".node")) found.push(path.slice(root.length + 1));
  }
  return found;
}

t.test("allowScripts runs only node's own install script", async (t) => {
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
    allowScripts: Record<string, boolean>;
  };
  const allowed = Object.entries(pkg.allowScripts)
    .filter(([, allow]) => allow)
    .map(([name]) => name);
  t.same(allowed, ["node"], "the node package links its binary in its preinstall");
  t.equal(pkg.allowScripts.ssh2, false);
  t.equal(pkg.allowScripts["cpu-features"], false);
});

t.test("the installed dependencies hold no compiled addon", async (t) => {
  t.same(nativeAddons(join(root, "node_modules")), []);
});
