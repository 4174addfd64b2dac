// Raw tasks may name an artifact by its path in the repository (scripts/cartpole.mjs). One set of
// rules for the hub, which refuses a revision whose artifacts are wrong, and for plans, which
// must not be greener than the hub. The path's text follows api/artifact-url.ts (also what
// `rlark validate` checks); here the file itself: every component of the path, from the manifest
// folder's real path down, is a real folder or, last, a regular file. No symlink is followed, not
// even one that stays inside, so what is read is exactly what the path names, wherever the link
// sits (`node_modules/`, ignored folders). The checkout is read rather than git's objects because
// the plan also checks working trees that are not commits; the checkout is the hub's own, written
// once by git, so it cannot change between this check and the copy.
// A file that does not match is never hashed back to the author: its digest would let anyone who
// can push learn a hash of any file the path can reach, and then name it.
import { createHash } from "node:crypto";
import { constants } from "node:fs";
import { lstat, open, realpath } from "node:fs/promises";
import path from "node:path";
import { artifactSource, type Diagnostic, type ManifestObject } from "../api/index.ts";

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
  /** The checked file's real path. */
  file: string;
}

/** URLs with a scheme (https:, file:) are fetched by agents, not read here. */
export function isRepositoryPath(url: string): boolean {
  return artifactSource(url).kind === "repository";
}

export function repositoryArtifacts(objects: readonly ManifestObject[]): RepositoryArtifact[] {
  const found: RepositoryArtifact[] = [];
  const visit = (owner: ManifestObject, tasks: unknown, pointer: string) => {
    if (!Array.isArray(tasks)) return;
    tasks.forEach((task, i) => {
      const artifact = (task as { raw?: { artifact?: { url?: unknown; sha256?: unknown } } })?.raw?.artifact;
      if (typeof artifact?.url !== "string" || typeof artifact.sha256 !== "string") return;
      if (artifactSource(artifact.url).kind === "remote") return;
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
  const root = await realpath(manifestRoot);
  for (const artifact of repositoryArtifacts(objects)) {
    const checked = await checkArtifact(root, artifact);
    if ("file" in checked) {
      verified.push({ artifact, file: checked.file });
      continue;
    }
    const pos = artifact.owner.document.locate(artifact.pointer);
    errors.push({
      file: artifact.owner.document.file,
      line: pos.line,
      column: pos.column,
      kind: artifact.owner.kind,
      name: artifact.owner.name,
      path: artifact.pointer,
      rule: "source/artifact",
      message: checked.problem,
    });
  }
  return { verified, errors };
}

/** The file, when it is the one its digest names; else why it cannot be used. */
async function checkArtifact(
  root: string,
  artifact: RepositoryArtifact,
): Promise<{ file: string } | { problem: string }> {
  const source = artifactSource(artifact.url);
  if (source.kind !== "repository")
    return {
      problem: `artifact url ${source.kind === "invalid" ? source.reason : "is not a repository path"}`,
    };
  const name = JSON.stringify(artifact.url);
  const parts = source.path.split("/");
  for (let i = 1; i <= parts.length; i++) {
    const prefix = parts.slice(0, i).join("/");
    const info = await lstat(path.join(root, prefix)).catch(() => undefined);
    if (!info) return { problem: `artifact ${name} is not in the repository` };
    if (info.isSymbolicLink()) {
      return {
        problem:
          i === parts.length
            ? `artifact ${name} is a symlink; name the file itself`
            : `artifact ${name} goes through the symlink "${prefix}"; name the file by its real path`,
      };
    }
    if (i < parts.length ? !info.isDirectory() : !info.isFile())
      return { problem: `artifact ${name} is not a regular file in the repository` };
  }
  const file = path.join(root, source.path);
  const digest = await sha256Of(file).catch(() => undefined);
  if (digest === undefined) return { problem: `artifact ${name} cannot be read` };
  if (digest !== artifact.sha256) {
    return {
      problem: `artifact ${name} does not match the declared sha256; write the file's SHA-256 (sha256sum ${source.path})`,
    };
  }
  return { file };
}

/** Streamed, so a large artifact is never held in memory; O_NOFOLLOW: a link is never read. */
export async function sha256Of(file: string): Promise<string> {
  const handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  const hash = createHash("sha256");
  try {
    for await (const chunk of handle.createReadStream({ autoClose: false })) hash.update(chunk);
  } finally {
    await handle.close();
  }
  return hash.digest("hex");
}
