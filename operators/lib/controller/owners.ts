// Watches that enqueue owners: a change to a Task queues the Job its ownerReferences name.

import { objectKey } from "../store/index.ts";
import type { MapToKeys, WatchSpec } from "./types.ts";

export interface OwnerOptions {
  /**
   * The owner kind is namespaced (then the owner lives in the dependent's namespace, as
   * Kubernetes requires). Default false: cluster-scoped owners such as Job, Workflow, Domain.
   */
  ownerNamespaced?: boolean;
  /** Only the reference marked `controller: true`. Default false: every reference of the kind. */
  controllerOnly?: boolean;
}

/** mapToKeys for dependents: the keys of their owners of `ownerKind`. */
export function ownerKeys(ownerKind: string, options: OwnerOptions = {}): MapToKeys {
  return (object) => {
    const keys: string[] = [];
    for (const ref of object.metadata.ownerReferences ?? []) {
      if (ref.kind !== ownerKind) continue;
      if (options.controllerOnly && !ref.controller) continue;
      keys.push(objectKey(options.ownerNamespaced ? object.metadata.namespace : undefined, ref.name));
    }
    return keys;
  };
}

/** A watch on `kind` that queues the owning `ownerKind` objects. */
export function watchOwned(kind: string, ownerKind: string, options: OwnerOptions = {}): WatchSpec {
  return { kind, mapToKeys: ownerKeys(ownerKind, options) };
}
