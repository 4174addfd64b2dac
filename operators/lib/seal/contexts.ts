// Where a sealed value may be opened (contract S); sealing and opening must build the same string.
// A SealedSecret's context names the clusters it is delivered to, so a committer who moves a
// value to another cluster (metadata.namespace) or another selector makes it not open.

/** The clusters a SealedSecret's values are for: one Cluster, or every Cluster its selector matches. */
export type SealTarget = { cluster: string } | { clusterSelector: unknown };

/** JSON with object keys sorted at every level: one string per selector however it was written. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (typeof value === "object" && value !== null)
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  return JSON.stringify(value) ?? "null";
}

const targetPart = (target: SealTarget): string =>
  "cluster" in target ? `cluster/${target.cluster}` : `clusters/${canonicalJson(target.clusterSelector)}`;

/**
 * `cluster/<cluster>/secret/<namespace>/<name>/<key>`, or `clusters/<selector as canonical JSON>/
 * secret/…` for a cluster-wide SealedSecret. Namespace, name and key hold no "/", so the string
 * is read from its end and no two places share one.
 */
export const secretValueContext = (
  target: SealTarget,
  namespace: string,
  name: string,
  key: string,
): string => `${targetPart(target)}/secret/${namespace}/${name}/${key}`;

const SECRET_CONTEXT = /^clusters?\/.+\/secret\/([^/]+)\/([^/]+)\/([^/]+)$/;

/**
 * The context rlark sealed SealedSecret values for before it named their clusters
 * (`secret/<namespace>/<name>/<key>`), for the place `context` names; undefined for other contexts.
 * Only re-sealing opens a value for it (`rlark seal --reseal`), to bind it to its clusters.
 */
export function unboundSecretContext(context: string): string | undefined {
  const match = SECRET_CONTEXT.exec(context);
  return match ? `secret/${match[1]}/${match[2]}/${match[3]}` : undefined;
}

export const clusterKubeconfigContext = (cluster: string): string => `cluster/${cluster}/kubeconfig`;
