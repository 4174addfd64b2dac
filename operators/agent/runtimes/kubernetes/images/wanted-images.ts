// Which images a Kubernetes Task wants on which nodes: the containers and init containers of its
// pod template, on the nodes the hub's placement counted its replicas on (the Task's
// rlark.io/placed-nodes annotation). A node the cluster does not have is skipped: the pull pod
// would wait for it forever. A container with imagePullPolicy Never is left out: its image is
// never pulled, so there is nothing to pull ahead (its pod reports ErrImageNeverPull itself).
import { PLACED_NODES_ANNOTATION } from "../../../../api/index.ts";
import type { RuntimeTask } from "../../types.ts";

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null;

/** The images of one Task's pod template that its pods may pull. */
export function taskImages(task: RuntimeTask): string[] {
  const k = task.spec.kubernetes;
  const template = isObj(k) && isObj(k.workload) ? k.workload.template : undefined;
  const spec = isObj(template) ? template.spec : undefined;
  if (!isObj(spec)) return [];
  const out: string[] = [];
  for (const list of [spec.initContainers, spec.containers]) {
    if (!Array.isArray(list)) continue;
    for (const c of list) {
      if (!isObj(c) || typeof c.image !== "string" || c.image === "" || c.imagePullPolicy === "Never")
        continue;
      out.push(c.image);
    }
  }
  return out;
}

/** The nodes named by a Task's placed-nodes annotation. */
export function placedNodes(task: RuntimeTask): string[] {
  const value = task.metadata.annotations?.[PLACED_NODES_ANNOTATION] ?? "";
  return value
    .split(",")
    .map((n) => n.trim())
    .filter((n) => n !== "");
}

/** Images wanted per node, sorted, each once. */
export function wantedImages(
  tasks: readonly RuntimeTask[],
  nodeExists: (node: string) => boolean,
): Map<string, string[]> {
  const wanted = new Map<string, Set<string>>();
  for (const task of tasks) {
    if (task.spec.agentType !== "Kubernetes") continue;
    const images = taskImages(task);
    if (images.length === 0) continue;
    for (const node of placedNodes(task)) {
      if (!nodeExists(node)) continue;
      const onNode = wanted.get(node) ?? new Set();
      for (const image of images) onNode.add(image);
      wanted.set(node, onNode);
    }
  }
  return new Map([...wanted].map(([node, images]) => [node, [...images].sort()]));
}
