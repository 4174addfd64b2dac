// Workloads run end to end on a real control plane: the controller-manager makes the pods, the
// scheduler binds them to kwok's fake nodes, kwok plays the kubelet (Running, pod IPs).
import { AppsV1Api, BatchV1Api, CoreV1Api, type V1Pod } from "@kubernetes/client-node";
import t from "tap";
import { fleetCluster, testNamespace } from "../../helpers/fleet.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const { kubeConfig: kc } = fleetCluster(0);
const core = kc.makeApiClient(CoreV1Api);
const apps = kc.makeApiClient(AppsV1Api);
const batch = kc.makeApiClient(BatchV1Api);

const podTemplate = (labels: Record<string, string>) => ({
  metadata: { labels },
  spec: { containers: [{ name: "main", image: "registry.local/rlark/test:1" }] },
});

async function kwokNodes(): Promise<Set<string>> {
  const nodes = await core.listNode();
  return new Set(
    nodes.items
      .filter((n) => n.metadata?.annotations?.["kwok.x-k8s.io/node"] === "fake")
      .map((n) => n.metadata?.name ?? ""),
  );
}

const running = (p: V1Pod): boolean =>
  p.status?.phase === "Running" && Boolean(p.status.podIP) && Boolean(p.spec?.nodeName);

t.test("a Deployment of 3 replicas becomes 3 Running pods with pod IPs on kwok nodes", async (t) => {
  const namespace = await testNamespace(t, kc, "deploy");
  const labels = { app: "web" };
  await apps.createNamespacedDeployment({
    namespace,
    body: {
      metadata: { name: "web" },
      spec: { replicas: 3, selector: { matchLabels: labels }, template: podTemplate(labels) },
    },
  });
  const pods = await waitFor(
    "3 Running pods",
    async () => {
      const list = await core.listNamespacedPod({ namespace, labelSelector: "app=web" });
      const up = list.items.filter(running);
      return up.length === 3 ? up : undefined;
    },
    onKube,
  );
  const nodes = await kwokNodes();
  t.ok(nodes.size >= 1, "the cluster has kwok nodes");
  for (const pod of pods) {
    t.ok(
      nodes.has(pod.spec?.nodeName ?? ""),
      `${pod.metadata?.name} runs on kwok node ${pod.spec?.nodeName}`,
    );
    t.match(pod.status?.podIP, /^\d+\.\d+\.\d+\.\d+$/, "it has a pod IP");
    t.ok(pod.metadata?.ownerReferences?.[0]?.kind === "ReplicaSet", "a ReplicaSet owns it");
  }
  t.equal(new Set(pods.map((p) => p.status?.podIP)).size, 3, "the pod IPs are distinct");
  const deployment = await waitFor(
    "the Deployment to report 3 available replicas",
    async () => {
      const d = await apps.readNamespacedDeployment({ name: "web", namespace });
      return d.status?.availableReplicas === 3 ? d : undefined;
    },
    onKube,
  );
  t.equal(deployment.status?.readyReplicas, 3);
});

t.test("a StatefulSet rolls out its ordered pods", async (t) => {
  const namespace = await testNamespace(t, kc, "sts");
  const labels = { app: "db" };
  await apps.createNamespacedStatefulSet({
    namespace,
    body: {
      metadata: { name: "db" },
      spec: {
        replicas: 2,
        serviceName: "db",
        selector: { matchLabels: labels },
        template: podTemplate(labels),
      },
    },
  });
  const sts = await waitFor(
    "the StatefulSet to roll out",
    async () => {
      const s = await apps.readNamespacedStatefulSet({ name: "db", namespace });
      const st = s.status;
      return st?.readyReplicas === 2 && st.updatedReplicas === 2 && st.currentRevision === st.updateRevision
        ? s
        : undefined;
    },
    onKube,
  );
  t.equal(sts.status?.replicas, 2);
  const pods = await core.listNamespacedPod({ namespace, labelSelector: "app=db" });
  t.same(pods.items.map((p) => p.metadata?.name).sort(), ["db-0", "db-1"], "pods are named by ordinal");
  t.ok(pods.items.every(running), "both pods run");
});

t.test("a DaemonSet rolls out one pod per node", async (t) => {
  const namespace = await testNamespace(t, kc, "ds");
  const labels = { app: "agent" };
  await apps.createNamespacedDaemonSet({
    namespace,
    body: {
      metadata: { name: "agent" },
      spec: { selector: { matchLabels: labels }, template: podTemplate(labels) },
    },
  });
  const nodes = await kwokNodes();
  const ds = await waitFor(
    "the DaemonSet to roll out",
    async () => {
      const d = await apps.readNamespacedDaemonSet({ name: "agent", namespace });
      const st = d.status;
      return st && st.desiredNumberScheduled === nodes.size && st.numberReady === nodes.size ? d : undefined;
    },
    onKube,
  );
  t.equal(ds.status?.numberAvailable, nodes.size);
  const pods = await core.listNamespacedPod({ namespace, labelSelector: "app=agent" });
  t.same(
    pods.items.map((p) => p.spec?.nodeName).sort(),
    [...nodes].sort(),
    "exactly one pod on every kwok node",
  );
});

t.test("a batch Job creates its pod and completes", async (t) => {
  const namespace = await testNamespace(t, kc, "job");
  await batch.createNamespacedJob({
    namespace,
    body: {
      metadata: { name: "once" },
      spec: {
        backoffLimit: 0,
        template: {
          spec: {
            restartPolicy: "Never",
            containers: [{ name: "main", image: "registry.local/rlark/test:1" }],
          },
        },
      },
    },
  });
  const pod = await waitFor(
    "the Job's pod",
    async () => {
      const list = await core.listNamespacedPod({
        namespace,
        labelSelector: "batch.kubernetes.io/job-name=once",
      });
      return list.items[0];
    },
    onKube,
  );
  t.equal(pod.metadata?.ownerReferences?.[0]?.kind, "Job", "the Job owns the pod");
  // kwok's pod-complete stage finishes pods owned by a Job, so the Job succeeds
  const job = await waitFor(
    "the Job to succeed",
    async () => {
      const j = await batch.readNamespacedJob({ name: "once", namespace });
      return j.status?.succeeded === 1 ? j : undefined;
    },
    onKube,
  );
  t.ok(
    job.status?.conditions?.some((c) => c.type === "Complete" && c.status === "True"),
    "the Job is Complete",
  );
});
