// An unsealed kubeconfig, turned into a client configuration for its current context only. The
// kubeconfig comes from whoever may commit a Cluster (the hub's sealing key is public), so it may
// name nothing on the hub's machine: no exec or auth-provider plugins (they run commands on the
// hub) and no file paths (tokenFile, client-certificate, certificate-authority: they would read
// the hub's files and could send them to the server). Only inline credentials are taken. Errors
// name the field, never a value: the text holds credentials. Where the credential goes (server,
// CA, TLS verification) is only what is sealed: an unsealed override of the Cluster that differs
// is refused (lib/kubeconfig-destination.ts).
import { KubeConfig } from "@kubernetes/client-node";
import { parse } from "yaml";
import {
  type KubeconfigOverrides,
  overriddenFields,
  overrideMessage,
} from "../../lib/kubeconfig-destination.ts";

export class KubeconfigError extends Error {}

export type { KubeconfigOverrides } from "../../lib/kubeconfig-destination.ts";

type Raw = Record<string, unknown>;
const isRecord = (v: unknown): v is Raw => typeof v === "object" && v !== null && !Array.isArray(v);

const CLUSTER_FIELDS = new Set([
  "server",
  "certificate-authority-data",
  "insecure-skip-tls-verify",
  "tls-server-name",
  "extensions",
]);
const USER_FIELDS = new Set([
  "token",
  "client-certificate-data",
  "client-key-data",
  "username",
  "password",
  "extensions",
]);

function named(list: unknown, field: string, name: string): Raw {
  if (!Array.isArray(list)) throw new KubeconfigError(`the kubeconfig has no ${field} list`);
  const entry = list.find((e): e is Raw => isRecord(e) && e.name === name);
  const inner = entry?.[field.slice(0, -1)];
  if (!isRecord(inner))
    throw new KubeconfigError(`the kubeconfig's current context names a missing ${field.slice(0, -1)}`);
  return inner;
}

function string(o: Raw, key: string, where: string): string | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  if (typeof v !== "string") throw new KubeconfigError(`the kubeconfig's ${where}.${key} must be a string`);
  return v;
}

function onlyInline(o: Raw, allowed: Set<string>, where: string): void {
  for (const key of Object.keys(o)) {
    if (!allowed.has(key))
      throw new KubeconfigError(
        `the kubeconfig's ${where} uses "${key}", which the hub does not take: only inline credentials (token, client-certificate-data, client-key-data, certificate-authority-data)`,
      );
  }
}

export function kubeConfigFrom(text: string, overrides: KubeconfigOverrides = {}): KubeConfig {
  let document: unknown;
  try {
    document = parse(text, { maxAliasCount: 0 });
  } catch (error) {
    const line = (error as { linePos?: [{ line: number }] }).linePos?.[0]?.line;
    throw new KubeconfigError(`the kubeconfig is not YAML${line ? ` (line ${line})` : ""}`);
  }
  if (!isRecord(document)) throw new KubeconfigError("the kubeconfig is not a YAML mapping");
  const currentContext = document["current-context"];
  if (typeof currentContext !== "string" || !currentContext)
    throw new KubeconfigError("the kubeconfig has no current-context");
  const context = named(document.contexts, "contexts", currentContext);
  const clusterName = string(context, "cluster", "context");
  const userName = string(context, "user", "context");
  if (!clusterName || !userName)
    throw new KubeconfigError("the kubeconfig's current context needs a cluster and a user");
  const cluster = named(document.clusters, "clusters", clusterName);
  const user = named(document.users, "users", userName);
  onlyInline(cluster, CLUSTER_FIELDS, "cluster");
  onlyInline(user, USER_FIELDS, "user");
  const refused = overriddenFields(cluster, overrides)[0];
  if (refused) throw new KubeconfigError(overrideMessage(refused));
  const server = string(cluster, "server", "cluster");
  if (!server || !/^https?:\/\//.test(server))
    throw new KubeconfigError("the kubeconfig's cluster needs a server (https://…)");
  const skip = cluster["insecure-skip-tls-verify"];
  const caData = string(cluster, "certificate-authority-data", "cluster");
  const tlsServerName = string(cluster, "tls-server-name", "cluster");
  const token = string(user, "token", "user");
  const certData = string(user, "client-certificate-data", "user");
  const keyData = string(user, "client-key-data", "user");
  const username = string(user, "username", "user");
  const password = string(user, "password", "user");
  if (!token && !(certData && keyData) && !(username && password))
    throw new KubeconfigError(
      "the kubeconfig's user has no inline credentials (token, client-certificate-data with client-key-data, or username with password)",
    );
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [
      {
        name: "cluster",
        server,
        skipTLSVerify: skip === true,
        ...(caData ? { caData } : {}),
        ...(tlsServerName ? { tlsServerName } : {}),
      },
    ],
    users: [
      {
        name: "user",
        ...(token ? { token } : {}),
        ...(certData ? { certData } : {}),
        ...(keyData ? { keyData } : {}),
        ...(username ? { username } : {}),
        ...(password ? { password } : {}),
      },
    ],
    contexts: [{ name: "context", cluster: "cluster", user: "user" }],
    currentContext: "context",
  });
  return kubeConfig;
}
