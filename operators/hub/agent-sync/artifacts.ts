// When a revision is applied, the hub copies each repository artifact (checked by the source's
// rules) into a content-addressed store; agents then fetch it by digest.
import { mkdir, rename, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { Diagnostic, ManifestObject } from "../../api/validate/index.ts";
import { verifyRepositoryArtifacts } from "../../source/repository-artifacts.ts";

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
  for (const { artifact, bytes } of verified) {
    const target = path.join(artifactDir, artifact.sha256, path.basename(artifact.url));
    if (
      await stat(target).then(
        () => true,
        () => false,
      )
    )
      continue;
    await mkdir(path.dirname(target), { recursive: true });
    const partial = `${target}.partial-${process.pid}`;
    await writeFile(partial, bytes, { mode: 0o755 });
    await rename(partial, target);
  }
  return [];
}
