// The store: Kubernetes object semantics over a pluggable backend.
//
//   const store = openSqliteStore({ dataDir: ".rlark" });      // <dataDir>/store.db
//   const job = await store.create({ apiVersion: "rlinf.io/v1alpha1", kind: "Job", metadata: { name: "train" }, spec });
//   job.spec = next; await store.update(job);                   // Conflict if someone wrote in between
//   await store.updateStatus({ ...job, status });               // status only
//   const { items, resourceVersion } = await store.list("Task", { labelSelector: "rlinf.io/job=train" });
//   const w = await store.watch("Task", { resourceVersion }, (e) => queue.add(keyOf(e.object)));
//   await store.applyBatch([{ op: "apply", object }, { op: "delete", kind, name }]); // all or nothing
//   await modify(store, "Job", "", "train", (j) => { j.status = next }, { status: true }); // retries Conflicts
//
// Everything above the store uses the `Store` interface only (no SQL), so a backend on a
// kube-apiserver (the same objects as CRDs) can replace SQLite. Errors are typed: match with
// isNotFound / isConflict / ... or on `error.code`; `error.status` is the HTTP status to answer.
// Semantics worth knowing:
// - resourceVersion is one global counter (a decimal string); a list's resourceVersion is the
//   counter when it was read; watch from it to miss nothing.
// - update ignores status, updateStatus ignores everything else; generation moves only with spec.
// - a write that changes nothing writes nothing (no new resourceVersion, no event).
// - delete with finalizers sets deletionTimestamp; the object goes when an update removes the
//   last finalizer. Dependents (ownerReferences → uid) are collected when the owner goes.
// - watches deliver in resourceVersion order, one event at a time per watch, after commit.
// - SQLite: a write resolves once it is durable (WAL synced off the event loop); see
//   docs/adr/0001-store.md. One process owns a data dir.

export {
  AlreadyExistsError,
  ConflictError,
  type ErrorSubject,
  ExpiredError,
  InvalidError,
  isAlreadyExists,
  isConflict,
  isExpired,
  isInvalid,
  isNotFound,
  isStoreError,
  NotFoundError,
  StoreError,
  type StoreErrorCode,
} from "./errors.ts";
export { type KeepWatchingOptions, type KeptWatch, keepWatching } from "./keep-watching.ts";
export { keyOf, objectKey, parseKey } from "./keys.ts";
export {
  type KubernetesResource,
  KubernetesStore,
  type KubernetesStoreOptions,
  openKubernetesStore,
} from "./kubernetes-store.ts";
export {
  compileLabelSelector,
  everything,
  formatSelector,
  isValidLabelKey,
  isValidLabelValue,
  type LabelSelector,
  type LabelSelectorRequirement,
  matches,
  parseSelector,
  type Requirement,
  type Selector,
  type SelectorOperator,
  toSelector,
} from "./label-selector.ts";
export { type ModifyOptions, modify } from "./modify.ts";
export { deepEqual, foregroundFinalizer } from "./object-rules.ts";
export { openSqliteStore, SqliteStore, type SqliteStoreOptions } from "./sqlite-store.ts";
export type {
  BatchOp,
  DeleteOptions,
  KubeObject,
  ListOptions,
  ListPosition,
  ListResult,
  ObjectMeta,
  OwnerReference,
  PropagationPolicy,
  SelectorInput,
  Store,
  Watch,
  WatchEvent,
  WatchEventType,
  WatchHandler,
  WatchOptions,
} from "./types.ts";
