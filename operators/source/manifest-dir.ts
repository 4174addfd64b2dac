// The manifests' folder inside a checkout (the hub's --path): written one way, and checked to be a
// folder that stays inside the checkout, for the watcher's revisions and the pull requests' heads.
import { realpath, stat } from "node:fs/promises";
import { posix } from "node:path";
import type { Diagnostic } from "../api/index.ts";
import { resolveInside } from "./resolve-inside.ts";

/** Repo-relative, no escaping the checkout; "." for the root. */
export function normaliseSourcePath(path: string | undefined): string {
  const cleaned = posix
    .normalize((path ?? ".").replaceAll("\\", "/"))
    .replace(/^\/+/, "")
    .replace(/\/+$/, "");
  if (cleaned === ".." || cleaned.startsWith("../")) throw new Error(`--path ${path} leaves the repository`);
  return cleaned === "" ? "." : cleaned;
}

/**
 * The manifests' directory must exist in the revision and stay inside it: a pull request could
 * make it a symlink to anywhere on the hub, and what its plan reads ends up in a public comment.
 * A link is resolved
 * inside the checkout only (resolve-inside.ts): whether a path outside exists is never looked at,
 * so a repository cannot probe the hub's file system with it.
 */
export async function checkManifestDir(
  dir: string,
  path: string,
  revision: string,
): Promise<Diagnostic | undefined> {
  const diagnostic = (message: string): Diagnostic => ({
    file: path,
    line: 0,
    column: 0,
    kind: "",
    name: "",
    path: "",
    rule: "source/path",
    message,
  });
  let folder: string;
  try {
    folder = normaliseSourcePath(path);
  } catch (error) {
    return diagnostic(error instanceof Error ? error.message : String(error));
  }
  const resolved = await resolveInside(await realpath(dir), folder);
  if ("problem" in resolved && resolved.problem !== "missing")
    return diagnostic(`${folder} at revision ${revision} is a symlink out of the repository`);
  const info = "path" in resolved ? await stat(resolved.path).catch(() => undefined) : undefined;
  if (!info?.isDirectory())
    return diagnostic(`directory ${folder} does not exist at revision ${revision}; check --path`);
  return undefined;
}
