// Server-side applies one rendered Task's objects, replacing a Job whose pod template cannot
// change in place.
import { type KubernetesObject, type KubernetesObjectApi, PatchStrategy } from "@kubernetes/client-node";
import { AGENT_FIELD_MANAGER, TASK_UID_ANNOTATION } from "../../../../api/index.ts";
import type { Logger } from "../../../../lib/logger.ts";
import { apiErrorCode, describeApiError } from "../api-error.ts";
import type { AnyWorkload } from "../watch/observe.ts";
import type { WatchedCollection } from "../watch/watched-collection.ts";
import { deleteObject } from "./delete-object.ts";
import { objectKey } from "./object-key.ts";
import type { RenderedTask } from "./render.ts";

export interface ApplyTaskContext {
  objects: KubernetesObjectApi;
  /** The watched Jobs: a Job of an earlier Task under the same name is replaced. */
  jobs: WatchedCollection<AnyWorkload> | undefined;
  logger: Logger;
  /** A 404 means the namespace was deleted behind our back: forget it was made. */
  namespaceGone: (namespace: string) => void;
}

/**
 * Done; to be tried again (a Job not yet gone); refused as invalid (422: the Task's own fault);
 * or failed for now (the API server's error: down, out of space, forbidden), tried again.
 */
export type ApplyOutcome = "applied" | "retry" | { invalid: string } | { failed: string };

/** Applies one Task's objects (see ApplyOutcome). */
export async function applyTask(context: ApplyTaskContext, r: RenderedTask): Promise<ApplyOutcome> {
  const { objects, jobs, logger } = context;
  for (const obj of r.objects) {
    if (obj.kind === "Job" && !(await jobReady(context, obj))) return "retry";
    try {
      await objects.patch(
        obj,
        undefined,
        undefined,
        AGENT_FIELD_MANAGER,
        true,
        PatchStrategy.ServerSideApply,
      );
    } catch (err) {
      if (apiErrorCode(err) === 422) {
        // a Job's pod template cannot change: replace the Job; anything else is the Task's fault
        const existing =
          obj.kind === "Job" ? jobs?.get(obj.metadata?.namespace ?? "", obj.metadata?.name ?? "") : undefined;
        if (existing) {
          await deleteObject(objects, logger, obj);
          return "retry";
        }
        return { invalid: `${obj.kind} ${obj.metadata?.name}: ${describeApiError(err)}` };
      }
      // the namespace was deleted behind our back: make it again on the retry
      if (apiErrorCode(err) === 404) context.namespaceGone(r.namespace);
      const error = describeApiError(err);
      logger.warn("apply failed", { task: r.task, object: objectKey(obj), error });
      return { failed: `${obj.kind} ${obj.metadata?.name}: ${error}` };
    }
  }
  return "applied";
}

/** A Job from an earlier Task under the same name (other uid) is deleted before the new one is made. */
async function jobReady(context: ApplyTaskContext, obj: KubernetesObject): Promise<boolean> {
  const existing = context.jobs?.get(obj.metadata?.namespace ?? "", obj.metadata?.name ?? "");
  if (!existing) return true;
  if (existing.metadata?.deletionTimestamp) return false;
  const uid = obj.metadata?.annotations?.[TASK_UID_ANNOTATION];
  const had = existing.metadata?.annotations?.[TASK_UID_ANNOTATION];
  if (uid && had && uid !== had) {
    await deleteObject(context.objects, context.logger, existing);
    return false;
  }
  return true;
}
