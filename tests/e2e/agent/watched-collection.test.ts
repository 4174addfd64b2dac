// The runtime's list+watch caches on a real API server: a watch resumed from an expired
// resourceVersion gets 410 Gone and relists; a relist that finds nothing new fires no change;
// and the cache keeps following the server afterwards.
import { randomBytes } from "node:crypto";
import {
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubernetesObject,
  type V1ConfigMap,
} from "@kubernetes/client-node";
import t, { type Test } from "tap";
import { WatchedCollection } from "../../../operators/agent/runtimes/kubernetes/watch/watched-collection.ts";
import { silentLogger } from "../../../operators/lib/logger.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const { kubeConfig: kc } = fleetCluster(0);
const core = kc.makeApiClient(CoreV1Api);
const ext = kc.makeApiClient(ApiextensionsV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);

async function collection<T extends KubernetesObject>(
  t: Test,
  resource: { apiVersion: string; kind: string; path: string; labelSelector?: string },
) {
  let changes = 0;
  const c = new WatchedCollection<T>({
    kubeConfig: kc,
    ...resource,
    onChange: () => {
      changes += 1;
    },
    logger: silentLogger,
    backoff: { initialMs: 50, maxMs: 500 },
  });
  c.start();
  t.teardown(() => c.stop());
  await c.synced;
  return { c, changes: () => changes };
}

t.test("a watch resumed from an expired resourceVersion relists and keeps following", async (t) => {
  // a new resource's watch cache starts now: resourceVersion 1 is expired for it (see
  // tests/e2e/kube/api-semantics.test.ts)
  const group = `w${randomBytes(3).toString("hex")}.test.rlark.io`;
  await ext.createCustomResourceDefinition({
    body: {
      metadata: { name: `gauges.${group}` },
      spec: {
        group,
        scope: "Namespaced",
        names: { plural: "gauges", singular: "gauge", kind: "Gauge" },
        versions: [
          {
            name: "v1",
            served: true,
            storage: true,
            schema: { openAPIV3Schema: { type: "object", x_kubernetes_preserve_unknown_fields: true } },
          },
        ],
      },
    },
  });
  t.teardown(() => ext.deleteCustomResourceDefinition({ name: `gauges.${group}` }).catch(() => undefined));
  const namespace = await testNamespace(t, kc, "watch-gone");
  const ref = { group, version: "v1", namespace, plural: "gauges" };
  const gauge = (name: string) => ({ apiVersion: `${group}/v1`, kind: "Gauge", metadata: { name } });
  await waitFor(
    "the first Gauge",
    () => custom.createNamespacedCustomObject({ ...ref, body: gauge("before") }),
    onKube,
  );

  const { c } = await collection(t, {
    apiVersion: `${group}/v1`,
    kind: "Gauge",
    path: `/apis/${group}/v1/gauges`,
  });
  t.ok(c.get(namespace, "before"), "the first list has the existing object");
  const lists = c.lists;
  await waitFor(
    "a 410 Gone",
    async () => {
      c.rewatchFrom("1");
      return c.gone > 0 ? true : undefined;
    },
    onKube,
  );
  await waitFor("the relist after it", async () => (c.lists > lists ? true : undefined), onKube);
  t.ok(c.get(namespace, "before"), "the relist keeps what exists");
  await custom.createNamespacedCustomObject({ ...ref, body: gauge("after") });
  await waitFor(
    "the watch to deliver a new object",
    async () => (c.get(namespace, "after") ? true : undefined),
    onKube,
  );
  await custom.deleteNamespacedCustomObject({ ...ref, name: "before" });
  await waitFor(
    "the watch to deliver a deletion",
    async () => (c.get(namespace, "before") ? undefined : true),
    onKube,
  );
});

t.test("a relist that finds nothing new fires no change", async (t) => {
  const namespace = await testNamespace(t, kc, "watch-relist");
  const create = (name: string) =>
    core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name, labels: { "rlark.io/test-ns": namespace } }, data: { a: "1" } },
    });
  await create("one");
  const { c, changes } = await collection<V1ConfigMap>(t, {
    apiVersion: "v1",
    kind: "ConfigMap",
    path: "/api/v1/configmaps",
    labelSelector: `rlark.io/test-ns=${namespace}`,
  });
  const before = changes();
  const lists = c.lists;
  await waitFor(
    "a relist",
    async () => {
      c.relist();
      return c.lists > lists ? true : undefined;
    },
    onKube,
  );
  t.equal(changes(), before, "unchanged objects are not reported again");
  await create("two");
  await waitFor("the change after the relist", async () => (changes() > before ? true : undefined), onKube);
  t.ok(c.get(namespace, "two"));
});
