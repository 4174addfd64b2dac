// Pod log tails, fetched on request from the hub (which asks the pod's agent over its tunnel)
// and kept here so the page's re-renders show them until they are fetched again.
import { type Html, html } from "./html.mts";

type LogState =
  | { state: "loading" }
  | { state: "loaded"; text: string }
  | { state: "failed"; message: string };

const logs = new Map<string, LogState>();

const keyOf = (namespace: string, name: string) => `${namespace}/${name}`;

/** The control for one pod: a button, and the tail once fetched. */
export function podLogView(namespace: string, name: string): Html {
  const log = logs.get(keyOf(namespace, name));
  const button = html`<button type="button" class="pod-log" data-namespace="${namespace}" data-pod="${name}">${
    log ? "refresh log" : "show log"
  }</button>`;
  if (!log) return button;
  if (log.state === "loading") return html`${button} <span class="muted">loading…</span>`;
  if (log.state === "failed") return html`${button} <span class="muted log-error">${log.message}</span>`;
  return html`${button}<pre class="log" tabindex="0" aria-label="Last lines of ${name}">${log.text || "(no output yet)"}</pre>`;
}

/** Fetches the last lines of a pod's output; `changed` re-renders the page as the state moves. */
export async function fetchPodLog(
  namespace: string,
  name: string,
  token: string,
  changed: () => void,
): Promise<void> {
  const key = keyOf(namespace, name);
  logs.set(key, { state: "loading" });
  changed();
  try {
    const url = `/api/v1/rlinf.io/v1alpha1/pods/${encodeURIComponent(name)}/log?namespace=${encodeURIComponent(namespace)}&tail=200`;
    const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    if (response.ok) logs.set(key, { state: "loaded", text: await response.text() });
    else {
      const body = (await response.json().catch(() => ({}))) as { message?: string };
      logs.set(key, { state: "failed", message: body.message ?? `HTTP ${response.status}` });
    }
  } catch (error) {
    logs.set(key, { state: "failed", message: error instanceof Error ? error.message : String(error) });
  }
  changed();
}
