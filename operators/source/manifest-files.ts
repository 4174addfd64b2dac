import { lstat, readdir, readFile, realpath, stat } from "node:fs/promises";
import path from "node:path";
import type { Diagnostic } from "../api/validate/diagnostic.ts";

const MANIFEST_EXTENSIONS = new Set([".yaml", ".yml"]);
/** Folders that never hold manifests and can be huge. */
const SKIPPED_DIRECTORIES = new Set([".git", "node_modules"]);

export interface ManifestFile {
  /** Absolute path of the file as found (not resolved through symlinks). */
  absolute: string;
  /** The same, relative to the reporting base directory. */
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
 * A symlink is followed only while it stays inside the tree it was found in: one that leaves it is
 * an error, so a repository cannot make the hub read files outside its checkout.
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
      files.set(absolute, { absolute, display: display(absolute) });
      continue;
    }
    const ignored = await readIgnoreFile(root);
    const visited = new Set<string>([root]);
    const pending = [absolute];
    while (pending.length > 0) {
      const dir = pending.pop() as string;
      let entries: import("node:fs").Dirent[];
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (error) {
        diagnostics.push(
          fileDiagnostic(display(dir), "io/unreadable", `cannot read directory: ${errorCode(error)}`),
        );
        continue;
      }
      for (const entry of entries) {
        const full = path.join(dir, entry.name);
        if (ignored(path.relative(absolute, full), entry.isDirectory())) continue;
        if (entry.isDirectory()) {
          if (!SKIPPED_DIRECTORIES.has(entry.name)) pending.push(full);
          continue;
        }
        if (entry.isSymbolicLink()) {
          const target = await realpath(full).catch(() => undefined);
          if (target === undefined) {
            if (isManifestName(entry.name)) {
              diagnostics.push(fileDiagnostic(display(full), "io/broken-symlink", "symlink points nowhere"));
            }
            continue;
          }
          if (target !== root && !target.startsWith(root + path.sep)) {
            diagnostics.push(
              fileDiagnostic(
                display(full),
                "io/symlink-outside-tree",
                `symlink leaves the tree (points to ${target}); only links inside ${display(root)} are followed`,
              ),
            );
            continue;
          }
          const targetStat = await lstat(target);
          if (targetStat.isDirectory()) {
            if (!visited.has(target)) {
              visited.add(target);
              pending.push(full);
            }
            continue;
          }
        }
        if ((entry.isFile() || entry.isSymbolicLink()) && isManifestName(entry.name)) {
          files.set(full, { absolute: full, display: display(full) });
        }
      }
    }
  }
  const sorted = [...files.values()].sort((a, b) =>
    a.display < b.display ? -1 : a.display > b.display ? 1 : 0,
  );
  return { files: sorted, diagnostics };
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
