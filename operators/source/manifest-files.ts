import type { Dirent } from "node:fs";
import { lstat, readdir, readFile, realpath, stat } from "node:fs/promises";
import path from "node:path";
import type { Diagnostic } from "../api/index.ts";
import { resolveInside } from "./resolve-inside.ts";

const MANIFEST_EXTENSIONS = new Set([".yaml", ".yml"]);
/** Folders that never hold manifests and can be huge. */
// `.rlark` holds the repository's addon catalog (addon-catalog.ts): not manifests.
const SKIPPED_DIRECTORIES = new Set([".git", "node_modules", ".rlark"]);

export interface ManifestFile {
  /** Where the file really is (symlinks resolved, inside the tree): what is read. */
  absolute: string;
  /** The path as found, through any links, relative to the reporting base directory. */
  display: string;
}

export interface CollectResult {
  files: ManifestFile[];
  diagnostics: Diagnostic[];
}

function fileDiagnostic(display: string, rule: string, message: string): Diagnostic {
  return { file: display, line: 0, column: 0, kind: "", name: "", path: "", rule, message };
}

/**
 * Lists the .yaml/.yml files under the given paths, sorted, each once.
 * A symlink is followed only while it stays inside the tree it was found in (see resolve-inside.ts):
 * one that leaves is an error that names no path outside and does not tell whether its target
 * exists, so a repository can neither make the hub read its files nor probe for them.
 */
export async function collectManifestFiles(paths: string[], baseDir: string): Promise<CollectResult> {
  const files = new Map<string, ManifestFile>();
  const diagnostics: Diagnostic[] = [];
  const display = (p: string) => path.relative(baseDir, p) || p;

  for (const given of paths) {
    const absolute = path.resolve(baseDir, given);
    let root: string;
    try {
      root = await realpath(absolute);
    } catch {
      diagnostics.push(
        fileDiagnostic(display(absolute), "io/not-found", `no such file or directory: ${given}`),
      );
      continue;
    }
    const rootStat = await stat(root);
    if (rootStat.isFile()) {
      // A file named explicitly is read whatever its extension: the user asked for it.
      files.set(absolute, { absolute: root, display: display(absolute) });
      continue;
    }
    const ignored = await readIgnoreFile(root);
    const visited = new Set<string>([root]);
    // Each folder as found (for display and ignore rules) and as resolved inside root (to read).
    const pending = [{ found: absolute, real: root }];
    while (pending.length > 0) {
      const dir = pending.pop() as { found: string; real: string };
      let entries: Dirent[];
      try {
        entries = await readdir(dir.real, { withFileTypes: true });
      } catch (error) {
        diagnostics.push(
          fileDiagnostic(display(dir.found), "io/unreadable", `cannot read directory: ${errorCode(error)}`),
        );
        continue;
      }
      for (const entry of entries) {
        const found = path.join(dir.found, entry.name);
        let real = path.join(dir.real, entry.name);
        if (ignored(path.relative(absolute, found), entry.isDirectory())) continue;
        if (entry.isDirectory()) {
          if (!SKIPPED_DIRECTORIES.has(entry.name)) pending.push({ found, real });
          continue;
        }
        let isFile = entry.isFile();
        if (entry.isSymbolicLink()) {
          const resolved = await resolveInside(root, path.relative(root, real));
          if ("problem" in resolved) {
            if (resolved.problem === "missing" && !isManifestName(entry.name)) continue;
            diagnostics.push(symlinkDiagnostic(display(found), resolved.problem));
            continue;
          }
          real = resolved.path;
          const target = await lstat(real);
          if (target.isDirectory()) {
            if (!visited.has(real)) {
              visited.add(real);
              pending.push({ found, real });
            }
            continue;
          }
          isFile = target.isFile();
        }
        if (isFile && isManifestName(entry.name))
          files.set(found, { absolute: real, display: display(found) });
      }
    }
  }
  const sorted = [...files.values()].sort((a, b) =>
    a.display < b.display ? -1 : a.display > b.display ? 1 : 0,
  );
  return { files: sorted, diagnostics };
}

function symlinkDiagnostic(file: string, problem: "outside" | "missing" | "loop"): Diagnostic {
  if (problem === "missing") return fileDiagnostic(file, "io/broken-symlink", "symlink points nowhere");
  if (problem === "loop")
    return fileDiagnostic(file, "io/symlink-loop", "symlinks point at each other in a loop");
  return fileDiagnostic(
    file,
    "io/symlink-outside-tree",
    "symlink leaves the manifest folder; only links that stay inside it are followed",
  );
}

/** The name of the file, at the root of a manifest path, that lists what to skip (like Flux's .sourceignore). */
export const IGNORE_FILE = ".rlarkignore";

/**
 * Reads the ignore file: gitignore-style lines; `dir/` matches directories only, a pattern without
 * a slash matches a name at any depth, one with a slash is anchored at the root; `*` and `**` glob.
 */
async function readIgnoreFile(root: string): Promise<(relative: string, isDirectory: boolean) => boolean> {
  const text = await readFile(path.join(root, IGNORE_FILE), "utf8").catch(() => "");
  const patterns = text
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => {
      const directoryOnly = line.endsWith("/");
      const body = line.replace(/^\/|\/$/g, "");
      return { directoryOnly, glob: body.includes("/") ? body : `**/${body}` };
    });
  return (relative, isDirectory) =>
    patterns.some((p) => (isDirectory || !p.directoryOnly) && path.matchesGlob(relative, p.glob));
}

function isManifestName(name: string): boolean {
  return MANIFEST_EXTENSIONS.has(path.extname(name).toLowerCase());
}

export function errorCode(error: unknown): string {
  if (error && typeof error === "object" && "code" in error && typeof error.code === "string")
    return error.code;
  return error instanceof Error ? error.message : String(error);
}
