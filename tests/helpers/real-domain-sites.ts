// A Domain's clusters on the shared real-node fleet, as tests/e2e/real-nodes/domain-two-clusters
// sets them up: per cluster fleet/nodeserver's DaemonSet (rlark/sidecar, imported into the real
// node) in the test's namespace, and a kubernetes-runtime agent running with fleet/agent's RBAC
// (impersonated), on a hub with its Domain relay. One host for both clusters: each cluster's
// nodeserver serves its stats on a port of its own, and its pods reach the API server at 127.0.0.1
// (no kube-proxy for the kubernetes Service's ClusterIP).
import { readFileSync } from "node:fs";
import path from "node:path";
import { CoreV1Api, type KubeConfig, KubernetesObjectApi, type V1Pod } from "@kubernetes/client-node";
import type { Test } from "tap";
import YAML from "yaml";
import { repoRoot } from "../../hack/kube/paths.ts";
import { REAL_NODE_LABEL } from "../../hack/kube/real-nodes.ts";
import { KubernetesRuntime } from "../../operators/agent/runtimes/kubernetes/index.ts";
import type { Hub } from "../../operators/hub/hub.ts";
import { startAgentOnHub } from "./agent-on-hub.ts";
import type { FleetCluster } from "./fleet.ts";
import { fleetAgentIdentity } from "./fleet-agent-identity.ts";
import { freePort } from "./free-port.ts";
import { impersonating } from "./install.ts";
import { SIDECAR_IMAGE } from "./real-pods.ts";
import { onKube, waitFor } from "./wait-for.ts";

export interface RealDomainSite {
  /** The Cluster's name on the hub. */
  name: string;
  cluster: FleetCluster;
  /** The test's namespace in that cluster: the agent's, the nodeserver's and the pods'. */
  namespace: string;
}

/**
 * fleet/nodeserver's objects for `namespace`: its namespace instead of rlark-system, this
 * cluster's stats port, the API server at 127.0.0.1, real nodes only.
 */
export function nodeserverObjects(namespace: string, server: string, statsPort: number): object[] {
  const dir = path.join(repoRoot, "fleet/nodeserver");
  const kustomization = YAML.parse(readFileSync(path.join(dir, "kustomization.yaml"), "utf8")) as {
    resources: string[];
  };
  const apiPort = new URL(server).port;
  return kustomization.resources.map((file) => {
    const o = YAML.parse(readFileSync(path.join(dir, file), "utf8"));
    o.metadata.namespace = namespace;
    for (const s of o.subjects ?? []) s.namespace = namespace;
    if (o.kind === "DaemonSet") {
      const spec = o.spec.template.spec;
      spec.nodeSelector = { [REAL_NODE_LABEL]: "true" };
      spec.terminationGracePeriodSeconds = 1;
      const c = spec.containers[0];
      c.image = SIDECAR_IMAGE;
      c.imagePullPolicy = "Never";
      c.args = c.args.map((a: string) =>
        a.startsWith("--peers-secret=")
          ? `--peers-secret=${namespace}/rlark-domain-peers`
          : a.startsWith("--stats-listen=")
            ? `--stats-listen=127.0.0.1:${statsPort}`
            : a,
      );
      c.env.push(
        { name: "KUBERNETES_SERVICE_HOST", value: "127.0.0.1" },
        { name: "KUBERNETES_SERVICE_PORT", value: apiPort },
      );
    }
    return o;
  });
}

/** The running nodeserver pod of `namespace`, if any. */
export async function nodeserverPod(kc: KubeConfig, namespace: string): Promise<V1Pod | undefined> {
  const { items } = await kc
    .makeApiClient(CoreV1Api)
    .listNamespacedPod({ namespace, labelSelector: "app.kubernetes.io/name=rlark-nodeserver" });
  return items.find(
    (p) =>
      !p.metadata?.deletionTimestamp &&
      p.status?.containerStatuses?.some((c) => c.name === "nodeserver" && c.state?.running),
  );
}

/**
 * Per site: the nodeserver DaemonSet and a kubernetes-runtime agent (instance `<name><id>`) on
 * `hub`, dialling its relay; resolves once every nodeserver pod runs.
 */
export async function startRealDomainSites(
  t: Test,
  hub: Hub,
  sites: readonly RealDomainSite[],
  id: string,
): Promise<void> {
  const relay = hub.domainRelayAddress as string;
  for (const site of sites) {
    const statsPort = await freePort();
    const objects = KubernetesObjectApi.makeApiClient(site.cluster.kubeConfig);
    for (const o of nodeserverObjects(site.namespace, site.cluster.server, statsPort))
      await objects.create(o as never);
    const kubeConfig = impersonating(
      site.cluster.kubeConfig,
      await fleetAgentIdentity(t, site.cluster.kubeConfig, site.namespace),
    );
    const runtime = await KubernetesRuntime.start({
      kubeConfig,
      defaultNamespace: site.namespace,
      instance: `${site.name}${id}`,
      retryIntervalMs: 500,
      sidecar: { image: SIDECAR_IMAGE },
    });
    t.teardown(() => runtime.stop());
    await startAgentOnHub(t, hub, site.name, {
      runtime,
      runtimeKind: "kubernetes",
      reportIntervalMs: 500,
      domainRelay: relay,
      nodeserverStatsPort: statsPort,
    });
  }
  for (const site of sites)
    await waitFor(
      `${site.name}'s nodeserver pod running`,
      () => nodeserverPod(site.cluster.kubeConfig, site.namespace),
      onKube,
    );
}
