// Applies one validated git revision to the store: every object from git is created, updated or
// deleted in one transaction, so controllers never see half a revision.
import {
  kinds,
  MANAGED_BY_GIT,
  MANAGED_BY_LABEL,
  type ManifestObject,
  OVERLAY_KEYS_ANNOTATION,
  SOURCE_FILE_ANNOTATION,
  SOURCE_REVISION_ANNOTATION,
} from "../api/index.ts";
import { type KubeObject, kindKeyOf } from "../lib/kube-object.ts";
import type { BatchOp, Store } from "../lib/store/index.ts";
import { deepEqual } from "../lib/store/index.ts";

const GIT_KINDS = kinds.filter((k) => k.writtenBy === "git").map((k) => k.kind);
/** The source's own bookkeeping annotations. */
export const SOURCE_ANNOTATIONS: ReadonlySet<string> = new Set([
  SOURCE_REVISION_ANNOTATION,
  SOURCE_FILE_ANNOTATION,
  OVERLAY_KEYS_ANNOTATION,
]);

export interface SnapshotChanges {
  created: number;
  changed: number;
  deleted: number;
  unchanged: number;
  /** The plain Kubernetes objects inside Bundles (spec.objects), counted by kind and name. */
  bundleObjects: { created: number; changed: number; deleted: number };
}

type Labels = Record<string, string>;

/**
 * Brings the store in line with `objects` (one whole revision). Only objects labelled as the
 * source's are updated or deleted; agent-reported Nodes keep their status and observed labels,
 * and a Node overlay removed from git is stripped from its Node rather than deleting the Node.
 */
export async function applySnapshot(
  store: Store,
  objects: readonly ManifestObject[],
  revision: string,
): Promise<SnapshotChanges> {
  const changes: SnapshotChanges = {
    created: 0,
    changed: 0,
    deleted: 0,
    unchanged: 0,
    bundleObjects: { created: 0, changed: 0, deleted: 0 },
  };
  const existing = new Map<string, KubeObject>();
  for (const kind of GIT_KINDS) {
    for (const object of (await store.list(kind)).items) existing.set(kindKeyOf(object), object);
  }
  return applyAgainst(store, objects, revision, existing, existing.values(), changes);
}

/** Where an object of git is in the store. */
export interface StoreKey {
  kind: string;
  namespace: string | undefined;
  name: string;
}

/**
 * Applies part of a revision, the rest being unchanged since the last one applied: `objects` are
 * those of the files that changed (created or updated as applySnapshot would), `removed` the
 * objects those files held before and hold no more (deleted as applySnapshot would). Reads only
 * these objects from the store; `unchanged` counts the objects of the files that did not change.
 */
export async function applySnapshotChanges(
  store: Store,
  objects: readonly ManifestObject[],
  removed: readonly StoreKey[],
  revision: string,
  unchanged: number,
): Promise<SnapshotChanges> {
  const changes: SnapshotChanges = {
    created: 0,
    changed: 0,
    deleted: 0,
    unchanged,
    bundleObjects: { created: 0, changed: 0, deleted: 0 },
  };
  const existing = new Map<string, KubeObject>();
  const read = async (key: StoreKey) => {
    const object = await store.get(key.kind, key.namespace, key.name);
    if (object) existing.set(kindKeyOf(object), object);
    return object;
  };
  await Promise.all(objects.map((o) => read({ kind: o.kind, namespace: o.namespace, name: o.name })));
  const gone = (await Promise.all(removed.map(read))).filter((o): o is KubeObject => o !== undefined);
  return applyAgainst(store, objects, revision, existing, gone, changes);
}

/** Brings `existing` in line with `objects`; of `deletable`, what git does not declare any more goes. */
async function applyAgainst(
  store: Store,
  objects: readonly ManifestObject[],
  revision: string,
  existing: ReadonlyMap<string, KubeObject>,
  deletable: Iterable<KubeObject>,
  changes: SnapshotChanges,
): Promise<SnapshotChanges> {
  const ops: BatchOp[] = [];
  const desiredKeys = new Set<string>();

  for (const manifest of objects) {
    const desired = toStoreObject(manifest, revision);
    const key = kindKeyOf(desired);
    desiredKeys.add(key);
    const current = existing.get(key);
    if (manifest.kind === "Bundle") countBundleObjects(changes.bundleObjects, current, desired);
    if (!current) {
      ops.push({ op: "create", object: desired });
      changes.created++;
      continue;
    }
    const next = manifest.kind === "Node" ? mergeNodeOverlay(current, desired) : desired;
    if (sameContent(current, next)) {
      // Only the position in the file may have moved: keep the revision of the last real change.
      const file = next.metadata.annotations?.[SOURCE_FILE_ANNOTATION];
      if (current.metadata.annotations?.[SOURCE_FILE_ANNOTATION] === file) {
        changes.unchanged++;
        continue;
      }
      const revisionBefore = current.metadata.annotations?.[SOURCE_REVISION_ANNOTATION];
      if (revisionBefore) (next.metadata.annotations as Labels)[SOURCE_REVISION_ANNOTATION] = revisionBefore;
      changes.unchanged++;
    } else changes.changed++;
    ops.push({
      op: "apply",
      object: { ...next, metadata: { ...next.metadata, finalizers: current.metadata.finalizers } },
    });
  }

  for (const current of deletable) {
    const key = kindKeyOf(current);
    if (desiredKeys.has(key) || current.metadata.labels?.[MANAGED_BY_LABEL] !== MANAGED_BY_GIT) continue;
    if (current.metadata.deletionTimestamp) continue;
    if (current.kind === "Bundle") countBundleObjects(changes.bundleObjects, current, undefined);
    if (current.kind === "Node" && current.status !== undefined) {
      ops.push({ op: "apply", object: stripNodeOverlay(current) });
    } else {
      ops.push({
        op: "delete",
        kind: current.kind,
        namespace: current.metadata.namespace,
        name: current.metadata.name,
      });
    }
    changes.deleted++;
  }
  if (ops.length > 0) await store.applyBatch(ops);
  return changes;
}

/** A Bundle's objects by `Kind/name` (namespace is the Bundle's, one per kind and name). */
function bundleObjectsOf(bundle: KubeObject | undefined): Map<string, unknown> {
  const objects = (bundle?.spec as { objects?: KubeObject[] } | undefined)?.objects ?? [];
  return new Map(objects.map((o) => [`${o.kind}/${o.metadata?.name}`, o]));
}

/** Adds what one Bundle's change does to its objects: created, changed and deleted ones. */
function countBundleObjects(
  counts: SnapshotChanges["bundleObjects"],
  before: KubeObject | undefined,
  after: KubeObject | undefined,
): void {
  const old = bundleObjectsOf(before);
  const next = bundleObjectsOf(after);
  for (const [key, object] of next) {
    if (!old.has(key)) counts.created++;
    else if (!deepEqual(old.get(key), object)) counts.changed++;
  }
  for (const key of old.keys()) if (!next.has(key)) counts.deleted++;
}

function toStoreObject(manifest: ManifestObject, revision: string): KubeObject {
  const source = manifest.object as unknown as KubeObject;
  const metadata = source.metadata ?? { name: manifest.name };
  const document = manifest.document;
  return {
    apiVersion: source.apiVersion,
    kind: source.kind,
    metadata: {
      name: manifest.name,
      ...(manifest.namespace ? { namespace: manifest.namespace } : {}),
      labels: { ...(metadata.labels ?? {}), [MANAGED_BY_LABEL]: MANAGED_BY_GIT },
      annotations: {
        ...(metadata.annotations ?? {}),
        [SOURCE_REVISION_ANNOTATION]: revision,
        [SOURCE_FILE_ANNOTATION]: `${document.file}:${document.start.line}`,
      },
    },
    ...(source.spec === undefined ? {} : { spec: source.spec }),
  };
}

/** Compares what git controls, ignoring the source's own bookkeeping annotations. */
function sameContent(a: KubeObject, b: KubeObject): boolean {
  const strip = (annotations: Labels | undefined) =>
    Object.fromEntries(Object.entries(annotations ?? {}).filter(([k]) => !SOURCE_ANNOTATIONS.has(k)));
  return (
    deepEqual(a.spec ?? null, b.spec ?? null) &&
    deepEqual(a.metadata.labels ?? {}, b.metadata.labels ?? {}) &&
    deepEqual(strip(a.metadata.annotations), strip(b.metadata.annotations))
  );
}

export interface OverlayKeys {
  labels: string[];
  annotations: string[];
}

/** The keys git's overlay set on a Node; none when the annotation is missing or hand-edited. */
export function overlayKeys(object: KubeObject): OverlayKeys {
  try {
    const parsed = JSON.parse(
      object.metadata.annotations?.[OVERLAY_KEYS_ANNOTATION] ?? "{}",
    ) as Partial<OverlayKeys>;
    return { labels: parsed.labels ?? [], annotations: parsed.annotations ?? [] };
  } catch {
    return { labels: [], annotations: [] };
  }
}

/** Observed labels stay; the overlay's keys are set, and keys an earlier overlay set but this one drops go. */
function mergeNodeOverlay(current: KubeObject, desired: KubeObject): KubeObject {
  const before = overlayKeys(current);
  const merge = (observed: Labels | undefined, overlay: Labels | undefined, dropped: string[]) => {
    const out: Labels = { ...(observed ?? {}) };
    for (const key of dropped) delete out[key];
    return { ...out, ...(overlay ?? {}) };
  };
  const gitLabels = desired.metadata.labels ?? {};
  const gitAnnotations = Object.fromEntries(
    Object.entries(desired.metadata.annotations ?? {}).filter(([k]) => !SOURCE_ANNOTATIONS.has(k)),
  );
  const keys: OverlayKeys = {
    labels: Object.keys(gitLabels).sort(),
    annotations: Object.keys(gitAnnotations).sort(),
  };
  return {
    ...desired,
    metadata: {
      ...desired.metadata,
      labels: merge(current.metadata.labels, gitLabels, before.labels),
      annotations: {
        ...merge(current.metadata.annotations, desired.metadata.annotations, before.annotations),
        [OVERLAY_KEYS_ANNOTATION]: JSON.stringify(keys),
      },
    },
    spec: {
      ...((current.spec as object | undefined) ?? {}),
      ...((desired.spec as object | undefined) ?? {}),
    },
  };
}

function stripNodeOverlay(current: KubeObject): KubeObject {
  const keys = overlayKeys(current);
  const labels = { ...(current.metadata.labels ?? {}) };
  for (const key of [...keys.labels, MANAGED_BY_LABEL]) delete labels[key];
  const annotations = { ...(current.metadata.annotations ?? {}) };
  for (const key of [...keys.annotations, ...SOURCE_ANNOTATIONS]) delete annotations[key];
  const spec = { ...((current.spec as Record<string, unknown> | undefined) ?? {}) };
  delete spec.unschedulable;
  return { ...current, metadata: { ...current.metadata, labels, annotations }, spec };
}

/** The entries of `source` named in `names` (missing ones left out). */
export function pickKeys(
  source: Record<string, string> | undefined,
  names: readonly string[],
): Record<string, string> {
  return Object.fromEntries(
    names.filter((n) => source?.[n] !== undefined).map((n) => [n, source?.[n] as string]),
  );
}
