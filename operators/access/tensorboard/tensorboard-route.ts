// A Task's TensorBoard (seed 000 §19): /api/v1/rlinf.io/v1alpha1/tasks/<task>/tensorboard/<path>
// goes to the port the Task declares (annotation rlark.io/tensorboard-port) on its first ready pod,
// through the pod proxy (same access check `proxy`, audit and revocation), with the prefix taken
// off on the way in and root-relative URLs in its HTML and CSS moved under it on the way out.
import type { IncomingMessage, ServerResponse } from "node:http";
import { TENSORBOARD_PORT_ANNOTATION, tensorBoardPath, tensorBoardPort } from "../../api/index.ts";
import { type Principal, sendStatus } from "../../lib/http/index.ts";
import type { Store } from "../../lib/store/index.ts";
import type { PodProxyRoute } from "../proxy/pod-proxy.ts";

/** The route, with the task's name and the rest of the path (from its `/`, query included). */
export const TENSORBOARD_ROUTE = /^\/api\/v1\/rlinf\.io\/v1alpha1\/tasks\/([^/]+)\/tensorboard(\/.*)?$/;

export type TensorBoardTarget =
  | { namespace: string; task: string; port: number; prefix: string }
  | { status: 404 | 409; reason: string; message: string };

/** Where a Task's TensorBoard is: Task names (`<job>-<task>`) are unique across clusters. */
export async function tensorBoardTarget(store: Store, task: string): Promise<TensorBoardTarget> {
  const { items } = await store.list("Task", {});
  const found = items.filter((t) => t.metadata.name === task);
  if (found.length === 0) return { status: 404, reason: "NotFound", message: `tasks "${task}" not found` };
  if (found.length > 1)
    return {
      status: 409,
      reason: "Conflict",
      message: `task "${task}" is in ${found.map((t) => t.metadata.namespace).join(", ")}: use /api/v1/namespaces/<ns>/tasks/${task}/proxy/<port>/`,
    };
  const object = found[0] as (typeof found)[number];
  const port = tensorBoardPort(object as { spec?: { annotations?: Record<string, string> } });
  if (port === undefined)
    return {
      status: 404,
      reason: "NotFound",
      message: `task "${task}" declares no TensorBoard (annotation ${TENSORBOARD_PORT_ANNOTATION} on its task template)`,
    };
  return {
    namespace: object.metadata.namespace ?? "",
    task,
    port,
    prefix: tensorBoardPath(task).slice(0, -1),
  };
}

export type TensorBoardRoute = (
  request: { principal: Principal; task: string; path: string },
  req: IncomingMessage,
  res: ServerResponse,
) => Promise<void>;

export function tensorBoardRoute(options: { store: Store; proxy: PodProxyRoute }): TensorBoardRoute {
  return async ({ principal, task, path }, req, res) => {
    const target = await tensorBoardTarget(options.store, task);
    if ("status" in target) return sendStatus(res, target.status, target.reason, target.message);
    return options.proxy(
      {
        principal,
        namespace: target.namespace,
        kind: "task",
        name: task,
        port: target.port,
        path,
        prefix: target.prefix,
        rewrite: true,
      },
      req,
      res,
    );
  };
}
