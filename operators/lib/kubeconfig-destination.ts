// Where an agentless Cluster's credential goes (docs/clusters.md): only what is sealed decides it.
// The Cluster's unsealed spec.kubeconfig.server and insecureSkipTLSVerify are written by whoever
// may commit; one that differs from the sealed kubeconfig would send the sealed token to another
// server, so it is refused, both when the hub validates a revision and where the kubeconfig is
// opened. The CA, tls-server-name and (refused) proxy-url have no unsealed override at all.
import { parse } from "yaml";

export interface KubeconfigOverrides {
  server?: string;
  insecureSkipTLSVerify?: boolean;
}

type Raw = Record<string, unknown>;
const isRecord = (v: unknown): v is Raw => typeof v === "object" && v !== null && !Array.isArray(v);

const normalUrl = (url: string): string => {
  try {
    return new URL(url).href;
  } catch {
    return url;
  }
};

/**
 * The override fields (`server`, `insecureSkipTLSVerify`) that would change where the current
 * context's `cluster` entry sends its credential. Asking for verification (false) changes nothing.
 */
export function overriddenFields(
  cluster: Raw,
  overrides: KubeconfigOverrides,
): Array<keyof KubeconfigOverrides> {
  const fields: Array<keyof KubeconfigOverrides> = [];
  const sealed = cluster.server;
  if (
    overrides.server !== undefined &&
    (typeof sealed !== "string" || normalUrl(sealed) !== normalUrl(overrides.server))
  )
    fields.push("server");
  if (overrides.insecureSkipTLSVerify === true && cluster["insecure-skip-tls-verify"] !== true)
    fields.push("insecureSkipTLSVerify");
  return fields;
}

/** The current context's cluster entry of a kubeconfig, or undefined where it has none. */
export function currentClusterOf(text: string): Raw | undefined {
  let document: unknown;
  try {
    document = parse(text, { maxAliasCount: 0 });
  } catch {
    return undefined;
  }
  if (!isRecord(document)) return undefined;
  const context = entry(document.contexts, document["current-context"], "context");
  return entry(document.clusters, context?.cluster, "cluster");
}

function entry(list: unknown, name: unknown, field: string): Raw | undefined {
  if (!Array.isArray(list) || typeof name !== "string") return undefined;
  const found = list.find((e): e is Raw => isRecord(e) && e.name === name)?.[field];
  return isRecord(found) ? found : undefined;
}

/** What to say for a refused override; names the field, never a value of the kubeconfig. */
export function overrideMessage(field: keyof KubeconfigOverrides): string {
  return field === "server"
    ? "spec.kubeconfig.server differs from the sealed kubeconfig's server: the credential goes only where the sealed kubeconfig says; put the server in the kubeconfig and seal it again (`rlark seal --kubeconfig`), or remove spec.kubeconfig.server"
    : "spec.kubeconfig.insecureSkipTLSVerify differs from the sealed kubeconfig's insecure-skip-tls-verify: whether the server is verified is only what is sealed; set it in the kubeconfig and seal it again, or remove spec.kubeconfig.insecureSkipTLSVerify";
}
