// Raw tasks may name an artifact by its path in the repository (scripts/cartpole.mjs). One set of
// rules for the hub, which refuses a revision whose artifacts are wrong, and for plans, which
// must not be greener than the hub: the path stays inside the manifest folder, names a regular
// file (a symlink is never followed, so a pull request cannot make the hub hash its own files),
// and the file's SHA-256 is the one the manifest names.
import { createHash } from "node:crypto";
import { lstat, readFile } from "node:fs/promises";
import path from "node:path";
import type { Diagnostic, ManifestObject } from "../api/validate/index.ts";

export interface RepositoryArtifact {
  /** The path as the manifest writes it, relative to the manifest folder. */
  url: string;
  sha256: string;
  owner: ManifestObject;
  /** JSON pointer to the url field, for diagnostics. */
  pointer: string;
}

export interface VerifiedArtifact {
  artifact: RepositoryArtifact;
  bytes: Buffer;
}

/** URLs with a scheme (https:, file:) and absolute paths are fetched by agents, not read here. */
export function isRepositoryPath(url: string): boolean {
  return !/^[a-z][a-z0-9+.-]*:/i.test(url) && !path.isAbsolute(url);
}

export function repositoryArtifacts(objects: readonly ManifestObject[]): RepositoryArtifact[] {
  const found: RepositoryArtifact[] = [];
  const visit = (owner: ManifestObject, tasks: unknown, pointer: string) => {
    if (!Array.isArray(tasks)) return;
    tasks.forEach((task, i) => {
      const artifact = (task as { raw?: { artifact?: { url?: unknown; sha256?: unknown } } })?.raw?.artifact;
      if (typeof artifact?.url !== "string" || typeof artifact.sha256 !== "string") return;
      if (!isRepositoryPath(artifact.url)) return;
      found.push({
        url: artifact.url,
        sha256: artifact.sha256,
        owner,
        pointer: `${pointer}/${i}/raw/artifact/url`,
      });
    });
  };
  for (const object of objects) {
    if (!object.schemaValid) continue;
    const spec = object.object.spec as
      | { tasks?: unknown; jobs?: { template?: { tasks?: unknown } }[] }
      | undefined;
    if (object.kind === "Job") visit(object, spec?.tasks, "/spec/tasks");
    if (object.kind === "Workflow") {
      spec?.jobs?.forEach((job, j) => {
        visit(object, job.template?.tasks, `/spec/jobs/${j}/template/tasks`);
      });
    }
  }
  return found;
}

/** Reads and checks every repository artifact; the errors point at the manifest field naming it. */
export async function verifyRepositoryArtifacts(
  objects: readonly ManifestObject[],
  manifestRoot: string,
): Promise<{ verified: VerifiedArtifact[]; errors: Diagnostic[] }> {
  const verified: VerifiedArtifact[] = [];
  const errors: Diagnostic[] = [];
  for (const artifact of repositoryArtifacts(objects)) {
    const fail = (message: string) => {
      const pos = artifact.owner.document.locate(artifact.pointer);
      errors.push({
        file: artifact.owner.document.file,
        line: pos.line,
        column: pos.column,
        kind: artifact.owner.kind,
        name: artifact.owner.name,
        path: artifact.pointer,
        rule: "source/artifact",
        message,
      });
    };
    const file = path.resolve(manifestRoot, artifact.url);
    if (!file.startsWith(manifestRoot + path.sep)) {
      fail(`artifact path "${artifact.url}" leaves the manifest folder`);
      continue;
    }
    const info = await lstat(file).catch(() => undefined);
    if (!info?.isFile()) {
      fail(
        info?.isSymbolicLink()
          ? `artifact "${artifact.url}" is a symlink; name the file itself`
          : `artifact "${artifact.url}" is not in the repository`,
      );
      continue;
    }
    const bytes = await readFile(file);
    const digest = createHash("sha256").update(bytes).digest("hex");
    if (digest !== artifact.sha256) {
      fail(`artifact "${artifact.url}" has SHA-256 ${digest}, not the ${artifact.sha256} the manifest names`);
      continue;
    }
    verified.push({ artifact, bytes });
  }
  return { verified, errors };
}
