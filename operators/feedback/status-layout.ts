// Where a status file lives on the status branch. A document is named by its path
// (`status/<kind>/[<namespace>/]<name>.yaml`, statusDocumentPath); the layout says where that file
// is stored. "flat" stores it at that path: 100,000 Jobs make one directory of 100,000 entries,
// and git rewrites that whole tree object (~4.5 MB) on every commit that touches one of them.
// "sharded" puts each file one directory deeper, in a directory named by the first two hex digits
// of the SHA-1 of its name: 256 directories per folder, so a commit rewrites a few small trees.
// docs/benchmarks/status-branch.md has the figures that chose it.
import { createHash } from "node:crypto";

export type StatusBranchLayout = "flat" | "sharded";

const SHARD = /^[0-9a-f]{2}$/;

/** The two hex digits a file named `<name>.yaml` is sharded by: `printf %s <name> | sha1sum | cut -c1-2`. */
export function statusShard(name: string): string {
  return createHash("sha1").update(name).digest("hex").slice(0, 2);
}

/** Where the status document `path` (`status/<kind>/[<namespace>/]<name>.yaml`) is stored on the branch. */
export function statusBranchPath(path: string, layout: StatusBranchLayout = "sharded"): string {
  if (layout === "flat") return path;
  const slash = path.lastIndexOf("/");
  const file = path.slice(slash + 1);
  return `${path.slice(0, slash)}/${statusShard(file.replace(/\.yaml$/, ""))}/${file}`;
}

/**
 * The document path a file on the branch holds, whichever layout wrote it: a file whose directory is
 * its own shard is sharded; any other is where the flat layout put it.
 */
export function documentPathOnBranch(branchPath: string): string {
  const parts = branchPath.split("/");
  const file = parts.at(-1) ?? "";
  const directory = parts.at(-2) ?? "";
  if (parts.length >= 4 && SHARD.test(directory) && statusShard(file.replace(/\.yaml$/, "")) === directory)
    return [...parts.slice(0, -2), file].join("/");
  return branchPath;
}
