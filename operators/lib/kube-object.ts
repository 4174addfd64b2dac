// The Kubernetes object shape every process shares: the store keeps it, the tunnel carries it, the
// per-kind types generated from schemas/ narrow `spec` and `status`. And the one key that names an
// object across kinds, `kind/namespace/name`.
import type { ObjectMeta as ManifestMeta } from "./object-meta.ts";

export type { OwnerReference } from "./object-meta.ts";

/**
 * The manifest's metadata (generated from schemas/common.schema.json into ./object-meta.ts, the
 * one source of this shape) plus what only a create request to the store carries.
 */
export interface ObjectMeta extends ManifestMeta {
  /** Set by the store on create: `name` = generateName + 5 random characters. */
  generateName?: string;
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec?: unknown;
  status?: unknown;
}

/** What names one object across kinds: a delete on the wire, a key in a desired set. */
export interface ObjectRef {
  apiVersion?: string;
  kind: string;
  namespace?: string;
  name: string;
}

/** `kind/namespace/name`, the namespace empty for a cluster-scoped object. */
export function kindKey(kind: string, namespace: string | undefined, name: string): string {
  return `${kind}/${namespace ?? ""}/${name}`;
}

export function kindKeyOf(object: { kind: string; metadata: { namespace?: string; name: string } }): string {
  return kindKey(object.kind, object.metadata.namespace, object.metadata.name);
}

/** The reference a kindKey stands for (names and namespaces hold no `/`). */
export function parseKindKey(key: string): ObjectRef {
  const [kind = "", namespace = "", name = ""] = key.split("/");
  return namespace ? { kind, namespace, name } : { kind, name };
}
