// Deletes what carries this runtime's labels but is no longer desired: workloads (from the
// watches), their companions (listed each time) and the claims of Tasks that are gone.
import type { KubernetesObject, KubernetesObjectApi } from "@kubernetes/client-node";
import { TASK_NAME_LABEL } from "../../../../api/index.ts";
import type { Logger } from "../../../../lib/logger.ts";
import type { RuntimeTask } from "../../types.ts";
import { describeApiError } from "../api-error.ts";
import { type ClusterWatches, WORKLOADS } from "../watch/watches.ts";
import { deleteObject } from "./delete-object.ts";
import { objectKey } from "./object-key.ts";

/** Kinds rendered next to workloads, pruned by label but not watched. */
const COMPANIONS = [
  { apiVersion: "v1", kind: "Service" },
  { apiVersion: "v1", kind: "ConfigMap" },
];

export interface PruneContext {
  objects: KubernetesObjectApi;
  watches: Pick<ClusterWatches, "workloads" | "volumes">;
  /** Selects the objects this runtime owns. */
  selector: string;
  logger: Logger;
  /** Read when the claims are reached, so a Task desired meanwhile keeps its claims. */
  desired: () => readonly RuntimeTask[] | undefined;
}

/** Deletes every labelled object not in `keep` (unless its Task is in `keepTasks`); false on failures. */
export async function prune(
  context: PruneContext,
  keep: Set<string>,
  keepTasks: Set<string>,
): Promise<boolean> {
  const { objects, watches, logger } = context;
  const candidates: KubernetesObject[] = [];
  for (const [kind, collection] of watches.workloads) {
    const apiVersion = WORKLOADS.find((w) => w.kind === kind)?.apiVersion ?? "";
    for (const obj of collection.values()) candidates.push({ ...obj, apiVersion, kind });
  }
  let ok = true;
  for (const c of COMPANIONS) {
    try {
      const list = await objects.list(
        c.apiVersion,
        c.kind,
        undefined,
        undefined,
        undefined,
        undefined,
        undefined,
        context.selector,
      );
      for (const obj of list.items) candidates.push({ ...obj, apiVersion: c.apiVersion, kind: c.kind });
    } catch (err) {
      logger.warn("list failed", { kind: c.kind, error: describeApiError(err) });
      ok = false;
    }
  }
  for (const obj of candidates) {
    const task = obj.metadata?.labels?.[TASK_NAME_LABEL] ?? "";
    if (keep.has(objectKey(obj)) || keepTasks.has(task) || obj.metadata?.deletionTimestamp) continue;
    if (!(await deleteObject(objects, logger, obj))) ok = false;
  }
  // the claims of Tasks no longer desired: ephemeral ones go with their pods anyway, the
  // rest would outlive them; pvc-protection holds each until no pod uses it
  const desiredTaskNames = new Set<string>();
  for (const t of context.desired() ?? []) desiredTaskNames.add(t.metadata.name);
  for (const pvc of watches.volumes.values()) {
    const task = pvc.metadata?.labels?.[TASK_NAME_LABEL] ?? "";
    if (desiredTaskNames.has(task) || pvc.metadata?.deletionTimestamp) continue;
    if (!(await deleteObject(objects, logger, { ...pvc, apiVersion: "v1", kind: "PersistentVolumeClaim" })))
      ok = false;
  }
  return ok;
}
