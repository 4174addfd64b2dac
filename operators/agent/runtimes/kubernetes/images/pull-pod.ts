// A pre-pull on a Kubernetes node (docs/adr/0012-image-pre-pull.md): a short-lived pod pinned to
// the node (nodeName, so no scheduler and no placement of its own) whose one container is the
// image with imagePullPolicy IfNotPresent. kubelet
// pulls it through the node's own runtime and credentials, from what that runtime can reach;
// the container's state tells the result: started, or failed to start, means the node holds the
// image (kubelet creates a container only from an image it has), ErrImagePull and its kin carry
// the runtime's message. No code of the image runs: the command is a path no image has, so the
// start fails at once, in the agent's namespace, as nobody, without a token. The pod is deleted
// once its answer is read, and on the way out.
import type { CoreV1Api, V1Pod } from "@kubernetes/client-node";
import { AGENT_INSTANCE_LABEL, COMPONENT_LABEL, IMAGE_PRE_PULL_COMPONENT } from "../../../../api/index.ts";
import type { Clock } from "../../../../lib/clock.ts";
import { apiErrorCode, describeApiError } from "../api-error.ts";

/** The label value that marks pull pods (and lets a restarted agent find its leftovers). */
export const PULL_POD_COMPONENT = IMAGE_PRE_PULL_COMPONENT;

/** The pull pod's command: a path no image has, so nothing of the image ever runs. */
export const NO_SUCH_COMMAND = "/.rlark-image-pre-pull/does-not-run";

/** Waiting reasons that mean the image could not be had: kubelet's image manager's. */
const PULL_FAILURES = new Set([
  "ErrImagePull",
  "ImagePullBackOff",
  "InvalidImageName",
  "ErrImageNeverPull",
  "RegistryUnavailable",
  "ImageInspectError",
]);
/** Waiting reasons kubelet gives only after the image is on the node (it pulls before it creates). */
const PAST_THE_PULL = new Set([
  "CreateContainerConfigError",
  "CreateContainerError",
  "RunContainerError",
  "CrashLoopBackOff",
  "StartError",
]);

export interface PullPodOptions {
  core: CoreV1Api;
  namespace: string;
  instance?: string | undefined;
  clock: Clock;
  /** How often the pod is read while its pull runs. Default 1 s. */
  pollMs?: number;
  /** The pod's activeDeadlineSeconds: a pull that takes longer fails. Default 600. */
  deadlineSeconds?: number;
}

export function pullPodLabels(instance: string | undefined): Record<string, string> {
  return { [COMPONENT_LABEL]: PULL_POD_COMPONENT, ...(instance ? { [AGENT_INSTANCE_LABEL]: instance } : {}) };
}

/** The selector of this runtime's pull pods (another instance's are not its to delete). */
export function pullPodSelector(instance: string | undefined): string {
  return `${COMPONENT_LABEL}=${PULL_POD_COMPONENT},${instance ? `${AGENT_INSTANCE_LABEL}=${instance}` : `!${AGENT_INSTANCE_LABEL}`}`;
}

export function pullPod(
  node: string,
  image: string,
  instance: string | undefined,
  deadlineSeconds: number,
): V1Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { generateName: "rlark-pull-", labels: pullPodLabels(instance) },
    spec: {
      nodeName: node,
      restartPolicy: "Never",
      activeDeadlineSeconds: deadlineSeconds,
      terminationGracePeriodSeconds: 0,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      // the Task's pods may tolerate the node's taints; the pull must get there as they would
      tolerations: [{ operator: "Exists" }],
      containers: [
        {
          name: "pull",
          image,
          imagePullPolicy: "IfNotPresent",
          // never runs: the start fails at once (StartError), after the pull, which is all we need
          command: [NO_SUCH_COMMAND],
          resources: {
            requests: { cpu: "1m", memory: "4Mi" },
            limits: { cpu: "100m", memory: "32Mi" },
          },
          securityContext: {
            allowPrivilegeEscalation: false,
            capabilities: { drop: ["ALL"] },
            runAsNonRoot: true,
            runAsUser: 65534,
            runAsGroup: 65534,
            readOnlyRootFilesystem: true,
            seccompProfile: { type: "RuntimeDefault" },
          },
        },
      ],
    },
  };
}

/** Present, Failed with the runtime's words, or still to be seen (undefined). */
export function pullResult(pod: V1Pod): { present: true } | { present: false; message: string } | undefined {
  const status = pod.status?.containerStatuses?.[0];
  const waiting = status?.state?.waiting;
  if (waiting?.reason && PULL_FAILURES.has(waiting.reason))
    return { present: false, message: `${waiting.reason}: ${waiting.message ?? "no message from kubelet"}` };
  if (status?.state?.running || status?.state?.terminated || status?.imageID) return { present: true };
  if (waiting?.reason && PAST_THE_PULL.has(waiting.reason)) return { present: true };
  if (pod.status?.phase === "Succeeded") return { present: true };
  if (pod.status?.phase === "Failed")
    return {
      present: false,
      message: `${pod.status.reason ?? "Failed"}: ${pod.status.message ?? "the pull pod failed before its container was created"}`,
    };
  return undefined;
}

function sleep(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = clock.setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done() {
      clock.clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}

async function deletePod(core: CoreV1Api, namespace: string, name: string): Promise<void> {
  try {
    await core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 });
  } catch (err) {
    if (apiErrorCode(err) !== 404) throw err;
  }
}

/** Pulls `image` onto `node` with a pull pod; rejects with kubelet's (the runtime's) message. */
export async function pullWithPod(
  options: PullPodOptions,
  node: string,
  image: string,
  signal: AbortSignal,
): Promise<void> {
  const { core, namespace, clock } = options;
  const deadlineSeconds = options.deadlineSeconds ?? 600;
  let created: V1Pod;
  try {
    created = await core.createNamespacedPod({
      namespace,
      body: pullPod(node, image, options.instance, deadlineSeconds),
    });
  } catch (err) {
    throw new Error(
      `the pull pod could not be created: ${describeApiError(err, `namespaces/${namespace}/pods`)}`,
    );
  }
  const name = created.metadata?.name ?? "";
  // kubelet enforces the pod's deadline; a node whose kubelet is gone never does, and its pull
  // must not hold a place among the few that run at once
  let pod: V1Pod | undefined;
  const giveUpAt = clock.now() + (deadlineSeconds + 60) * 1000;
  try {
    for (;;) {
      if (signal.aborted) throw new Error("no longer wanted");
      if (clock.now() >= giveUpAt)
        throw new Error(
          `no answer from the node's kubelet within ${deadlineSeconds + 60} s (the pull pod stayed ${pod?.status?.phase ?? "unread"})`,
        );
      try {
        pod = await core.readNamespacedPod({ name, namespace });
      } catch (err) {
        if (apiErrorCode(err) === 404) throw new Error(`the pull pod ${namespace}/${name} was deleted`);
        throw new Error(describeApiError(err, `namespaces/${namespace}/pods/${name}`));
      }
      const result = pullResult(pod);
      if (result?.present) return;
      if (result) throw new Error(result.message);
      await sleep(clock, options.pollMs ?? 1000, signal);
    }
  } finally {
    await deletePod(core, namespace, name).catch(() => undefined);
  }
}

/**
 * Deletes this runtime's pull pods left by an agent that stopped mid-pull (list and delete: the
 * agent's role has no deletecollection).
 */
export async function deleteLeftoverPullPods(
  core: CoreV1Api,
  namespace: string,
  instance: string | undefined,
): Promise<number> {
  const list = await core.listNamespacedPod({ namespace, labelSelector: pullPodSelector(instance) });
  for (const pod of list.items) await deletePod(core, namespace, pod.metadata?.name ?? "");
  return list.items.length;
}
