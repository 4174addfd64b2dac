// Each file's identity at a revision, from git's own object ids: what the hub compares between
// revisions instead of reading and hashing every file of a large repository's checkout.
import { createHash } from "node:crypto";
import type { SimpleGit } from "simple-git";

/** Output beyond this is not a manifest repository the hub can hold; the files are hashed instead. */
const MAX_LISTING_BYTES = 256 * 1024 * 1024;

/**
 * `git ls-tree -r` of `revision`: every regular file's path (relative to the tree's root, `/`
 * separated) → an identity that changes when the bytes checked out for it can: its blob id, and
 * the blob ids of every `.gitattributes` of the tree (their eol and filter settings shape what
 * checkout writes). Symbolic links and submodules are left out (a link is read through, so its
 * target's identity counts). Undefined when the listing is larger than any repository of
 * manifests (the caller then reads and hashes the files).
 */
export async function treeBlobs(git: SimpleGit, revision: string): Promise<Map<string, string> | undefined> {
  const listing = await git.raw(["ls-tree", "-r", "-z", "--full-tree", revision]);
  if (listing.length > MAX_LISTING_BYTES) return undefined;
  const blobs = new Map<string, string>();
  const attributes: string[] = [];
  // Each entry: "<mode> <type> <object>\t<path>\0".
  for (const entry of listing.split("\0")) {
    const tab = entry.indexOf("\t");
    if (tab === -1) continue;
    const [mode, type, object] = entry.slice(0, tab).split(" ");
    const file = entry.slice(tab + 1);
    if (type !== "blob" || object === undefined) continue;
    if (file === ".gitattributes" || file.endsWith("/.gitattributes")) attributes.push(`${file}\0${object}`);
    if (mode === "100644" || mode === "100755") blobs.set(file, object);
  }
  if (attributes.length > 0) {
    const suffix = createHash("sha256").update(attributes.sort().join("\0")).digest("hex").slice(0, 16);
    for (const [file, object] of blobs) blobs.set(file, `${object}+${suffix}`);
  }
  return blobs;
}
