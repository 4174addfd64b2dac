// What the hub keeps of the revisions it read, so that the next one costs what changed in it:
// each file's parse by content hash (the loader does not parse an unchanged file again), each
// document's checks (the validator does not check an unchanged document again), and which
// objects each file held at the last revision applied (the apply reads and writes only the
// objects of the files that changed, and deletes what those files no longer hold; of a changed
// file, an object written exactly as at the last revision applied, at the same line, is not read
// from the store either). The rules that span objects run over what changed (CheckMemo's
// CrossMemo); an unchanged object is not touched otherwise.

import { API_VERSION, CheckMemo, type ManifestObject } from "../api/index.ts";
import { deepEqual } from "../lib/store/index.ts";
import type { CachedFile, FileCache } from "./loader.ts";
import { repositoryArtifacts } from "./repository-artifacts.ts";
import type { StoreKey } from "./snapshot-apply.ts";

interface AppliedFile {
  digest: string;
  /** The objects the store got from this file. */
  objects: ManifestObject[];
  /** Those of them naming a repository artifact (checked again with every revision). */
  owners: ManifestObject[];
}

const ownsArtifacts = (object: ManifestObject) => repositoryArtifacts([object]).length > 0;

/** The part of a revision to apply after the last one: see applySnapshotChanges. */
export interface RevisionChanges {
  /** To create or update. */
  objects: ManifestObject[];
  /** Of the changed files, written as when last applied: the store holds them already. */
  same: ManifestObject[];
  removed: StoreKey[];
  unchanged: number;
  /** The files read, by path and digest (committed once the revision is applied). */
  files: ReadonlyMap<string, string>;
  /** Every object of the revision that names a repository artifact. */
  artifactOwners: ManifestObject[];
}

function keyOf(key: StoreKey): string {
  return `${key.kind}\0${key.namespace ?? ""}\0${key.name}`;
}

function storeKey(object: ManifestObject): StoreKey {
  return { kind: object.kind, namespace: object.namespace, name: object.name };
}

/**
 * A file is kept only when every document in it is an object of ours other than a Bundle: a
 * Bundle's object is completed from other files' documents, and those documents are claimed by
 * it, so files with either are read again each time.
 */
function keepable(parsed: CachedFile): boolean {
  if (parsed.result.diagnostics.length > 0) return false;
  return parsed.result.documents.every((d) => {
    const value = d.value as { apiVersion?: unknown; kind?: unknown } | null;
    return (
      typeof value === "object" &&
      value !== null &&
      value.apiVersion === API_VERSION &&
      value.kind !== "Bundle"
    );
  });
}

export class RevisionMemo implements FileCache {
  readonly checks = new CheckMemo();
  /** Parses of the files of the last load, by path. */
  #parses = new Map<string, { digest: string; parsed: CachedFile }>();
  /** The files of the load in progress, by path: their digest. */
  #seen = new Map<string, string>();
  /** The files of the last revision applied; undefined before the first (then all is applied). */
  #applied: Map<string, AppliedFile> | undefined;

  get(file: string, digest: string): CachedFile | undefined {
    this.#seen.set(file, digest);
    const kept = this.#parses.get(file);
    return kept?.digest === digest ? kept.parsed : undefined;
  }

  set(file: string, digest: string, parsed: CachedFile): void {
    this.#seen.set(file, digest);
    if (keepable(parsed)) this.#parses.set(file, { digest, parsed });
    else this.#parses.delete(file);
  }

  /** Before a load. */
  begin(): void {
    this.#seen = new Map();
  }

  /** After a load: the parses of files it did not read are dropped (memory stays one revision's). */
  #prune(): void {
    for (const file of this.#parses.keys()) if (!this.#seen.has(file)) this.#parses.delete(file);
  }

  /** After a load whose revision was refused. */
  refused(): void {
    this.#prune();
  }

  /**
   * After a load whose revision is valid: what to apply, or undefined when the whole revision
   * must be (none applied yet). `objects` in file order (as the validator returns them).
   */
  changes(objects: readonly ManifestObject[]): RevisionChanges | undefined {
    this.#prune();
    const files = this.#seen;
    const applied = this.#applied;
    if (!applied) return undefined;
    // Changed: new bytes, or a file whose parse is not kept (read again each time, so compared
    // object by object).
    const changedFiles = new Set<string>();
    for (const [file, digest] of files) {
      if (applied.get(file)?.digest !== digest || !this.#parses.has(file)) changedFiles.add(file);
    }
    for (const file of applied.keys()) if (!files.has(file)) changedFiles.add(file);
    // What the changed files held when last applied, by store key: an object written the same at
    // the same place is what the store holds already (as an unchanged file's objects are).
    const before = new Map<string, ManifestObject>();
    for (const file of changedFiles) {
      for (const object of applied.get(file)?.objects ?? []) before.set(keyOf(storeKey(object)), object);
    }
    const changed: ManifestObject[] = [];
    const same: ManifestObject[] = [];
    // Files with a Bundle are never kept, so a Bundle is always among the changed files' objects.
    const ofChanged = [...changedFiles].flatMap((file) => objectsOf(objects, file));
    let unchanged = objects.length - ofChanged.length;
    for (const object of ofChanged) {
      const last = before.get(keyOf(storeKey(object)));
      if (last && sameAsApplied(last, object)) {
        same.push(object);
        unchanged++;
      } else changed.push(object);
    }
    // An object a changed file held can only have moved to another changed file (an unchanged
    // one holding it too would have been a duplicate name before).
    const still = new Set([...changed, ...same].map((o) => keyOf(storeKey(o))));
    const removed: StoreKey[] = [];
    for (const file of changedFiles) {
      for (const object of applied.get(file)?.objects ?? []) {
        const key = storeKey(object);
        if (!still.has(keyOf(key))) removed.push(key);
      }
    }
    const artifactOwners = ofChanged.filter(ownsArtifacts);
    for (const file of files.keys()) {
      if (!changedFiles.has(file)) artifactOwners.push(...(applied.get(file)?.owners ?? []));
    }
    return { objects: changed, same, removed, unchanged, files: new Map(files), artifactOwners };
  }

  /** The revision was applied: `changes` (or, for a whole revision, every object) is what the store holds. */
  applied(changes: RevisionChanges | undefined, objects: readonly ManifestObject[]): void {
    const byFile = new Map<string, ManifestObject[]>();
    const add = (object: ManifestObject) => {
      const held = byFile.get(object.document.file);
      if (held) held.push(object);
      else byFile.set(object.document.file, [object]);
    };
    if (!changes || !this.#applied) {
      for (const object of objects) add(object);
      this.#applied = new Map(
        [...this.#seen].map(([file, digest]) => [file, appliedFile(digest, byFile.get(file))]),
      );
      return;
    }
    for (const object of changes.objects) add(object);
    for (const object of changes.same) add(object);
    const next = this.#applied;
    for (const file of next.keys()) if (!changes.files.has(file)) next.delete(file);
    for (const [file, digest] of changes.files) {
      const before = next.get(file);
      if (before?.digest === digest && this.#parses.has(file)) continue;
      next.set(file, appliedFile(digest, byFile.get(file)));
    }
  }
}

function appliedFile(digest: string, objects: ManifestObject[] = []): AppliedFile {
  return { digest, objects, owners: objects.filter(ownsArtifacts) };
}

/**
 * Whether the store holds `object` as applied from `last`: the same document content at the same
 * file and line (the source-file annotation). A Bundle is completed from other files: never.
 */
function sameAsApplied(last: ManifestObject, object: ManifestObject): boolean {
  return (
    object.kind !== "Bundle" &&
    last.document.file === object.document.file &&
    last.document.start.line === object.document.start.line &&
    deepEqual(last.object, object.object)
  );
}

/** The objects of `file` among `objects` in file order: found by binary search, not a scan. */
function objectsOf(objects: readonly ManifestObject[], file: string): ManifestObject[] {
  let low = 0;
  let high = objects.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if ((objects[mid] as ManifestObject).document.file < file) low = mid + 1;
    else high = mid;
  }
  const found: ManifestObject[] = [];
  for (let i = low; i < objects.length && objects[i]?.document.file === file; i++)
    found.push(objects[i] as ManifestObject);
  return found;
}
