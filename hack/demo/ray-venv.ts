// Ray from PyPI in a venv under the rlark cache, made once per version: what both Ray demos
// (ray-two-clusters on the process runtime, ray-k8s-two-clusters on real nodes) run.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";

export const RAY_VERSION = "2.60.0";

/** The venv's folder; installs `ray==RAY_VERSION` with pip first when no complete install is there. */
export function rayVenv(): string {
  const cache = path.join(
    process.env.RLARK_CACHE || path.join(process.env.HOME || homedir(), ".cache/rlark"),
    "tools",
  );
  const dir = path.join(cache, `ray-${RAY_VERSION}`);
  if (existsSync(path.join(dir, ".installed"))) return dir;
  console.log(`installing ray ${RAY_VERSION} into ${dir} (pip, PyPI)`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(cache, { recursive: true });
  execFileSync("python3", ["-m", "venv", dir], { stdio: "inherit" });
  try {
    execFileSync(path.join(dir, "bin", "pip"), ["install", "--quiet", `ray==${RAY_VERSION}`], {
      stdio: "inherit",
    });
  } catch {
    const python = execFileSync("python3", ["--version"], { encoding: "utf8" }).trim();
    throw new Error(`pip could not install ray==${RAY_VERSION} for ${python}: see pip's output above`);
  }
  writeFileSync(path.join(dir, ".installed"), `${RAY_VERSION}\n`);
  return dir;
}
