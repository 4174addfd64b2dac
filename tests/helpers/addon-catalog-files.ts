// The fixture addon catalog (tests/fixtures/addon-catalog: "demo", with RBAC, a ConfigMap, a
// DaemonSet and a Deployment) as repository files under .rlark/addons/, for a test's git.
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

const fixtures = path.resolve(import.meta.dirname, "../fixtures/addon-catalog");

export function catalogFiles(dir = fixtures, prefix = ".rlark/addons"): Record<string, string> {
  const files: Record<string, string> = {};
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) Object.assign(files, catalogFiles(full, `${prefix}/${name}`));
    else files[`${prefix}/${name}`] = readFileSync(full, "utf8");
  }
  return files;
}
