// The hub refuses a revision whose repository artifacts are missing, leave the manifest folder
// or do not match their SHA-256; the plan checks the same rules (one implementation, in the
// source), read-only, so a green plan is not refused on merge.
import type { Diagnostic, ManifestObject } from "../../api/index.ts";
import { verifyRepositoryArtifacts } from "../../source/index.ts";

export async function checkArtifacts(
  objects: readonly ManifestObject[],
  manifestRoot: string,
): Promise<Diagnostic[]> {
  return (await verifyRepositoryArtifacts(objects, manifestRoot)).errors;
}
