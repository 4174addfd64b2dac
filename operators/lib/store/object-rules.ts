// The Kubernetes write rules as pure functions over plain objects: what create, update,
// updateStatus and delete do to an object. Backends supply uid, resourceVersion and time.
// Nothing here mutates its arguments, but results share sub-objects with them (copying is the
// backend's job, once, when it takes the caller's object): treat inputs as frozen afterwards.

import { describe, InvalidError } from "./errors.ts";
import { isValidLabelKey, isValidLabelValue } from "./label-selector.ts";
import type { KubeObject, ObjectMeta, OwnerReference } from "./types.ts";

/** Finalizer a Foreground deletion holds until the object's dependents are gone. */
export const foregroundFinalizer = "foregroundDeletion";

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((v, i) => deepEqual(v, b[i]));
  }
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  const ka = Object.keys(ra).filter((k) => ra[k] !== undefined);
  const kb = Object.keys(rb).filter((k) => rb[k] !== undefined);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(rb, k) && deepEqual(ra[k], rb[k]));
}

/** Kubernetes timestamps are RFC 3339 in whole seconds. */
export function timestamp(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

function checkStringMap(value: unknown, field: string, where: string, labels: boolean): void {
  if (value === undefined) return;
  if (!isRecord(value)) throw new InvalidError(`${where}: metadata.${field} must be a map of strings`);
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== "string") throw new InvalidError(`${where}: metadata.${field}["${k}"] must be a string`);
    if (labels && !isValidLabelKey(k))
      throw new InvalidError(`${where}: metadata.labels key "${k}" is not valid`);
    if (labels && !isValidLabelValue(v)) {
      throw new InvalidError(`${where}: metadata.labels["${k}"] = "${v}" is not a valid label value`);
    }
  }
}

/** Checks the shape the store relies on (not the kind's schema: that is validated upstream). */
export function checkObject(object: unknown, forCreate: boolean): asserts object is KubeObject {
  if (!isRecord(object)) throw new InvalidError("object must be a JSON object");
  const { apiVersion, kind, metadata } = object;
  if (typeof kind !== "string" || kind === "") throw new InvalidError("object has no kind");
  if (typeof apiVersion !== "string" || apiVersion === "") throw new InvalidError(`${kind}: no apiVersion`);
  if (!isRecord(metadata)) throw new InvalidError(`${kind}: no metadata`);
  const { name, namespace, generateName } = metadata;
  const hasName = typeof name === "string" && name !== "";
  if (!hasName && !(forCreate && typeof generateName === "string" && generateName !== "")) {
    throw new InvalidError(`${kind}: metadata.name is required`);
  }
  if (namespace !== undefined && typeof namespace !== "string") {
    throw new InvalidError(`${kind}: metadata.namespace must be a string`);
  }
  const where = describe(kind, namespace as string | undefined, hasName ? (name as string) : "(generated)");
  for (const [field, value] of [
    ["name", name],
    ["namespace", namespace],
  ] as const) {
    if (typeof value === "string" && (value.length > 253 || value.includes("/"))) {
      throw new InvalidError(`${where}: metadata.${field} must be at most 253 characters without "/"`);
    }
  }
  checkStringMap(metadata.labels, "labels", where, true);
  checkStringMap(metadata.annotations, "annotations", where, false);
  const { finalizers, ownerReferences } = metadata;
  if (
    finalizers !== undefined &&
    (!Array.isArray(finalizers) || !finalizers.every((f) => typeof f === "string"))
  ) {
    throw new InvalidError(`${where}: metadata.finalizers must be a list of strings`);
  }
  if (ownerReferences !== undefined) {
    if (!Array.isArray(ownerReferences))
      throw new InvalidError(`${where}: metadata.ownerReferences must be a list`);
    for (const [i, ref] of ownerReferences.entries()) {
      if (
        !isRecord(ref) ||
        !["apiVersion", "kind", "name", "uid"].every((k) => typeof ref[k] === "string" && ref[k])
      ) {
        throw new InvalidError(
          `${where}: metadata.ownerReferences[${i}] needs apiVersion, kind, name and uid`,
        );
      }
    }
  }
  if (forCreate && metadata.resourceVersion !== undefined && metadata.resourceVersion !== "") {
    throw new InvalidError(`${where}: metadata.resourceVersion must not be set on create`);
  }
}

/** A copy whose top level and metadata may be changed without touching the original. */
function shallow(object: KubeObject): KubeObject {
  return { ...object, metadata: { ...object.metadata } };
}

export function namespaceOf(object: KubeObject): string {
  return object.metadata.namespace ?? "";
}

function cleanMeta(meta: ObjectMeta): ObjectMeta {
  const out: ObjectMeta = { ...meta };
  if (!out.namespace) delete out.namespace;
  for (const key of ["labels", "annotations"] as const) {
    if (out[key] && Object.keys(out[key]).length === 0) delete out[key];
  }
  for (const key of ["finalizers", "ownerReferences"] as const) {
    if (out[key] && out[key].length === 0) delete out[key];
  }
  return out;
}

export interface Stamp {
  uid: string;
  resourceVersion: number;
  now: number;
  /** 5 random characters for generateName. */
  suffix: string;
}

/** The object as create stores it. */
export function created(input: KubeObject, stamp: Stamp): KubeObject {
  checkObject(input, true);
  const meta: ObjectMeta = { ...input.metadata };
  if (!meta.name) meta.name = `${meta.generateName}${stamp.suffix}`;
  delete meta.deletionTimestamp;
  meta.uid = stamp.uid;
  meta.resourceVersion = String(stamp.resourceVersion);
  meta.generation = 1;
  meta.creationTimestamp = timestamp(stamp.now);
  if (meta.finalizers) meta.finalizers = [...new Set(meta.finalizers)];
  const out: KubeObject = { ...input, metadata: cleanMeta(meta) };
  if (out.status === undefined) delete out.status;
  if (out.spec === undefined) delete out.spec;
  return out;
}

/** Keeps what the server owns; the caller's copy cannot change identity or lifecycle fields. */
function serverOwned(existing: KubeObject, meta: ObjectMeta): ObjectMeta {
  const out: ObjectMeta = { ...meta, name: existing.metadata.name };
  const e = existing.metadata;
  for (const key of ["namespace", "uid", "creationTimestamp", "deletionTimestamp", "generation"] as const) {
    copyField(out, e, key);
  }
  delete out.generateName;
  if (e.generateName) out.generateName = e.generateName;
  return out;
}

/** `to[key] = from[key]`, or no `key` at all where `from` has none. */
function copyField<K extends keyof ObjectMeta>(to: ObjectMeta, from: ObjectMeta, key: K): void {
  if (from[key] === undefined) delete to[key];
  else to[key] = from[key];
}

function checkNewFinalizers(existing: KubeObject, next: ObjectMeta): void {
  if (!existing.metadata.deletionTimestamp) return;
  const before = new Set(existing.metadata.finalizers ?? []);
  const added = (next.finalizers ?? []).filter((f) => !before.has(f));
  if (added.length > 0) {
    const { kind, metadata } = existing;
    throw new InvalidError(
      `${describe(kind, metadata.namespace, metadata.name)} is being deleted: no new finalizers can be added (${added.join(", ")})`,
    );
  }
}

export interface Outcome {
  object: KubeObject;
  /** false: nothing but possibly resourceVersion would change, so nothing is written. */
  changed: boolean;
  /** The update removed the last finalizer of an object being deleted: it goes now. */
  removed: boolean;
}

function outcome(existing: KubeObject, next: KubeObject, resourceVersion: number): Outcome {
  next.metadata = cleanMeta(next.metadata);
  next.metadata.resourceVersion = existing.metadata.resourceVersion;
  if (deepEqual(next, existing)) return { object: existing, changed: false, removed: false };
  next.metadata.resourceVersion = String(resourceVersion);
  const removed = Boolean(next.metadata.deletionTimestamp) && (next.metadata.finalizers ?? []).length === 0;
  return { object: next, changed: true, removed };
}

/** update: metadata and spec from the input, status and server fields from the stored object. */
export function updated(existing: KubeObject, input: KubeObject, resourceVersion: number): Outcome {
  checkObject(input, false);
  const meta = serverOwned(existing, input.metadata);
  if (meta.finalizers) meta.finalizers = [...new Set(meta.finalizers)];
  checkNewFinalizers(existing, meta);
  const next: KubeObject = { ...input, metadata: meta };
  delete next.status;
  if (existing.status !== undefined) next.status = existing.status;
  if (next.spec === undefined) delete next.spec;
  if (!deepEqual(existing.spec, next.spec)) meta.generation = (existing.metadata.generation ?? 0) + 1;
  return outcome(existing, next, resourceVersion);
}

/** updateStatus: the stored object with the input's status. */
export function statusUpdated(existing: KubeObject, input: KubeObject, resourceVersion: number): Outcome {
  checkObject(input, false);
  const next: KubeObject = shallow(existing);
  delete next.status;
  if (input.status !== undefined) next.status = input.status;
  return outcome(existing, next, resourceVersion);
}

/**
 * apply: spec, labels and annotations from the input; everything else (status, finalizers,
 * ownerReferences, identity) stays as stored, so an apply built from an older read cannot undo
 * a controller's finalizer.
 */
export function applied(existing: KubeObject, input: KubeObject, resourceVersion: number): Outcome {
  checkObject(input, false);
  const meta: ObjectMeta = { ...existing.metadata };
  const given = input.metadata;
  for (const key of ["labels", "annotations"] as const) {
    if (given[key]) meta[key] = given[key];
    else delete meta[key];
  }
  const merged: KubeObject = { ...input, metadata: meta };
  return updated(existing, merged, resourceVersion);
}

/** The object with deletionTimestamp set (and extra finalizers, for Foreground deletion). */
export function markedForDeletion(
  existing: KubeObject,
  now: number,
  resourceVersion: number,
  addFinalizers: string[] = [],
): KubeObject {
  const next = shallow(existing);
  next.metadata.deletionTimestamp ??= timestamp(now);
  const finalizers = [...new Set([...(next.metadata.finalizers ?? []), ...addFinalizers])];
  if (finalizers.length > 0) next.metadata.finalizers = finalizers;
  next.metadata.resourceVersion = String(resourceVersion);
  return next;
}

/** The object's last state as the DELETED event carries it. */
export function deletedState(existing: KubeObject, resourceVersion: number): KubeObject {
  const next = shallow(existing);
  next.metadata.resourceVersion = String(resourceVersion);
  return next;
}

export function withoutOwner(object: KubeObject, ownerUid: string, resourceVersion: number): KubeObject {
  const next = shallow(object);
  const refs = (next.metadata.ownerReferences ?? []).filter((r: OwnerReference) => r.uid !== ownerUid);
  if (refs.length > 0) next.metadata.ownerReferences = refs;
  else delete next.metadata.ownerReferences;
  next.metadata.resourceVersion = String(resourceVersion);
  return next;
}

export function withoutFinalizer(object: KubeObject, finalizer: string, resourceVersion: number): KubeObject {
  const next = shallow(object);
  const rest = (next.metadata.finalizers ?? []).filter((f) => f !== finalizer);
  if (rest.length > 0) next.metadata.finalizers = rest;
  else delete next.metadata.finalizers;
  next.metadata.resourceVersion = String(resourceVersion);
  return next;
}
