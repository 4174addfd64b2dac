// The hub refuses a revision whose repository artifacts are missing, leave the manifest folder
// or do not match their SHA-256 (operators/hub/agent-sync/artifacts.ts). The plan checks the same
// rules, read-only, so a green plan is not refused on merge. Symlinks are not followed: a pull
// request's file is hashed, never a file of the hub's it points to.
import { createHash } from "node:crypto";
import { lstat, readFile } from "node:fs/promises";
import path from "node:path";
import type { Diagnostic, ManifestObject } from "../../api/validate/index.ts";

interface ArtifactRef {
  url: string;
  sha256: string;
  owner: ManifestObject;
  pointer: string;
}

function artifactRefs(objects: readonly ManifestObject[]): ArtifactRef[] {
  const refs: ArtifactRef[] = [];
  const visit = (owner: ManifestObject, tasks: unknown, pointer: string) => {
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
  return refs;
}

export async function checkArtifacts(
  objects: readonly ManifestObject[],
  manifestRoot: string,
): Promise<Diagnostic[]> {
  const errors: Diagnostic[] = [];
  for (const ref of artifactRefs(objects)) {
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
    const file = path.resolve(manifestRoot, ref.url);
    if (!file.startsWith(manifestRoot + path.sep)) {
      fail(`artifact path "${ref.url}" leaves the manifest folder`);
      continue;
    }
    const info = await lstat(file).catch(() => undefined);
    if (!info?.isFile()) {
      fail(
        info?.isSymbolicLink()
          ? `artifact "${ref.url}" is a symlink; name the file itself`
          : `artifact "${ref.url}" is not in the repository`,
      );
      continue;
    }
    const digest = createHash("sha256")
      .update(await readFile(file))
      .digest("hex");
    if (digest !== ref.sha256) {
      fail(`artifact "${ref.url}" has SHA-256 ${digest}, not the ${ref.sha256} the manifest names`);
    }
  }
  return errors;
}
