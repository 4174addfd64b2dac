// The embodied-runtime catalog entry on a real kube-apiserver, with its default values put in by a
// plain textual substitution (addon-defaults.ts) until the addons renderer lands: every object
// passes a server-side dry-run, and the namespaced ones, applied for real in a test namespace,
// roll out on the kwok node labelled rlark.io/node-category-robot=true and nowhere else.
import {
  ApiException,
  AppsV1Api,
  CoreV1Api,
  KubernetesObjectApi,
  PatchStrategy,
} from "@kubernetes/client-node";
import t from "tap";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";
import { renderWithDefaults } from "./addon-defaults.ts";

const { kubeConfig: kc } = fleetCluster(0);

t.test(
  "every object passes a server-side dry-run; the DaemonSets roll out on the robot nodes only",
  async (t) => {
    const ns = await testNamespace(t, kc, "embodied");
    const api = KubernetesObjectApi.makeApiClient(kc);
    const rendered = renderWithDefaults(ns);
    t.same(
      rendered.map((r) => `${r.file} ${r.object.kind}/${r.object.metadata?.name}`),
      [
        "00-rbac.yaml ServiceAccount/rlark-device-plugin",
        "00-rbac.yaml ServiceAccount/rlark-device-controllers",
        "00-rbac.yaml ClusterRole/rlark-device-plugin",
        "00-rbac.yaml ClusterRoleBinding/rlark-device-plugin",
        "00-rbac.yaml ServiceAccount/rlark-device-webhook",
        "00-rbac.yaml ClusterRole/rlark-device-webhook",
        "00-rbac.yaml ClusterRoleBinding/rlark-device-webhook",
        "10-robot-config.yaml ConfigMap/rlark-robots",
        "10-robot-config.yaml ConfigMap/rlark-device-controllers",
        "20-device-plugin.yaml DaemonSet/rlark-device-plugin",
        "21-controllers.yaml DaemonSet/rlark-device-controllers",
        "30-webhook.yaml Deployment/rlark-device-webhook",
        "30-webhook.yaml Service/rlark-device-webhook",
        "30-webhook.yaml MutatingWebhookConfiguration/rlark-device-webhook",
      ],
    );
    for (const { file, object } of rendered) {
      const answer = await api
        .patch(object, undefined, "All", "rlark-test", true, PatchStrategy.ServerSideApply)
        .catch((error: unknown) => (error instanceof ApiException ? String(error.body) : String(error)));
      t.type(
        answer,
        "object",
        `${file} ${object.kind}/${object.metadata?.name} passes the dry-run: ${typeof answer === "string" ? answer : "ok"}`,
      );
    }

    // Cluster-scoped objects are shared with parallel tests: only the namespaced ones for real.
    const namespaced = rendered.filter((r) => r.object.metadata?.namespace === ns).map((r) => r.object);
    for (const object of namespaced)
      await api.patch(object, undefined, undefined, "rlark-test", true, PatchStrategy.ServerSideApply);
    const apps = kc.makeApiClient(AppsV1Api);
    const robotNodes = (
      await kc.makeApiClient(CoreV1Api).listNode({ labelSelector: "rlark.io/node-category-robot=true" })
    ).items;
    t.ok(robotNodes.length > 0, "the fleet has robot nodes");
    for (const name of ["rlark-device-plugin", "rlark-device-controllers"]) {
      const ds = await waitFor(
        `DaemonSet ${name} ready`,
        async () => {
          const d = await apps.readNamespacedDaemonSet({ name, namespace: ns });
          const s = d.status;
          const current = (s?.observedGeneration ?? 0) >= (d.metadata?.generation ?? 1);
          return current && s && s.desiredNumberScheduled > 0 && s.numberReady === s.desiredNumberScheduled
            ? d
            : undefined;
        },
        onKube,
      );
      t.equal(
        ds.status?.desiredNumberScheduled,
        robotNodes.length,
        `${name} runs on each robot node and only there`,
      );
    }
  },
);
