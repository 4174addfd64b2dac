// A CustomResourceDefinition installs, becomes Established and serves objects with the status
// subresource. (A small CRD of the test's own until `rlark crds` renders the project's.)
import { randomBytes } from "node:crypto";
import {
  ApiException,
  ApiextensionsV1Api,
  CustomObjectsApi,
  type V1CustomResourceDefinition,
} from "@kubernetes/client-node";
import t from "tap";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const { kubeConfig: kc } = fleetCluster(0);
const ext = kc.makeApiClient(ApiextensionsV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);

// a group of its own per run, so parallel or repeated runs never share the CRD
const group = `t${randomBytes(3).toString("hex")}.test.rlark.io`;
const plural = "widgets";
const version = "v1alpha1";

const crd: V1CustomResourceDefinition = {
  metadata: { name: `${plural}.${group}` },
  spec: {
    group,
    scope: "Namespaced",
    names: { plural, singular: "widget", kind: "Widget", listKind: "WidgetList" },
    versions: [
      {
        name: version,
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: "object",
            properties: {
              spec: {
                type: "object",
                required: ["size"],
                properties: { size: { type: "integer", minimum: 1 } },
              },
              status: { type: "object", properties: { phase: { type: "string" } } },
            },
          },
        },
      },
    ],
  },
};

interface Widget {
  metadata: { name: string; resourceVersion?: string };
  spec: { size: number };
  status?: { phase?: string };
}

t.test("a CRD installs, becomes Established and serves objects with a status subresource", async (t) => {
  await ext.createCustomResourceDefinition({ body: crd });
  t.teardown(() => ext.deleteCustomResourceDefinition({ name: crd.metadata!.name! }).catch(() => undefined));

  const established = await waitFor(
    "the CRD to be Established",
    async () => {
      const c = await ext.readCustomResourceDefinition({ name: crd.metadata!.name! });
      return c.status?.conditions?.some((x) => x.type === "Established" && x.status === "True")
        ? c
        : undefined;
    },
    onKube,
  );
  t.same(established.status?.acceptedNames?.kind, "Widget", "its names are accepted");

  const namespace = await testNamespace(t, kc, "crd");
  const ref = { group, version, namespace, plural };
  // the discovery of a new CRD can lag a moment behind Established
  const created = (await waitFor(
    "the first Widget to be created",
    () =>
      custom.createNamespacedCustomObject({
        ...ref,
        body: {
          apiVersion: `${group}/${version}`,
          kind: "Widget",
          metadata: { name: "w1" },
          spec: { size: 2 },
        },
      }),
    onKube,
  )) as Widget;
  t.equal(created.spec.size, 2);
  t.notOk(created.status, "status is not set through the main resource");

  const invalid = await custom
    .createNamespacedCustomObject({
      ...ref,
      body: {
        apiVersion: `${group}/${version}`,
        kind: "Widget",
        metadata: { name: "bad" },
        spec: { size: 0 },
      },
    })
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  t.ok(invalid instanceof ApiException && invalid.code === 422, "the schema rejects spec.size 0 with 422");

  const withStatus = (await custom.replaceNamespacedCustomObjectStatus({
    ...ref,
    name: "w1",
    body: { ...created, spec: { size: 99 }, status: { phase: "Ready" } },
  })) as Widget;
  t.equal(withStatus.status?.phase, "Ready", "the status subresource sets status");
  t.equal(withStatus.spec.size, 2, "the status subresource ignores spec changes");

  const updated = (await custom.replaceNamespacedCustomObject({
    ...ref,
    name: "w1",
    body: { ...withStatus, spec: { size: 3 }, status: { phase: "Ignored" } },
  })) as Widget;
  t.equal(updated.spec.size, 3, "the main resource sets spec");
  t.equal(updated.status?.phase, "Ready", "the main resource ignores status changes");

  const list = (await custom.listNamespacedCustomObject(ref)) as { items: Widget[] };
  t.same(
    list.items.map((w) => w.metadata.name),
    ["w1"],
    "the list serves the stored object",
  );
});
