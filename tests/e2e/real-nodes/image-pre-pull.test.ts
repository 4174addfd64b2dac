// Image pre-pull on a real node (issue 24 item 5, seed 001 §4.1; docs/adr/0012-image-pre-pull.md):
// a hub places a Job's two tasks on the shared real-node fleet's real-0 (their nodeSelector), so
// their Tasks carry rlark.io/placed-nodes=real-0; the kubernetes-runtime agent (the shipped role)
// pulls their images there with pull pods, through the node's own kubelet and containerd. The
// image imported on the node is Present; one on a registry nothing listens on is Failed with
// containerd's words, retried, and holds no pod back; the pull pods are deleted once read.
import { CoreV1Api } from "@kubernetes/client-node";
import t from "tap";
import { REAL_NODE_IMAGES } from "../../../hack/kube/images.ts";
import {
  PULL_POD_COMPONENT,
  pullPodSelector,
} from "../../../operators/agent/runtimes/kubernetes/images/index.ts";
import { pullWithPod } from "../../../operators/agent/runtimes/kubernetes/images/pull-pod.ts";
import type { ImagePull, Node } from "../../../operators/api/index.ts";
import { PLACED_NODES_ANNOTATION } from "../../../operators/api/index.ts";
import { FakeClock } from "../../../operators/lib/clock.ts";
import { realNodeFleetClusters, testNamespace } from "../../helpers/fleet.ts";
import { startFleetKubeAgent } from "../../helpers/fleet-agent-identity.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { jobYaml } from "../../helpers/job-yaml.ts";
import { realBusyboxTaskYaml } from "../../helpers/real-pods.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";

const [cluster] = realNodeFleetClusters();
const kc = cluster!.kubeConfig;
/** A registry address nothing listens on: the pull is refused at once, with containerd's message. */
const UNREACHABLE = "127.0.0.1:1/rlark/pre-pull-missing:1";
const sleeper = `                  command: ["sh", "-c", "sleep 2147483647 & wait"]\n`;

t.test("a Task's images are pulled onto its placed real node ahead of its pods", async (t) => {
  const namespace = await testNamespace(t, kc, "real-prepull");
  const { hub } = await startHubOnGit(t, {
    files: {
      "cluster.yaml":
        "apiVersion: rlinf.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: gpu\nspec:\n  runtime: kubernetes\n",
      "job.yaml": jobYaml("prepull", [
        realBusyboxTaskYaml("present", namespace, sleeper, "", { pullPolicy: "IfNotPresent" }),
        realBusyboxTaskYaml("missing", namespace, sleeper, "", {
          image: UNREACHABLE,
          pullPolicy: "IfNotPresent",
        }),
      ]),
    },
  });
  await waitFor("the cluster from git", async () => hub.store.get("Cluster", undefined, "gpu"), onKube);
  await startFleetKubeAgent(t, hub, kc, namespace, "gpu", {
    runtime: { imagePrePull: { retryMs: 500, pollMs: 200 } },
  });

  const tasks = (await hub.store.list("Task", { namespace: "agent-gpu" })).items;
  t.same(
    tasks.map((task) => task.metadata.annotations?.[PLACED_NODES_ANNOTATION]),
    ["real-0", "real-0"],
    "placement put both on real-0, and the Tasks say so",
  );

  const pullOf = (node: Node | undefined, image: string): ImagePull | undefined =>
    node?.status?.images?.find((i) => i.image === image);
  const node = await waitFor(
    "real-0's images on the hub: the imported one Present, the unreachable one Failed twice",
    async () => {
      const n = (await hub.store.get("Node", "agent-gpu", "real-0")) as Node | undefined;
      const failed = pullOf(n, UNREACHABLE);
      return pullOf(n, REAL_NODE_IMAGES.busybox)?.phase === "Present" &&
        failed?.phase === "Failed" &&
        (failed.attempts ?? 0) >= 2
        ? n
        : undefined;
    },
    onKube,
  );
  const failed = pullOf(node, UNREACHABLE);
  // kubelet's reason, then containerd's own message
  t.match(failed?.message, /^(ErrImagePull|ImagePullBackOff): /, failed?.message ?? "");
  t.match(failed?.message, /127\.0\.0\.1:1/, "it names the registry it could not reach");
  t.match(failed?.message, /connection refused|failed to (pull|resolve|do request)/i);
  const presentAt = Date.parse(pullOf(node, REAL_NODE_IMAGES.busybox)?.lastTransitionTime ?? "");
  t.ok(presentAt, "with its time");
  const createdAt = Date.parse(
    tasks.find((x) => (x.spec as { task?: string }).task === "present")?.metadata.creationTimestamp ?? "",
  );
  t.comment(`figure: the imported image Present ${presentAt - createdAt} ms after its Task was created`);
  const kwok = (await hub.store.list("Node", { namespace: "agent-gpu" })).items.filter(
    (n) => n.metadata.name !== "real-0",
  ) as Node[];
  t.same(
    kwok.map((n) => n.status?.images),
    kwok.map(() => undefined),
    "nothing is pulled on a node the Tasks were not placed on",
  );

  const core = kc.makeApiClient(CoreV1Api);
  await waitFor(
    "the Task with the imported image Running on real-0, the failed pull holding nothing back",
    async () =>
      (await core.listNamespacedPod({ namespace })).items.some(
        (p) =>
          p.metadata?.labels?.["rlinf.io/task"] === "present" &&
          p.spec?.nodeName === "real-0" &&
          p.status?.phase === "Running",
      ),
    onKube,
  );
  // pull pods are deleted once read: none is left for the Present image, and each retry of the
  // failed one replaced the one before (at most one at a time)
  const pullPods = async () =>
    (await core.listNamespacedPod({ namespace, labelSelector: `rlark.io/component=${PULL_POD_COMPONENT}` }))
      .items;
  await waitFor(
    "no pull pod left for the Present image",
    async () => !(await pullPods()).some((p) => p.spec?.containers[0]?.image === REAL_NODE_IMAGES.busybox),
    onKube,
  );
  const forMissing = (await pullPods()).filter((p) => p.spec?.containers[0]?.image === UNREACHABLE);
  t.ok(forMissing.length <= 1, `${forMissing.length} pull pod(s) for the unreachable image`);
  t.ok(
    forMissing.every(
      (p) => p.spec?.nodeName === "real-0" && p.spec.containers[0]?.imagePullPolicy === "IfNotPresent",
    ),
    "pinned to the node, pulling only what is not there",
  );
});

t.test(
  "a pull on a node whose kubelet never answers gives up after the deadline, and its pod goes",
  async (t) => {
    const namespace = await testNamespace(t, kc, "real-prepull-gone");
    const core = kc.makeApiClient(CoreV1Api);
    const clock = new FakeClock(Date.now());
    // the API server takes a pod bound to a node it does not have; no kubelet ever answers for it
    const pull = pullWithPod(
      { core, namespace, instance: undefined, clock, pollMs: 1000, deadlineSeconds: 30 },
      "no-such-node",
      REAL_NODE_IMAGES.busybox,
      new AbortController().signal,
    );
    let outcome: Error | undefined;
    pull.then(
      () => undefined,
      (error: Error) => {
        outcome = error;
      },
    );
    const pods = async () =>
      (await core.listNamespacedPod({ namespace, labelSelector: pullPodSelector(undefined) })).items;
    await waitFor("the pull pod, Pending", async () => (await pods()).length === 1, onKube);
    await waitFor("the pull waiting on the clock", async () => clock.pending > 0, onKube);
    clock.advance(89_000);
    await waitFor("a read after 89 s", async () => clock.pending > 0, onKube);
    clock.advance(1_000);
    const error = await waitFor(
      "the pull given up",
      async () => {
        if (clock.pending > 0) clock.advance(1_000);
        return outcome;
      },
      onKube,
    );
    t.match(error?.message, /no answer from the node's kubelet within 90 s \(the pull pod stayed Pending\)/);
    t.same(await pods(), [], "the pull pod deleted");
  },
);
