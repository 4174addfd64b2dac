// A release is the hub's per-cluster copy of a git object (AddonRelease of an Addon, BundleRelease
// of a Bundle) in agent-<cluster>, which the agent sync hands to that cluster's agent. Both
// controllers write and remove them the same way: labelled with their object's name, written only
// when the spec or labels changed, held by the cleanup finalizer until the agent reports its work
// undone (agent-sync releases it).
import {
  type AddonRelease,
  AGENT_CLEANUP_FINALIZER,
  type BundleRelease,
  namespaceFor,
} from "../api/index.ts";
import { deepEqual, isNotFound, type Store } from "../lib/store/index.ts";

type Release = AddonRelease | BundleRelease;

/** Deletes the release; one already gone is fine. */
export async function deleteRelease(store: Store, kind: Release["kind"], release: Release): Promise<void> {
  try {
    await store.delete(kind, release.metadata.namespace, release.metadata.name);
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}

/** Creates `name`'s release in `cluster`, or updates `existing` when its spec or labels differ. */
export async function writeRelease<R extends Release>(
  store: Store,
  kind: R["kind"],
  label: string,
  cluster: string,
  name: string,
  spec: R["spec"],
  existing: R | undefined,
): Promise<void> {
  const labels = { [label]: name };
  if (!existing) {
    await store.create({
      apiVersion: "rlinf.io/v1alpha1",
      kind,
      metadata: { name, namespace: namespaceFor(cluster), labels, finalizers: [AGENT_CLEANUP_FINALIZER] },
      spec,
    });
    return;
  }
  if (deepEqual(existing.spec, spec) && deepEqual(existing.metadata.labels ?? {}, labels)) return;
  await store.update({ ...existing, metadata: { ...existing.metadata, labels }, spec });
}
