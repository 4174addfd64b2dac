// The kubernetes runtime sends a Task's objects once: desired sets that repeat it (a delta per
// debounce while a revision streams in) apply nothing again, also before the watch has shown the
// workload; one deleted behind the runtime's back once it was seen is applied again.
import { randomBytes } from "node:crypto";
import { AppsV1Api, KubeConfig, type RequestContext } from "@kubernetes/client-node";
import t from "tap";
import { KubernetesRuntime } from "../../../operators/agent/runtimes/kubernetes/index.ts";
import { kubeTask } from "../../agent/runtimes/kubernetes/tasks.ts";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

/** Counts the server-side applies made through it. */
class CountingKubeConfig extends KubeConfig {
  applies = 0;

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    if (context.getHeaders()["Content-Type"]?.startsWith("application/apply-patch")) this.applies++;
    return super.applySecurityAuthentication(context);
  }
}

const cluster = fleetCluster(0);
const apps = cluster.kubeConfig.makeApiClient(AppsV1Api);

t.test(
  "repeated desired sets apply each Task once; a Deployment deleted behind its back comes back",
  async (t) => {
    const namespace = await testNamespace(t, cluster.kubeConfig, "krt-reapply");
    const counted = new CountingKubeConfig();
    counted.loadFromFile(cluster.kubeconfig);
    const runtime = await KubernetesRuntime.start({
      kubeConfig: counted,
      defaultNamespace: namespace,
      instance: `t${randomBytes(4).toString("hex")}`,
      agentVersion: "0.1.0-test",
      retryIntervalMs: 500,
    });
    t.teardown(() => runtime.stop());
    const tasks = Array.from({ length: 6 }, (_, i) =>
      kubeTask("reapply", `w${i}`, {
        kind: "Deployment",
        replicas: 1,
        template: {
          spec: {
            containers: [
              { name: "main", image: "registry.local/rlark/test:1", resources: { requests: { cpu: "1m" } } },
            ],
          },
        },
      }),
    );

    await runtime.apply(tasks);
    const first = counted.applies;
    t.ok(first >= tasks.length, `the first desired set applied every Task (${first} applies)`);
    // What the hub's deltas do while a revision streams in: the same Tasks again and again, at once.
    await Promise.all([runtime.apply([...tasks]), runtime.apply([...tasks]), runtime.apply([...tasks])]);
    await runtime.apply([...tasks]);
    t.equal(counted.applies, first, "the repeats applied nothing");

    await waitFor(
      "the runtime's watch shows the 6 Deployments",
      async () => ((runtime.observe().workloads ?? []).length >= tasks.length ? true : undefined),
      onKube,
    );
    await runtime.apply([...tasks]); // a reconcile that finds every workload where it was put
    const name = (await apps.listNamespacedDeployment({ namespace })).items[0]?.metadata?.name as string;
    const uid = (await apps.readNamespacedDeployment({ name, namespace })).metadata?.uid;
    await apps.deleteNamespacedDeployment({ name, namespace });
    await waitFor(
      `Deployment ${name} applied again after its deletion`,
      async () => {
        await runtime.apply([...tasks]);
        const now = await apps.readNamespacedDeployment({ name, namespace }).catch(() => undefined);
        return now?.metadata?.uid !== undefined && now.metadata.uid !== uid ? true : undefined;
      },
      onKube,
    );
    t.ok(counted.applies > first, "the deleted one was sent again");
  },
);
