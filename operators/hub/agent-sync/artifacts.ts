// Raw tasks may name an artifact by its path in the repository (examples/scripts/cartpole.mjs).
// When a revision is applied, the hub copies each such file, checked against its SHA-256, into a
// content-addressed store; agents then fetch it by digest.
import { createHash } from "node:crypto";
import { mkdir, readFile, rename, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { Diagnostic, ManifestObject } from "../../api/validate/index.ts";

/** Kept under its own file name, so a `./name` command and the file's shebang work on the agent. */
export function artifactUrl(artifactDir: string, sha256: string, repositoryPath: string): string {
  return pathToFileURL(path.join(artifactDir, sha256, path.basename(repositoryPath))).href;
}

interface ArtifactRef {
  url: string;
  sha256: string;
  owner: ManifestObject;
  pointer: string;
}

function repositoryArtifacts(objects: readonly ManifestObject[]): ArtifactRef[] {
  const refs: ArtifactRef[] = [];
  const visitTasks = (owner: ManifestObject, tasks: unknown, pointer: string) => {
    if (!Array.isArray(tasks)) return;
    tasks.forEach((task, i) => {
      const artifact = (task as { raw?: { artifact?: { url?: unknown; sha256?: unknown } } })?.raw?.artifact;
      if (typeof artifact?.url !== "string" || typeof artifact.sha256 !== "string") return;
      if (/^[a-z][a-z0-9+.-]*:/i.test(artifact.url) || path.isAbsolute(artifact.url)) return;
      refs.push({
        url: artifact.url,
        sha256: artifact.sha256,
        owner,
        pointer: `${pointer}/${i}/raw/artifact/url`,
      });
    });
  };
  for (const object of objects) {
    const spec = object.object.spec as
      | { tasks?: unknown; jobs?: { template?: { tasks?: unknown } }[] }
      | undefined;
    if (object.kind === "Job") visitTasks(object, spec?.tasks, "/spec/tasks");
    if (object.kind === "Workflow") {
      spec?.jobs?.forEach((job, j) => {
        visitTasks(object, job.template?.tasks, `/spec/jobs/${j}/template/tasks`);
      });
    }
  }
  return refs;
}

/**
 * Copies the revision's repository artifacts into `artifactDir`. A missing file, a path that
 * leaves the manifest folder, or a digest that does not match refuses the revision, with the
 * place in the manifest that names it.
 */
export async function storeArtifacts(
  objects: readonly ManifestObject[],
  manifestRoot: string,
  artifactDir: string,
): Promise<Diagnostic[]> {
  const errors: Diagnostic[] = [];
  await mkdir(artifactDir, { recursive: true });
  for (const ref of repositoryArtifacts(objects)) {
    const fail = (message: string) => {
      const pos = ref.owner.document.locate(ref.pointer);
      errors.push({
        file: ref.owner.document.file,
        line: pos.line,
        column: pos.column,
        kind: ref.owner.kind,
        name: ref.owner.name,
        path: ref.pointer,
        rule: "source/artifact",
        message,
      });
    };
    const target = path.join(artifactDir, ref.sha256, path.basename(ref.url));
    if (
      await stat(target).then(
        () => true,
        () => false,
      )
    )
      continue;
    const file = path.resolve(manifestRoot, ref.url);
    if (!file.startsWith(manifestRoot + path.sep)) {
      fail(`artifact path "${ref.url}" leaves the manifest folder`);
      continue;
    }
    const bytes = await readFile(file).catch(() => undefined);
    if (!bytes) {
      fail(`artifact "${ref.url}" is not in the repository`);
      continue;
    }
    const digest = createHash("sha256").update(bytes).digest("hex");
    if (digest !== ref.sha256) {
      fail(`artifact "${ref.url}" has SHA-256 ${digest}, not the ${ref.sha256} the manifest names`);
      continue;
    }
    const partial = `${target}.partial-${process.pid}`;
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(partial, bytes, { mode: 0o755 });
    await rename(partial, target);
  }
  return errors;
}
