// The store's types: watches, lists and the store interface, over the object shape every process
// shares (../kube-object.ts).

import type { KubeObject } from "../kube-object.ts";
import type { LabelSelector } from "./label-selector.ts";

export type { KubeObject, ObjectMeta, OwnerReference } from "../kube-object.ts";

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED";

export interface WatchEvent<T extends KubeObject = KubeObject> {
  type: WatchEventType;
  /** The object after the change; for DELETED its last state (with the deletion's resourceVersion). */
  object: T;
}

/** A label selector as Kubernetes accepts it: `a=b,c!=d,e in (x,y),!f,g` or the object form. */
export type SelectorInput = string | LabelSelector;

export interface ListOptions {
  /** Only this namespace; absent means every namespace. Use "" for cluster-scoped objects only. */
  namespace?: string;
  labelSelector?: SelectorInput;
  /**
   * Only objects after this one in the list's order (namespace, then name; exclusive): where a
   * page left off. The object itself need not exist any more.
   */
  after?: ListPosition;
  /** At most this many items, the first in the list's order (after `after`). */
  limit?: number;
}

/** A place in a list: a namespace ("" for cluster-scoped objects) and a name. */
export interface ListPosition {
  namespace: string;
  name: string;
}

export interface ListResult<T extends KubeObject = KubeObject> {
  /** Sorted by namespace, then name. */
  items: T[];
  /** The store's resourceVersion when the list was read: watch from here to miss nothing. */
  resourceVersion: string;
}

export interface WatchOptions extends ListOptions {
  /**
   * Resume after this resourceVersion: every change after it is delivered, in order.
   * Absent or "0": the current state is delivered first as ADDED events, then every change.
   * Too old (the event log was compacted past it) → the returned promise rejects with ExpiredError.
   */
  resourceVersion?: string;
}

export type WatchHandler<T extends KubeObject = KubeObject> = (event: WatchEvent<T>) => void | Promise<void>;

export interface Watch {
  /** Stop delivering events. Idempotent; events not yet delivered are dropped. */
  stop(): void;
  /**
   * Resolves when the watch ends: `undefined` after stop(), or the error that ended it (the handler
   * threw, or a backend lost the stream, e.g. ExpiredError). The client then relists and watches again.
   */
  readonly closed: Promise<Error | undefined>;
}

/**
 * How dependents (objects whose ownerReferences name the deleted object's uid) are treated:
 * Background (default): the object goes at once, dependents are deleted when it is gone (a dependent
 *   that still has another live owner only loses the reference).
 * Foreground: the object stays (deletionTimestamp + finalizer "foregroundDeletion") until its
 *   dependents are gone, then goes.
 * Orphan: dependents lose their reference to the object and stay.
 */
export type PropagationPolicy = "Background" | "Foreground" | "Orphan";

export interface DeleteOptions {
  propagation?: PropagationPolicy;
  /** Refuse (Conflict) unless the object still has this uid / resourceVersion. */
  preconditions?: { uid?: string; resourceVersion?: string };
}

/**
 * One operation of an atomic batch. `apply` creates the object (as given) or, when it exists,
 * replaces its spec, labels and annotations without a resourceVersion check, keeping uid,
 * status, finalizers, ownerReferences and deletionTimestamp: the git source's upsert, safe
 * against a controller's concurrent finalizer or status write.
 */
export type BatchOp =
  | { op: "create"; object: KubeObject }
  | { op: "update"; object: KubeObject }
  | { op: "updateStatus"; object: KubeObject }
  | { op: "apply"; object: KubeObject }
  | { op: "delete"; kind: string; namespace?: string; name: string; options?: DeleteOptions };

/**
 * The object store: Kubernetes object semantics, backend-neutral (no SQL above this line).
 *
 * Every write returns the object as stored. Writes fail with the typed errors of ./errors.ts
 * (NotFound, AlreadyExists, Conflict, Invalid); watches resumed from a compacted
 * resourceVersion fail with Expired. `namespace` "" (or absent) means cluster-scoped.
 * Objects handed in are never kept; objects handed out are the caller's to mutate.
 */
export interface Store {
  /** The object, or undefined when there is none. */
  get<T extends KubeObject = KubeObject>(
    kind: string,
    namespace: string | undefined,
    name: string,
  ): Promise<T | undefined>;
  list<T extends KubeObject = KubeObject>(kind: string, options?: ListOptions): Promise<ListResult<T>>;
  /**
   * Assigns uid, resourceVersion, generation 1 and creationTimestamp. `status` is kept as given.
   * A set resourceVersion is Invalid; an existing kind/namespace/name is AlreadyExists.
   */
  create<T extends KubeObject>(object: T): Promise<T & KubeObject>;
  /**
   * Replaces metadata (labels, annotations, finalizers, ownerReferences) and spec; status is ignored.
   * With metadata.resourceVersion set, a stale one is a Conflict; without it the update is unconditional.
   * generation is bumped only when spec changed. An update that changes nothing writes nothing.
   * Removing the last finalizer of an object with a deletionTimestamp deletes it.
   */
  update<T extends KubeObject>(object: T): Promise<T & KubeObject>;
  /** Replaces status only; the same resourceVersion rule as update. */
  updateStatus<T extends KubeObject>(object: T): Promise<T & KubeObject>;
  /**
   * Deletes now, or—when the object has finalizers—sets deletionTimestamp and keeps it until an
   * update removes the last finalizer. Returns the object's last state. Missing → NotFound.
   */
  delete(
    kind: string,
    namespace: string | undefined,
    name: string,
    options?: DeleteOptions,
  ): Promise<KubeObject>;
  /** All operations in one transaction: all applied or (on the first error) none. One event burst after. */
  applyBatch(ops: readonly BatchOp[]): Promise<KubeObject[]>;
  watch<T extends KubeObject = KubeObject>(
    kind: string,
    options: WatchOptions,
    handler: WatchHandler<T>,
  ): Promise<Watch>;
  /** Number of objects per kind (for the store-size metric). */
  countByKind(): Promise<Record<string, number>>;
  /** The current resourceVersion (the highest ever assigned). */
  resourceVersion(): Promise<string>;
  /** Stops every watch and releases the backend. */
  close(): Promise<void>;
}
