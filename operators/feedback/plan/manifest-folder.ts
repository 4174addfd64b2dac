// Repository artifacts are named relative to the hub's manifest folder (`--path`). A plan of one
// folder takes that folder; a plan of several paths takes the nearest folder holding them all,
// so `rlark plan manifests/jobs manifests/domains` reads artifacts where a hub on
// `--path manifests` does, not from wherever the command was run.
import { stat } from "node:fs/promises";
import path from "node:path";

export async function manifestFolder(roots: readonly string[]): Promise<string> {
  const folders = await Promise.all(
    roots.map(async (root) =>
      (await stat(root).catch(() => undefined))?.isFile() ? path.dirname(root) : root,
    ),
  );
  const [first = [], ...rest] = folders.map((f) => f.split(path.sep));
  let length = first.length;
  for (const parts of rest) {
    let same = 0;
    while (same < Math.min(length, parts.length) && parts[same] === first[same]) same++;
    length = same;
  }
  return first.slice(0, length).join(path.sep) || path.sep;
}
