// Read-only browsing of this agent's cluster for the hub (lib/tunnel/browse.ts): one page of one
// resource, listed with the agent's own credentials and projected field by field. Only list calls
// are made, and a Secret leaves as its name, type and key names: its values are read from the API
// server (there is no list without them) and dropped here.
import type {
  AppsV1Api,
  CoreV1Api,
  V1ConfigMap,
  V1Container,
  V1Deployment,
  V1Namespace,
  V1Pod,
  V1Secret,
  V1Service,
} from "@kubernetes/client-node";
import {
  type BrowseAnswer,
  type BrowseItem,
  type BrowseRequest,
  type ConfigMapItem,
  type ContainerItem,
  clipValue,
  type DeploymentItem,
  type EnvItem,
  type NamespaceItem,
  type PodItem,
  type SecretItem,
  type ServiceItem,
} from "../../../../lib/tunnel/index.ts";
import { KubeApiError } from "../api-error.ts";

interface Page<T> {
  items: T[];
  metadata?: { _continue?: string };
}

const time = (d: Date | undefined): string | undefined => (d ? new Date(d).toISOString() : undefined);

export function namespaceItem(n: V1Namespace): NamespaceItem {
  return {
    name: n.metadata?.name ?? "",
    ...(n.status?.phase ? { phase: n.status.phase } : {}),
    ...(n.metadata?.creationTimestamp ? { created: time(n.metadata.creationTimestamp) } : {}),
  };
}

/** Literal values are shown (cut when long); references name their source and are not followed. */
export function containerItem(c: V1Container): ContainerItem {
  return {
    name: c.name,
    ...(c.image ? { image: c.image } : {}),
    env: (c.env ?? []).map((e): EnvItem => {
      const from = e.valueFrom;
      if (from?.secretKeyRef)
        return {
          name: e.name,
          secretKeyRef: { name: from.secretKeyRef.name ?? "", key: from.secretKeyRef.key },
        };
      if (from?.configMapKeyRef)
        return {
          name: e.name,
          configMapKeyRef: { name: from.configMapKeyRef.name ?? "", key: from.configMapKeyRef.key },
        };
      if (from?.fieldRef) return { name: e.name, fieldRef: from.fieldRef.fieldPath };
      if (from?.resourceFieldRef) return { name: e.name, resourceFieldRef: from.resourceFieldRef.resource };
      return { name: e.name, value: clipValue(e.value ?? "") };
    }),
    envFrom: (c.envFrom ?? []).map((f) => ({
      ...(f.prefix ? { prefix: f.prefix } : {}),
      ...(f.secretRef ? { secretRef: f.secretRef.name ?? "" } : {}),
      ...(f.configMapRef ? { configMapRef: f.configMapRef.name ?? "" } : {}),
    })),
  };
}

export function deploymentItem(d: V1Deployment): DeploymentItem {
  const pod = d.spec?.template.spec;
  return {
    name: d.metadata?.name ?? "",
    replicas: d.spec?.replicas ?? 1,
    readyReplicas: d.status?.readyReplicas ?? 0,
    containers: [...(pod?.initContainers ?? []), ...(pod?.containers ?? [])].map(containerItem),
    ...(d.metadata?.creationTimestamp ? { created: time(d.metadata.creationTimestamp) } : {}),
  };
}

export function serviceItem(s: V1Service): ServiceItem {
  return {
    name: s.metadata?.name ?? "",
    ...(s.spec?.type ? { type: s.spec.type } : {}),
    ...(s.spec?.clusterIP ? { clusterIP: s.spec.clusterIP } : {}),
    ports: (s.spec?.ports ?? []).map((p) => ({
      ...(p.name ? { name: p.name } : {}),
      port: p.port,
      ...(p.targetPort !== undefined ? { targetPort: String(p.targetPort) } : {}),
      ...(p.protocol ? { protocol: p.protocol } : {}),
      ...(p.nodePort ? { nodePort: p.nodePort } : {}),
    })),
  };
}

export function podItem(p: V1Pod): PodItem {
  const statuses = p.status?.containerStatuses ?? [];
  return {
    name: p.metadata?.name ?? "",
    ...(p.status?.phase ? { phase: p.status.phase } : {}),
    ...(p.spec?.nodeName ? { node: p.spec.nodeName } : {}),
    ...(p.status?.podIP ? { podIP: p.status.podIP } : {}),
    ready: `${statuses.filter((s) => s.ready).length}/${p.spec?.containers.length ?? statuses.length}`,
    restarts: statuses.reduce((sum, s) => sum + s.restartCount, 0),
    ...(p.metadata?.creationTimestamp ? { created: time(p.metadata.creationTimestamp) } : {}),
  };
}

/** What one ConfigMap may show in all: a page of large ones still fits an answer. */
const CONFIGMAP_BUDGET = 64 * 1024;

export function configMapItem(c: V1ConfigMap): ConfigMapItem {
  const data: Record<string, string> = {};
  let left = CONFIGMAP_BUDGET;
  for (const key of Object.keys(c.data ?? {}).sort()) {
    const value = clipValue(c.data?.[key] ?? "");
    data[key] = value.length <= left ? value : "(not shown: the ConfigMap is over 64 KiB)";
    left = Math.max(0, left - value.length);
  }
  for (const key of Object.keys(c.binaryData ?? {}).sort()) data[key] = "(binary)";
  return { name: c.metadata?.name ?? "", data };
}

/** Only names: `data` and `stringData` contribute their keys, never their values. */
export function secretItem(s: V1Secret): SecretItem {
  return {
    name: s.metadata?.name ?? "",
    ...(s.type ? { type: s.type } : {}),
    keys: [...new Set([...Object.keys(s.data ?? {}), ...Object.keys(s.stringData ?? {})])].sort(),
  };
}

/** Answers browse requests (already parsed) from one cluster through the agent's clients. */
export function kubernetesBrowse(core: CoreV1Api, apps: AppsV1Api) {
  return async (request: BrowseRequest): Promise<BrowseAnswer> => {
    const paging = { limit: request.limit, ...(request.continue ? { _continue: request.continue } : {}) };
    const namespace = request.namespace ?? "";
    const page = async <T>(list: Promise<Page<T>>, project: (item: T) => BrowseItem) => {
      let result: Page<T>;
      try {
        result = await list;
      } catch (err) {
        throw new KubeApiError(err, `list ${request.resource}${namespace ? ` in ${namespace}` : ""}`);
      }
      return {
        resource: request.resource,
        ...(request.namespace ? { namespace: request.namespace } : {}),
        items: result.items.map(project),
        ...(result.metadata?._continue ? { continue: result.metadata._continue } : {}),
      };
    };
    switch (request.resource) {
      case "namespaces":
        return page(core.listNamespace(paging), namespaceItem);
      case "deployments":
        return page(apps.listNamespacedDeployment({ namespace, ...paging }), deploymentItem);
      case "services":
        return page(core.listNamespacedService({ namespace, ...paging }), serviceItem);
      case "pods":
        return page(core.listNamespacedPod({ namespace, ...paging }), podItem);
      case "configmaps":
        return page(core.listNamespacedConfigMap({ namespace, ...paging }), configMapItem);
      case "secrets":
        return page(core.listNamespacedSecret({ namespace, ...paging }), secretItem);
    }
  };
}
