// Where hack/tools/build puts helm and kustomize. Pure path logic, like hack/kube/paths.ts.
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { repoRoot } from "../kube/paths.ts";

export interface Tools {
  helm: string;
  kustomize: string;
}

function pins(file: string): Map<string, string> {
  const vars = new Map<string, string>();
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const m = /^([A-Z0-9_]+)=(\S+)\s*$/.exec(line);
    if (m) vars.set(m[1]!, m[2]!);
  }
  return vars;
}

/** The pinned tools in `${RLARK_CACHE:-$HOME/.cache/rlark}/tools`; throws when one is not built. */
export function tools(env: NodeJS.ProcessEnv = process.env): Tools {
  const file = join(repoRoot, "hack/tools/versions.env");
  const vars = pins(file);
  const cache = join(env.RLARK_CACHE || join(env.HOME || homedir(), ".cache/rlark"), "tools");
  const path = (name: string, key: string): string => {
    const version = vars.get(key);
    if (!version) throw new Error(`${file}: ${key} is not set`);
    const bin = join(cache, `${name}-${version}`, "bin", name);
    if (!existsSync(bin))
      throw new Error(`${name} ${version} is missing at ${bin}: run bash hack/tools/build`);
    return bin;
  };
  return { helm: path("helm", "HELM_VERSION"), kustomize: path("kustomize", "KUSTOMIZE_VERSION") };
}
