// The clusters a SealedSecret's values are sealed for, read from the manifest as its delivery reads
// it (metadata.namespace agent-<cluster>, else spec.clusterSelector): sealing, validation,
// re-sealing and delivery build the one context from it (docs/secrets.md).
import { type SealTarget, secretValueContext } from "../lib/seal/index.ts";
import { clusterOf } from "./well-known.ts";

export function sealTargetOf(metadataNamespace: string | undefined, clusterSelector: unknown): SealTarget {
  const cluster = clusterOf(metadataNamespace);
  return cluster !== undefined ? { cluster } : { clusterSelector: clusterSelector ?? {} };
}

/** The context of one value of a SealedSecret. */
export function sealedSecretContext(
  sealed: {
    metadata: { name: string; namespace?: string };
    spec: { namespace: string; clusterSelector?: unknown };
  },
  key: string,
): string {
  return secretValueContext(
    sealTargetOf(sealed.metadata.namespace, sealed.spec.clusterSelector),
    sealed.spec.namespace,
    sealed.metadata.name,
    key,
  );
}
