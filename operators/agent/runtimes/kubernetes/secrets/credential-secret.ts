// The agent's enrolled identity for the kubernetes runtime: a Secret (default
// rlark-system/rlark-agent-identity), so a rescheduled agent pod keeps its key and certificate
// and never needs a new bootstrap token. The RBAC in fleet/agent/role.yaml allows exactly this
// Secret. Written by server-side apply: one request whether or not it exists yet. The namespace
// is made when the Secret is not found, that is before enrollment: an agent that may not make it
// refuses before its one-time token is spent.
import {
  CoreV1Api,
  type KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  type V1Secret,
} from "@kubernetes/client-node";
import { AGENT_FIELD_MANAGER, MANAGED_BY_AGENT, MANAGED_BY_LABEL } from "../../../../api/index.ts";
import {
  type AgentCredentials,
  type CredentialStore,
  parseCredentials,
} from "../../../../lib/tunnel/index.ts";
import { apiErrorCode, KubeApiError } from "../api-error.ts";
import { ensureNamespace } from "../namespace.ts";
import { DEFAULT_NAMESPACE } from "../workloads/render.ts";

export const IDENTITY_SECRET = "rlark-agent-identity";

export interface SecretCredentialStoreOptions {
  kubeConfig: KubeConfig;
  namespace?: string;
  name?: string;
}

const b64 = (s: string): string => Buffer.from(s, "utf8").toString("base64");
const unb64 = (s: string | undefined): string | undefined =>
  s === undefined ? undefined : Buffer.from(s, "base64").toString("utf8");

export function secretCredentialStore(options: SecretCredentialStoreOptions): CredentialStore {
  const namespace = options.namespace ?? DEFAULT_NAMESPACE;
  const name = options.name ?? IDENTITY_SECRET;
  const core = options.kubeConfig.makeApiClient(CoreV1Api);
  const objects = KubernetesObjectApi.makeApiClient(options.kubeConfig);
  const where = `Secret ${namespace}/${name}`;
  const write = (credentials: AgentCredentials) =>
    objects.patch(
      {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name, namespace, labels: { [MANAGED_BY_LABEL]: MANAGED_BY_AGENT } },
        type: "kubernetes.io/tls",
        data: {
          cluster: b64(credentials.cluster),
          "tls.key": b64(credentials.privateKeyPem),
          "tls.crt": b64(credentials.certPem),
          "ca.crt": b64(credentials.caCertPem),
          ...(credentials.hubCertPem ? { "hub.crt": b64(credentials.hubCertPem) } : {}),
        },
      } satisfies V1Secret,
      undefined,
      undefined,
      AGENT_FIELD_MANAGER,
      true,
      PatchStrategy.ServerSideApply,
    );
  return {
    async load(): Promise<AgentCredentials | undefined> {
      let data: Record<string, string> | undefined;
      try {
        data = (await core.readNamespacedSecret({ name, namespace })).data;
      } catch (err) {
        if (apiErrorCode(err) !== 404) throw new KubeApiError(err, `reading ${where}`);
        await ensureNamespace(core, namespace);
        return undefined;
      }
      return parseCredentials(
        {
          cluster: unb64(data?.cluster),
          privateKeyPem: unb64(data?.["tls.key"]),
          certPem: unb64(data?.["tls.crt"]),
          caCertPem: unb64(data?.["ca.crt"]),
          hubCertPem: unb64(data?.["hub.crt"]),
        },
        where,
      );
    },
    async save(credentials: AgentCredentials): Promise<void> {
      try {
        await write(credentials);
      } catch (err) {
        if (apiErrorCode(err) !== 404) throw new KubeApiError(err, `writing ${where}`);
        // the namespace went away since load(): make it again, once
        await ensureNamespace(core, namespace);
        await write(credentials).catch((again: unknown) => {
          throw new KubeApiError(again, `writing ${where}`);
        });
      }
    },
  };
}
