// Where hack/tools/build puts helm and kustomize. Pure path logic, like hack/kube/paths.ts.
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { repoRoot } from "../kube/paths.ts";

function pins(file: string): Map<string, string> {
  const vars = new Map<string, string>();
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const m = /^([A-Z0-9_]+)=(\S+)\s*$/.exec(line);
    if (m) vars.set(m[1]!, m[2]!);
  }
  return vars;
}

const PIN = { helm: "HELM_VERSION", kustomize: "KUSTOMIZE_VERSION" } as const;

/** The pinned tool in `${RLARK_CACHE:-$HOME/.cache/rlark}/tools`; throws when it is not built. */
export function toolPath(name: keyof typeof PIN, env: NodeJS.ProcessEnv = process.env): string {
  const file = join(repoRoot, "hack/tools/versions.env");
  const version = pins(file).get(PIN[name]);
  if (!version) throw new Error(`${file}: ${PIN[name]} is not set`);
  const cache = join(env.RLARK_CACHE || join(env.HOME || homedir(), ".cache/rlark"), "tools");
  const bin = join(cache, `${name}-${version}`, "bin", name);
  if (!existsSync(bin)) throw new Error(`${name} ${version} is missing at ${bin}: run bash hack/tools/build`);
  return bin;
}
