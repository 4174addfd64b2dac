// Work-queue keys as client-go writes them: "namespace/name", or "name" when cluster-scoped.

import type { KubeObject } from "./types.ts";

export function objectKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

export function keyOf(object: Pick<KubeObject, "metadata">): string {
  return objectKey(object.metadata.namespace, object.metadata.name);
}

export function parseKey(key: string): { namespace: string; name: string } {
  const slash = key.indexOf("/");
  return slash === -1
    ? { namespace: "", name: key }
    : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
