// Links that open a proxied page (a Task's TensorBoard) in a new tab. A new tab cannot carry the
// session's bearer token, so a click first asks the hub for a login cookie scoped to that URL's
// path (POST /api/v1/proxy-login, operators/access/proxy/proxy-login.ts), then opens the tab.
import type { Pod, Task } from "../../api/index.ts";
import { type Html, html } from "./html.mts";

/** The annotation and route of api/well-known.ts (tensorBoardPort, tensorBoardPath): the page imports no server code. */
const TENSORBOARD_PORT_ANNOTATION = "rlark.io/tensorboard-port";

const ready = (pod: Pod) =>
  pod.status?.phase === "Running" && (pod.status.containerStatuses ?? []).every((c) => c.ready === true);

/** A link to the Task's TensorBoard, only when the Task declares one and a pod of it is ready to serve it. */
export function tensorBoardLink(task: Task | undefined, pods: Pod[]): Html | string {
  if (!task?.spec.annotations?.[TENSORBOARD_PORT_ANNOTATION] || !pods.some(ready)) return "";
  const href = `/api/v1/rlinf.io/v1alpha1/tasks/${encodeURIComponent(task.metadata.name)}/tensorboard/`;
  return html`<a class="proxy-link tensorboard-link" href="${href}" target="_blank" rel="noopener">TensorBoard</a>`;
}

/**
 * Opens the link's page in a new tab once the hub has set its login cookie. The tab is opened
 * with noopener, so it gets no copy of this tab's sessionStorage (the session token): the proxied
 * page runs on the hub's origin and must not find the token there.
 */
export async function openProxyLink(link: HTMLElement, token: string): Promise<void> {
  const href = link.getAttribute("href");
  if (!href) return;
  const response = await fetch("/api/v1/proxy-login", {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ path: href }),
  }).catch(() => undefined);
  if (!response?.ok) {
    const answer = response ? ((await response.json().catch(() => ({}))) as { message?: string }) : {};
    const message = answer.message;
    link.dataset.refused = message ?? "the hub did not answer";
    link.title = `refused: ${link.dataset.refused}`;
    return;
  }
  window.open(href, "_blank", "noopener");
}
