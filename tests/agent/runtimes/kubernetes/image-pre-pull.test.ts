// Image pre-pull's Kubernetes pieces without a cluster: which images a Task wants on which nodes
// (its placed-nodes annotation, only nodes the cluster has, Never left out), the pull pod's spec,
// how a pull pod's state reads (kubelet's reasons as on a real node), and that pull pods do not
// count in a Node's requested. The pull itself runs on a real kubelet in
// tests/e2e/real-nodes/image-pre-pull.test.ts.
import type { V1Pod } from "@kubernetes/client-node";
import t from "tap";
import {
  NO_SUCH_COMMAND,
  pullPod,
  pullPodSelector,
  pullResult,
} from "../../../../operators/agent/runtimes/kubernetes/images/pull-pod.ts";
import { wantedImages } from "../../../../operators/agent/runtimes/kubernetes/images/wanted-images.ts";
import { requestedByNode } from "../../../../operators/agent/runtimes/kubernetes/watch/observe.ts";
import type { RuntimeTask } from "../../../../operators/agent/runtimes/types.ts";
import { PLACED_NODES_ANNOTATION } from "../../../../operators/api/index.ts";

const task = (
  name: string,
  nodes: string | undefined,
  containers: unknown[],
  init: unknown[] = [],
): RuntimeTask => ({
  metadata: {
    name,
    namespace: "agent-gpu",
    ...(nodes === undefined ? {} : { annotations: { [PLACED_NODES_ANNOTATION]: nodes } }),
  },
  spec: {
    agentType: "Kubernetes",
    kubernetes: {
      workload: { kind: "Deployment", template: { spec: { containers, initContainers: init } } },
    },
  },
});

t.test(
  "images wanted per placed node: init containers too, Never left out, unknown nodes skipped",
  async (t) => {
    const tasks = [
      task("a", "n1,n2", [{ name: "m", image: "train:1" }], [{ name: "i", image: "init:1" }]),
      task("b", "n1", [
        { name: "m", image: "train:1" },
        { name: "local", image: "local:1", imagePullPolicy: "Never" },
      ]),
      task("c", "gone", [{ name: "m", image: "other:1" }]),
      task("d", undefined, [{ name: "m", image: "unplaced:1" }]),
    ];
    const wanted = wantedImages(tasks, (node) => node === "n1" || node === "n2");
    t.same(
      Object.fromEntries(wanted),
      { n1: ["init:1", "train:1"], n2: ["init:1", "train:1"] },
      "each image once per node; a Task without the annotation or on a node the cluster lacks wants nothing",
    );
    const raw: RuntimeTask = {
      metadata: { name: "r", annotations: { [PLACED_NODES_ANNOTATION]: "n1" } },
      spec: { agentType: "Raw" },
    };
    t.same(wantedImages([raw], () => true).size, 0, "a Raw task has no images");
  },
);

t.test("the pull pod: pinned, IfNotPresent, runs nothing of the image, bounded", async (t) => {
  const pod = pullPod("real-0", "rlark.local/busybox:1", "x1", 600);
  t.match(pod.metadata, {
    generateName: "rlark-pull-",
    labels: { "rlark.io/component": "image-pre-pull", "rlark.io/agent-instance": "x1" },
  });
  t.match(pod.spec, {
    nodeName: "real-0",
    restartPolicy: "Never",
    activeDeadlineSeconds: 600,
    automountServiceAccountToken: false,
  });
  const [c] = pod.spec?.containers ?? [];
  t.match(c, { image: "rlark.local/busybox:1", imagePullPolicy: "IfNotPresent", command: [NO_SUCH_COMMAND] });
  t.match(c?.securityContext, {
    runAsNonRoot: true,
    readOnlyRootFilesystem: true,
    capabilities: { drop: ["ALL"] },
  });
  t.ok(c?.resources?.limits?.memory, "limited");
  t.equal(pullPodSelector(undefined), "rlark.io/component=image-pre-pull,!rlark.io/agent-instance");
  t.equal(pullPodSelector("x1"), "rlark.io/component=image-pre-pull,rlark.io/agent-instance=x1");
});

t.test(
  "a pull pod's state: Present once past the pull, Failed with kubelet's words, else not yet",
  async (t) => {
    const withStatus = (status: V1Pod["status"]): V1Pod => ({ status });
    const container = (state: object, imageID = "") => ({
      containerStatuses: [{ name: "pull", image: "x", imageID, ready: false, restartCount: 0, state }],
    });
    t.equal(pullResult(withStatus({ phase: "Pending" })), undefined, "nothing yet");
    t.equal(
      pullResult(withStatus(container({ waiting: { reason: "ContainerCreating" } }))),
      undefined,
      "pulling",
    );
    t.same(
      pullResult(
        withStatus(
          container({ waiting: { reason: "ErrImagePull", message: 'failed to pull and unpack image "x"' } }),
        ),
      ),
      { present: false, message: 'ErrImagePull: failed to pull and unpack image "x"' },
    );
    t.match(pullResult(withStatus(container({ waiting: { reason: "ImagePullBackOff" } }))), {
      present: false,
    });
    t.same(
      pullResult(withStatus(container({ terminated: { exitCode: 128, reason: "StartError" } }, "sha256:1"))),
      { present: true },
      "the start failed: the image is there",
    );
    t.same(pullResult(withStatus(container({ waiting: { reason: "RunContainerError" } }))), {
      present: true,
    });
    t.same(pullResult(withStatus(container({ running: {} }))), { present: true }, "kwok's fake: Running");
    t.match(
      pullResult(
        withStatus({
          phase: "Failed",
          reason: "DeadlineExceeded",
          message: "Pod was active on the node longer than the specified deadline",
        }),
      ),
      { present: false, message: /^DeadlineExceeded: Pod was active/ },
    );
  },
);

t.test("pull pods do not count in a node's requested", async (t) => {
  const pod = pullPod("n1", "x:1", undefined, 600);
  pod.status = { phase: "Pending" };
  t.equal(requestedByNode([pod]).size, 0);
});
