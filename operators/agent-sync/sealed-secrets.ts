// The Secrets a cluster's agent should hold, opened from the SealedSecrets that name the cluster.
// This is the one place the hub opens a SealedSecret's values, and only for the message it is
// about to send to that cluster's agent: the plain values are never stored, logged or served.
import { type Cluster, namespaceFor, type SealedSecret, sealedSecretContext } from "../api/index.ts";
import type { KubeObject } from "../lib/kube-object.ts";
import type { Logger } from "../lib/logger.ts";
import type { SealKeyring } from "../lib/seal/index.ts";
import { compileLabelSelector, matches, type Store } from "../lib/store/index.ts";

export interface OpenSecretsOptions {
  keys: Pick<SealKeyring, "unseal">;
  logger: Logger;
}

/**
 * The SealedSecrets for `cluster`: those in agent-<cluster>, and cluster-wide ones whose
 * clusterSelector matches the Cluster's labels (a namespaced one of the same target wins).
 */
export async function sealedSecretsFor(store: Store, cluster: string): Promise<SealedSecret[]> {
  const own = (await store.list<SealedSecret>("SealedSecret", { namespace: namespaceFor(cluster) })).items;
  const labels = (await store.get<Cluster>("Cluster", undefined, cluster))?.metadata.labels;
  const wide = (await store.list<SealedSecret>("SealedSecret")).items.filter(
    (sealed) => !sealed.metadata.namespace && selects(sealed, labels),
  );
  const byTarget = new Map<string, SealedSecret>();
  for (const sealed of [...wide, ...own])
    byTarget.set(`${sealed.spec.namespace}/${sealed.metadata.name}`, sealed);
  return [...byTarget.values()].filter((sealed) => !sealed.metadata.deletionTimestamp);
}

/**
 * The v1 Secrets for `cluster`, opened from {@link sealedSecretsFor}. A SealedSecret with a value
 * that does not open is left out whole and logged without values.
 */
export async function secretsForCluster(
  store: Store,
  cluster: string,
  options: OpenSecretsOptions,
): Promise<KubeObject[]> {
  const out: KubeObject[] = [];
  for (const sealed of await sealedSecretsFor(store, cluster)) {
    const secret = openSecret(sealed, options);
    if (secret) out.push(secret);
  }
  return out;
}

function selects(sealed: SealedSecret, labels: Record<string, string> | undefined): boolean {
  const selector = sealed.spec.clusterSelector;
  if (!selector) return false;
  try {
    return matches(compileLabelSelector(selector), labels);
  } catch {
    return false;
  }
}

function openSecret(sealed: SealedSecret, { keys, logger }: OpenSecretsOptions): KubeObject | undefined {
  const { name } = sealed.metadata;
  const { namespace } = sealed.spec;
  const data: Record<string, string> = {};
  for (const key of Object.keys(sealed.spec.encryptedData).sort()) {
    try {
      // the context names the clusters it was sealed for: a value moved to another cluster's
      // namespace or another selector does not open here
      const plain = keys.unseal(sealed.spec.encryptedData[key] as string, sealedSecretContext(sealed, key));
      data[key] = plain.toString("base64");
    } catch (error) {
      // Validation opened it when the revision was applied: only a key removed from <data-dir>/seal
      // since then gets here. The message names the key id, never a value.
      logger.error("a SealedSecret value does not open; the Secret is not delivered", {
        sealedSecret: `${sealed.metadata.namespace ?? ""}/${name}`,
        key,
        error: (error as Error).message,
      });
      return undefined;
    }
  }
  return {
    apiVersion: "v1",
    kind: "Secret",
    // The agent adds its own labels (managed-by, instance) when it applies the Secret.
    metadata: { name, namespace },
    type: "Opaque",
    data,
  } as KubeObject;
}
