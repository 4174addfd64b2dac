// The embodied runtime on a real kubelet (issue 24, item 4): the embodied-runtime addon's objects
// (rendered with its defaults, one robot "arm-left" of kind ros) on the real node of the shared
// real-node fleet's first cluster, images rlark/rlark and rlark/sidecar built here. The device
// plugin registers rlinf.io/device with that node's kubelet (its own /var/lib/kubelet, see
// hack/kube/real-nodes.ts) and the Node's allocatable shows the one robot; the webhook, a real pod
// the API server calls through its Service (its caBundle written by the test: the pod cannot reach
// the API server, which listens on the host's loopback only), injects devinit into a pod that requests the device;
// devinit creates the macvlan dev0 in that pod's network namespace; the container gets the
// controller's socket, the CLIs (rosctr answers from the ROS controller) and the env naming its
// device (rosctr, not camctr, for a robot); a second such pod waits (Insufficient rlinf.io/device) until the first is deleted and
// the device is back in the pool.
import { randomBytes } from "node:crypto";
import { CoreV1Api, type KubernetesObject, KubernetesObjectApi, type V1Pod } from "@kubernetes/client-node";
import t from "tap";
import { REAL_NODE_IMAGES } from "../../../hack/kube/images.ts";
import { REAL_NODE_LABEL } from "../../../hack/kube/real-nodes.ts";
import { syncCaBundle } from "../../../operators/device/index.ts";
import { realNodeFleetClusters, testNamespace } from "../../helpers/fleet.ts";
import {
  importIntoRealNodes,
  podExec,
  RLARK_IMAGE,
  rlarkImageArchives,
  SIDECAR_IMAGE,
} from "../../helpers/real-pods.ts";
import { onKube, waitFor } from "../../helpers/wait-for.ts";
import { renderWithDefaults } from "../device/addon-defaults.ts";

const [cluster] = realNodeFleetClusters();
const kc = cluster!.kubeConfig;
importIntoRealNodes(rlarkImageArchives(), [RLARK_IMAGE, SIDECAR_IMAGE]);
const core = kc.makeApiClient(CoreV1Api);
const RESOURCE = "rlinf.io/device";
/** Pods on a real node start in seconds, but the first of an image unpacks it (native snapshotter). */
const onRealPods = { attempts: 720, everyMs: 250 };

// biome-ignore lint/suspicious/noExplicitAny: the addon's manifests, edited in place as parsed YAML
type Obj = KubernetesObject & Record<string, any>;

/**
 * The addon's objects for namespace `ns`: on the real node, the robot arm-left, the API server at
 * 127.0.0.1 for the pods that talk to it (no kube-proxy here), and the cluster-scoped objects
 * named apart from a parallel run's (the webhook limited to this namespace's pods).
 */
function addonObjects(ns: string, server: string, suffix: string, target: string): Obj[] {
  const apiPort = new URL(server).port;
  const hookName = `rlark-device-webhook-${suffix}`;
  return renderWithDefaults(ns).map(({ object }) => {
    const o = object as Obj;
    if (o.kind === "ConfigMap" && o.metadata?.name === "rlark-robots")
      o.data["robots.yaml"] = "robots:\n  - name: arm-left\n    kind: ros\n";
    if (o.kind === "ClusterRole" || o.kind === "ClusterRoleBinding") {
      o.metadata!.name = `${o.metadata?.name}-${suffix}`;
      if (o.roleRef) o.roleRef.name = `${o.roleRef.name}-${suffix}`;
      for (const rule of o.rules ?? []) if (rule.resourceNames) rule.resourceNames = [hookName];
    }
    if (o.kind === "MutatingWebhookConfiguration") {
      o.metadata!.name = hookName;
      for (const hook of o.webhooks)
        hook.namespaceSelector = { matchLabels: { "kubernetes.io/metadata.name": target } };
    }
    if (o.kind === "DaemonSet" || o.kind === "Deployment") {
      const spec = o.spec.template.spec;
      spec.nodeSelector = { [REAL_NODE_LABEL]: "true" };
      spec.terminationGracePeriodSeconds = 1;
      for (const c of [...(spec.initContainers ?? []), ...spec.containers]) {
        c.env = [
          ...(c.env ?? []),
          { name: "KUBERNETES_SERVICE_HOST", value: "127.0.0.1" },
          { name: "KUBERNETES_SERVICE_PORT", value: apiPort },
        ];
        if (c.args)
          c.args = c.args.map((a: string) =>
            a === "--webhook-config=rlark-device-webhook" ? `--webhook-config=${hookName}` : a,
          );
      }
    }
    return o;
  });
}

const devicePod = (name: string): V1Pod => ({
  metadata: { name, annotations: { "rlinf.io/device-address": "192.168.77.5/24" } },
  spec: {
    nodeSelector: { [REAL_NODE_LABEL]: "true" },
    terminationGracePeriodSeconds: 1,
    containers: [
      {
        name: "main",
        image: REAL_NODE_IMAGES.busybox,
        imagePullPolicy: "Never",
        command: ["sleep", "2147483647"],
        resources: { limits: { [RESOURCE]: "1" } },
      },
    ],
  },
});

t.test("the device plugin, webhook and devinit on a real kubelet", async (t) => {
  const ns = await testNamespace(t, kc, "real-embodied");
  const target = await testNamespace(t, kc, "real-robot");
  const suffix = randomBytes(4).toString("hex");
  const objects = KubernetesObjectApi.makeApiClient(kc);
  const made = addonObjects(ns, cluster!.server, suffix, target);
  for (const o of made) {
    await objects.create(o);
    if (!o.metadata?.namespace) t.teardown(() => objects.delete(o).catch(() => undefined));
  }
  const node = (await core.listNode({ labelSelector: `${REAL_NODE_LABEL}=true` })).items[0]?.metadata
    ?.name as string;

  const allocatable = await waitFor(
    `${RESOURCE} in ${node}'s allocatable`,
    async () => {
      const n = await core.readNode({ name: node });
      return n.status?.allocatable?.[RESOURCE] === "1" ? n.status.allocatable : undefined;
    },
    onRealPods,
  );
  t.equal(allocatable[RESOURCE], "1", "one device (robot-arm-left) advertised by the plugin through kubelet");
  t.equal((await core.readNode({ name: node })).status?.capacity?.[RESOURCE], "1", "and in its capacity");

  // The API server calls the webhook's pod through its Service (at its endpoint). The pod cannot
  // write its caBundle itself here: the fleet's API servers listen on the host's 127.0.0.1 only,
  // which is not a pod's, so the test writes the CA the pod made, as the pod's own sync would.
  const hookName = `rlark-device-webhook-${suffix}`;
  const webhookPod = await waitFor(
    "the webhook's pod ready",
    async () =>
      (
        await core.listNamespacedPod({
          namespace: ns,
          labelSelector: "app.kubernetes.io/name=rlark-device-webhook",
        })
      ).items.find((p) => p.status?.containerStatuses?.[0]?.ready),
    onRealPods,
  );
  const ca = await podExec(
    kc,
    { namespace: ns, name: webhookPod.metadata?.name as string, container: "webhook" },
    [
      "/usr/local/bin/node",
      "-e",
      'process.stdout.write(require("fs").readFileSync("/var/lib/rlark-webhook/pki/ca.crt"))',
    ],
  );
  t.match(ca.stdout, /BEGIN CERTIFICATE/, "the CA the webhook's pod made");
  await syncCaBundle(kc, hookName, ca.stdout);
  const first = await waitFor(
    "a device pod admitted through the webhook",
    () => core.createNamespacedPod({ namespace: target, body: devicePod("arm-1") }).catch(() => undefined),
    onRealPods,
  );
  t.same(
    first.spec?.initContainers?.map((c) => [c.name, c.image]),
    [["devinit", SIDECAR_IMAGE]],
    "the webhook injected devinit",
  );
  await waitFor(
    "arm-1 running",
    async () => {
      const p = await core.readNamespacedPod({ namespace: target, name: "arm-1" });
      return p.status?.containerStatuses?.[0]?.ready;
    },
    onRealPods,
  );
  const inArm = (command: string[]) =>
    podExec(kc, { namespace: target, name: "arm-1", container: "main" }, command);

  // busybox's ip (the pod's image) has no -d: "dev0@eth0" is a link on top of eth0, which only
  // devinit's macvlan is
  const link = await inArm(["ip", "addr", "show", "dev0"]);
  t.equal(link.code, 0, `dev0 exists in the pod's network namespace ${link.stderr}`);
  t.match(link.stdout, /dev0@eth0/, "on top of the pod's eth0");
  t.match(link.stdout, /inet 192\.168\.77\.5\/24/, "with the pod's device address");
  t.match(link.stdout, /state UP|,UP/, "and up");

  const env = await inArm(["sh", "-c", "echo $RLARK_DEVICE_IDS $RLARK_ROBOTS $RLARK_ROS_SOCKET"]);
  t.equal(
    env.stdout.trim(),
    "robot-arm-left arm-left /var/run/rlark/devices/ros-controller.sock",
    "env names the device",
  );
  const socket = await inArm(["test", "-S", "/var/run/rlark/devices/ros-controller.sock"]);
  t.equal(socket.code, 0, "the ROS controller's socket is mounted");
  // by path: the busybox image's PATH is /bin
  const rosctr = await inArm(["/usr/local/bin/rosctr", "status", "--json"]);
  t.equal(
    rosctr.code,
    0,
    `rosctr talks to the ROS controller: ${rosctr.stdout.trim()} ${rosctr.stderr.trim()}`,
  );
  const camctr = await inArm(["test", "-e", "/usr/local/bin/camctr"]);
  t.not(camctr.code, 0, "camctr is not mounted: the pod has no camera");

  await core.createNamespacedPod({ namespace: target, body: devicePod("arm-2") });
  const waiting = await waitFor(
    "arm-2 unschedulable while arm-1 holds the device",
    async () => {
      const p = await core.readNamespacedPod({ namespace: target, name: "arm-2" });
      return p.status?.conditions?.find((c) => c.type === "PodScheduled" && c.status === "False")?.message;
    },
    onKube,
  );
  t.match(waiting, /Insufficient rlinf\.io\/device/, "the one device is taken");

  await core.deleteNamespacedPod({ namespace: target, name: "arm-1", gracePeriodSeconds: 0 });
  await waitFor(
    "arm-2 running once arm-1 is gone",
    async () => {
      const p = await core.readNamespacedPod({ namespace: target, name: "arm-2" });
      return p.status?.containerStatuses?.[0]?.ready;
    },
    onRealPods,
  );
  const second = await podExec(kc, { namespace: target, name: "arm-2", container: "main" }, [
    "sh",
    "-c",
    "echo $RLARK_DEVICE_IDS",
  ]);
  t.equal(second.stdout.trim(), "robot-arm-left", "the device went back to the pool and on to arm-2");
});
