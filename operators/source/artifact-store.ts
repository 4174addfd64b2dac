// When a revision is applied, the hub copies each repository artifact (checked by the source's
// rules) into a content-addressed store; agents then fetch it by digest. The store is private to
// the hub (folders 0700, inside a 0700 data dir) and files are 0644, not executable: an agent
// makes its own copy executable after checking the digest again.
import { chmod, copyFile, mkdir, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { Diagnostic, ManifestObject } from "../api/index.ts";
import { sha256Of, verifyRepositoryArtifacts } from "./repository-artifacts.ts";

/** Kept under its own file name, so a `./name` command and the file's shebang work on the agent. */
export function artifactUrl(artifactDir: string, sha256: string, repositoryPath: string): string {
  return pathToFileURL(path.join(artifactDir, sha256, path.basename(repositoryPath))).href;
}

/** Copies the revision's repository artifacts into `artifactDir`, or returns why it cannot. */
export async function storeArtifacts(
  objects: readonly ManifestObject[],
  manifestRoot: string,
  artifactDir: string,
): Promise<Diagnostic[]> {
  const { verified, errors } = await verifyRepositoryArtifacts(objects, manifestRoot);
  if (errors.length > 0) return errors;
  for (const { artifact, file } of verified) {
    const target = path.join(artifactDir, artifact.sha256, path.basename(artifact.url));
    const existing = await stat(target).catch(() => undefined);
    if (existing) {
      // Stores written before artifacts were 0644 held them 0755.
      if ((existing.mode & 0o777) !== 0o644) await chmod(target, 0o644);
      continue;
    }
    await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
    const partial = `${target}.partial-${process.pid}`;
    await copyFile(file, partial);
    await chmod(partial, 0o644);
    // The copy is what agents get: check it, not only what was read before.
    if ((await sha256Of(partial)) !== artifact.sha256) {
      await rm(partial, { force: true });
      throw new Error(`artifact ${artifact.url} changed while it was copied`);
    }
    await rename(partial, target);
  }
  return [];
}
