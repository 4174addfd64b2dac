import type { KubernetesObject, KubernetesObjectApi } from "@kubernetes/client-node";
import type { Logger } from "../../../../lib/logger.ts";
import { apiErrorCode, describeApiError } from "../api-error.ts";
import { objectKey } from "./object-key.ts";

/** Deletes one object; true when it is gone or going, false (logged) when the delete failed. */
export async function deleteObject(
  objects: KubernetesObjectApi,
  logger: Logger,
  obj: KubernetesObject,
): Promise<boolean> {
  try {
    await objects.delete(
      {
        apiVersion: obj.apiVersion,
        kind: obj.kind,
        metadata: { name: obj.metadata?.name, namespace: obj.metadata?.namespace },
      },
      undefined,
      undefined,
      undefined,
      undefined,
      // the workload stays, terminating, until its pods are gone: the Task's stop is visible
      "Foreground",
    );
    return true;
  } catch (err) {
    if (apiErrorCode(err) === 404) return true;
    logger.warn("delete failed", { object: objectKey(obj), error: describeApiError(err) });
    return false;
  }
}
