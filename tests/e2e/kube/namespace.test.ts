// Deleting a namespace cleans up its objects (the controller-manager's namespace controller),
// including the pods that kwok's nodes were "running".
import { randomBytes } from "node:crypto";
import { ApiException, AppsV1Api, CoreV1Api } from "@kubernetes/client-node";
import t from "tap";
import { fleetCluster } from "../../helpers/fleet.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const { kubeConfig: kc } = fleetCluster(0);
const core = kc.makeApiClient(CoreV1Api);
const apps = kc.makeApiClient(AppsV1Api);

t.test("deleting a namespace removes its objects, then the namespace", async (t) => {
  const namespace = `ns-delete-${randomBytes(4).toString("hex")}`;
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: "cm" }, data: { a: "1" } } });
  await core.createNamespacedSecret({ namespace, body: { metadata: { name: "s" }, stringData: { a: "1" } } });
  const labels = { app: "doomed" };
  await apps.createNamespacedDeployment({
    namespace,
    body: {
      metadata: { name: "doomed" },
      spec: {
        replicas: 2,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: { containers: [{ name: "c", image: "registry.local/x:1" }] },
        },
      },
    },
  });
  await waitFor(
    "2 running pods",
    async () => {
      const pods = await core.listNamespacedPod({ namespace });
      return pods.items.filter((p) => p.status?.phase === "Running").length === 2 ? true : undefined;
    },
    onKube,
  );

  await core.deleteNamespace({ name: namespace });
  const terminating = await core.readNamespace({ name: namespace });
  t.equal(terminating.status?.phase, "Terminating", "the namespace is Terminating first");

  await waitFor(
    "the namespace to be gone",
    async () => {
      try {
        await core.readNamespace({ name: namespace });
        return undefined;
      } catch (err) {
        return err instanceof ApiException && err.code === 404 ? true : undefined;
      }
    },
    { attempts: 480, everyMs: 250 },
  );
  const [cms, secrets, pods, deployments, sas] = await Promise.all([
    core.listNamespacedConfigMap({ namespace }),
    core.listNamespacedSecret({ namespace }),
    core.listNamespacedPod({ namespace }),
    apps.listNamespacedDeployment({ namespace }),
    core.listNamespacedServiceAccount({ namespace }),
  ]);
  t.same(cms.items, [], "no configmaps are left");
  t.same(secrets.items, [], "no secrets are left");
  t.same(pods.items, [], "no pods are left");
  t.same(deployments.items, [], "no deployments are left");
  t.same(sas.items, [], "no service accounts are left");
});
