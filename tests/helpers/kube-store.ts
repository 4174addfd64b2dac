// A Kubernetes store on the shared fleet's first apiserver, isolated by a CRD group of its own
// (`t<hex>.test.rlark.io`): the project's CRDs re-grouped (or, for the store contract, with
// free-form spec and status), installed once per test file and deleted (with every object of
// theirs) when the file ends.
import { randomBytes } from "node:crypto";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Test } from "tap";
import { API_VERSION, customResourceDefinition, kinds } from "../../operators/api/index.ts";
import { KubeHttp } from "../../operators/lib/kube-http.ts";
import { type KubernetesStore, openKubernetesStore } from "../../operators/lib/store/index.ts";
import { fleetCluster } from "./fleet.ts";
import { onKube, waitFor } from "./wait-for.ts";

export interface KubeStoreFixture {
  kubeConfig: KubeConfig;
  kubeconfigFile: string;
  group: string;
  open(t: Test): KubernetesStore;
  /** Deletes every object of the group (finalizers stripped), so a test starts empty. */
  wipe(): Promise<void>;
}

interface Crd {
  metadata: { name: string };
  spec: { group: string; versions: { schema: unknown; subresources?: unknown }[] };
  status?: { conditions?: { type: string; status: string }[] };
}

const freeForm = { type: "object", "x-kubernetes-preserve-unknown-fields": true };

/** Installs the CRDs in a fresh group; `schemas: "free"` keeps spec and status unchecked. */
export async function kubeStoreFixture(
  t: Test,
  options: { schemas: "project" | "free" } = { schemas: "project" },
): Promise<KubeStoreFixture> {
  const cluster = fleetCluster(0);
  const kc = cluster.kubeConfig;
  const group = `t${randomBytes(4).toString("hex")}.test.rlark.io`;
  // Raw JSON: client-node's typed models would drop the x-kubernetes-* keys of the schemas.
  const http = new KubeHttp({ kubeConfig: kc });
  const path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
  const crds = kinds.map((info) => {
    const crd = structuredClone(customResourceDefinition(info)) as unknown as Crd;
    crd.metadata = { name: `${info.plural}.${group}` };
    crd.spec.group = group;
    const version = crd.spec.versions[0]!;
    if (options.schemas === "free") {
      version.schema = {
        openAPIV3Schema: { type: "object", properties: { spec: freeForm, status: freeForm } },
      };
    }
    version.subresources = { status: {} };
    return crd;
  });
  t.teardown(async () => {
    for (const crd of crds)
      await http.request("DELETE", `${path}/${crd.metadata.name}`).catch(() => undefined);
    http.close();
  });
  for (const crd of crds) await http.request("POST", path, { body: crd });
  for (const crd of crds) {
    await waitFor(
      `CRD ${crd.metadata.name} Established`,
      async () =>
        (await http.request<Crd>("GET", `${path}/${crd.metadata.name}`)).status?.conditions?.some(
          (c) => c.type === "Established" && c.status === "True",
        ),
      onKube,
    );
  }
  const resources = kinds.map(({ kind, plural, namespaced }) => ({ kind, plural, namespaced }));
  const open = (t: Test) => {
    const store = openKubernetesStore({
      kubeConfig: kc,
      resources,
      apiVersion: API_VERSION,
      servedGroup: group,
    });
    t.teardown(() => store.close());
    return store;
  };
  const fixture: KubeStoreFixture = {
    kubeConfig: kc,
    kubeconfigFile: cluster.kubeconfig,
    group,
    open,
    async wipe() {
      const store = openKubernetesStore({
        kubeConfig: kc,
        resources,
        apiVersion: API_VERSION,
        servedGroup: group,
      });
      try {
        for (const { kind } of resources) {
          for (const o of (await store.list(kind)).items) {
            if (o.metadata.finalizers?.length) {
              await store
                .update({ ...o, metadata: { ...o.metadata, finalizers: [] } })
                .catch(() => undefined);
            }
            await store.delete(kind, o.metadata.namespace, o.metadata.name).catch(() => undefined);
          }
          await waitFor(`no ${kind} left`, async () => (await store.list(kind)).items.length === 0, onKube);
        }
      } finally {
        await store.close();
      }
    },
  };
  // discovery of new CRDs can lag behind Established
  const probe = open(t);
  await waitFor("the CRDs to be served", async () => (await probe.list("Job")).items !== undefined, onKube);
  return fixture;
}
