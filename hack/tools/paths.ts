// Where hack/tools/build puts helm, kustomize and TensorBoard's venv. Pure path logic, like
// hack/kube/paths.ts.
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

const PIN = {
  helm: "HELM_VERSION",
  kustomize: "KUSTOMIZE_VERSION",
  tensorboard: "TENSORBOARD_VERSION",
} as const;

function pinned(name: keyof typeof PIN): string {
  const file = join(repoRoot, "hack/tools/versions.env");
  const version = pins(file).get(PIN[name]);
  if (!version) throw new Error(`${file}: ${PIN[name]} is not set`);
  return version;
}

const toolsCache = (env: NodeJS.ProcessEnv) =>
  join(env.RLARK_CACHE || join(env.HOME || homedir(), ".cache/rlark"), "tools");

/** The pinned tool in `${RLARK_CACHE:-$HOME/.cache/rlark}/tools`; throws when it is not built. */
export function toolPath(name: "helm" | "kustomize", env: NodeJS.ProcessEnv = process.env): string {
  const version = pinned(name);
  const bin = join(toolsCache(env), `${name}-${version}`, "bin", name);
  if (!existsSync(bin)) throw new Error(`${name} ${version} is missing at ${bin}: run bash hack/tools/build`);
  return bin;
}

/**
 * The python of a venv that has TensorBoard: $RLARK_TENSORBOARD_VENV when set (any venv with
 * tensorboard installed), else the pinned one hack/tools/build installs; throws when it is missing.
 */
export function tensorBoardPython(env: NodeJS.ProcessEnv = process.env): string {
  const venv = env.RLARK_TENSORBOARD_VENV || join(toolsCache(env), `tensorboard-${pinned("tensorboard")}`);
  const python = join(venv, "bin", "python");
  const complete = env.RLARK_TENSORBOARD_VENV ? existsSync(python) : existsSync(join(venv, "stamp"));
  if (!complete) throw new Error(`TensorBoard is missing at ${venv}: run bash hack/tools/build tensorboard`);
  return python;
}
