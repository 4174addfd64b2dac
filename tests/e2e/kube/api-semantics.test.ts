// API machinery that a fake would get wrong: server-side apply with field managers and their
// conflicts, watches, and 410 Gone for a resourceVersion that is too old.
import { randomBytes } from "node:crypto";
import {
  ApiException,
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  type V1ConfigMap,
  Watch,
} from "@kubernetes/client-node";
import t from "tap";
import { fleetCluster, testNamespace, within } from "../../helpers/fleet.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const { kubeConfig: kc } = fleetCluster(0);
const core = kc.makeApiClient(CoreV1Api);
const objects = KubernetesObjectApi.makeApiClient(kc);
const ext = kc.makeApiClient(ApiextensionsV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);

const configMap = (namespace: string, data: Record<string, string>): V1ConfigMap & KubernetesObject => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name: "settings", namespace },
  data,
});

const apply = (obj: KubernetesObject, manager: string, force = false) =>
  objects.patch(obj, undefined, undefined, manager, force, PatchStrategy.ServerSideApply);

async function failure(p: Promise<unknown>): Promise<ApiException<unknown> | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    if (err instanceof ApiException) return err;
    throw err;
  }
}

t.test("server-side apply records field managers and reports conflicts between them", async (t) => {
  const namespace = await testNamespace(t, kc, "ssa");
  const first = await apply(configMap(namespace, { color: "red" }), "rlark-a");
  t.equal(first.metadata?.managedFields?.[0]?.manager, "rlark-a", "the field manager is recorded");
  t.equal(first.metadata?.managedFields?.[0]?.operation, "Apply");

  // a second manager may add its own field
  const both = (await apply(configMap(namespace, { size: "3" }), "rlark-b")) as V1ConfigMap;
  t.same(both.data, { color: "red", size: "3" }, "both managers' fields are kept");
  t.same(
    both.metadata?.managedFields?.map((f) => f.manager).sort(),
    ["rlark-a", "rlark-b"],
    "two managers own fields",
  );

  // ...but not take a field another manager owns with a different value
  const conflict = await failure(apply(configMap(namespace, { color: "blue" }), "rlark-b"));
  t.equal(conflict?.code, 409, "changing another manager's field is a 409 Conflict");
  t.match(String(conflict?.body), /conflict/i, "the error names the conflict");

  // force takes the field over
  const forced = (await apply(
    configMap(namespace, { color: "blue", size: "3" }),
    "rlark-b",
    true,
  )) as V1ConfigMap;
  t.equal(forced.data?.color, "blue", "a forced apply wins");
  const owners = forced.metadata?.managedFields?.map((f) => f.manager) ?? [];
  t.notOk(owners.includes("rlark-a"), "the first manager lost its only field");

  // applying without a field the manager owned removes it
  const pruned = (await apply(configMap(namespace, { color: "blue" }), "rlark-b")) as V1ConfigMap;
  t.same(pruned.data, { color: "blue" }, "a field dropped from the applied config is removed");
});

interface WatchEvent {
  type: string;
  object: { metadata?: { name?: string }; code?: number; reason?: string; message?: string };
}

/** Watches `path` until `stop` says so; resolves with the events and the end error, if any. */
function watchEvents(
  path: string,
  query: Record<string, string>,
  stop: (events: WatchEvent[]) => boolean,
): { ready: Promise<AbortController>; done: Promise<{ events: WatchEvent[]; error: unknown }> } {
  const events: WatchEvent[] = [];
  let abort: AbortController | undefined;
  let finish: (v: { events: WatchEvent[]; error: unknown }) => void = () => undefined;
  const done = new Promise<{ events: WatchEvent[]; error: unknown }>((r) => {
    finish = r;
  });
  const ready = new Watch(kc).watch(
    path,
    query,
    (type: string, object: WatchEvent["object"]) => {
      events.push({ type, object });
      if (stop(events)) {
        abort?.abort();
        finish({ events, error: undefined });
      }
    },
    (error: unknown) => finish({ events, error }),
  );
  void ready.then((a) => {
    abort = a;
  });
  return { ready, done };
}

t.test("a watch receives ADDED, MODIFIED and DELETED", async (t) => {
  const namespace = await testNamespace(t, kc, "watch");
  // From the list's resourceVersion: every write after it is delivered, however late the watch
  // is registered on the server.
  const resourceVersion = (await core.listNamespacedConfigMap({ namespace })).metadata?.resourceVersion;
  if (!resourceVersion) throw new Error("the ConfigMap list carries no resourceVersion");
  const { ready, done } = watchEvents(
    `/api/v1/namespaces/${namespace}/configmaps`,
    { resourceVersion },
    (events) => events.some((e) => e.type === "DELETED"),
  );
  await ready;
  await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: "w" }, data: { a: "1" } } });
  const current = await core.readNamespacedConfigMap({ name: "w", namespace });
  await core.replaceNamespacedConfigMap({ name: "w", namespace, body: { ...current, data: { a: "2" } } });
  await core.deleteNamespacedConfigMap({ name: "w", namespace });
  const result = await within("DELETED event", done);
  const ours = result.events.filter((e) => e.object.metadata?.name === "w").map((e) => e.type);
  t.same(ours, ["ADDED", "MODIFIED", "DELETED"], "the three events arrive in order");
});

t.test("a watch from a too-old resourceVersion is answered with 410 Gone", async (t) => {
  // A resource's watch cache starts at the resourceVersion current when it is set up (here: a
  // CRD made by the test, as after an apiserver restart); anything older is gone for watchers.
  const group = `t${randomBytes(3).toString("hex")}.test.rlark.io`;
  const crdName = `gauges.${group}`;
  await ext.createCustomResourceDefinition({
    body: {
      metadata: { name: crdName },
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
  t.teardown(() => ext.deleteCustomResourceDefinition({ name: crdName }).catch(() => undefined));
  const namespace = await testNamespace(t, kc, "gone");
  const ref = { group, version: "v1", namespace, plural: "gauges" };
  const gauge = (name: string) => ({ apiVersion: `${group}/v1`, kind: "Gauge", metadata: { name } });
  // right after Established the new storage may still answer 429 "(re)initializing"
  await waitFor(
    "the first Gauge",
    () => custom.createNamespacedCustomObject({ ...ref, body: gauge("x") }),
    onKube,
  );
  const path = `/apis/${group}/v1/namespaces/${namespace}/gauges`;

  const { done } = watchEvents(path, { resourceVersion: "1" }, (events) =>
    events.some((e) => e.type === "ERROR"),
  );
  const result = await within("answer", done);
  const error = result.events.find((e) => e.type === "ERROR");
  t.equal(error?.object.code, 410, "the watch ends with an ERROR event: 410 Gone");
  t.equal(error?.object.reason, "Expired", "the reason is Expired");
  t.match(String(error?.object.message), /too old resource version/);
  t.notOk(
    result.events.some((e) => e.type === "ADDED"),
    "no events are replayed from the expired resourceVersion",
  );

  // a client recovers the way informers do: list for a fresh resourceVersion and watch from there
  const list = (await custom.listNamespacedCustomObject(ref)) as { metadata?: { resourceVersion?: string } };
  const rv = list.metadata?.resourceVersion;
  t.ok(rv && Number(rv) > 1, "a fresh list gives a current resourceVersion");
  const w = watchEvents(path, { resourceVersion: rv! }, (events) => events.some((e) => e.type === "ADDED"));
  await w.ready;
  await custom.createNamespacedCustomObject({ ...ref, body: gauge("y") });
  const fresh = await within("event", w.done);
  t.same(
    fresh.events.map((e) => `${e.type} ${e.object.metadata?.name}`),
    ["ADDED y"],
    "the new watch sees the next change, and only that",
  );
});
