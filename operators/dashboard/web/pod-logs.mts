// Pod logs, fetched on request from the hub (which asks the pod's agent over its tunnel) and kept
// here so the page's re-renders show them: a tail once, or a follow that streams new lines as the
// pod writes them (across its log's rotations) until stopped, cut or ended. A follow keeps only
// the newest lines, so a chatty pod cannot grow the page without bound.
import { type Html, html } from "./html.mts";

/** Lines a follow keeps on the page. */
export const FOLLOW_MAX_LINES = 1000;
/** Characters a follow keeps (a log of very long lines). */
const FOLLOW_MAX_CHARS = 256 * 1024;

type LogState =
  | { state: "loading" }
  | { state: "loaded"; text: string }
  | { state: "following"; text: string; stop: () => void }
  | { state: "ended"; text: string; message: string }
  | { state: "failed"; message: string };

const logs = new Map<string, LogState>();

const keyOf = (namespace: string, name: string) => `${namespace}/${name}`;

const logUrl = (namespace: string, name: string, query: string) =>
  `/api/v1/rlinf.io/v1alpha1/pods/${encodeURIComponent(name)}/log?namespace=${encodeURIComponent(namespace)}&${query}`;

/** The controls for one pod: tail, follow or stop, and what has been read. */
export function podLogView(namespace: string, name: string): Html {
  const log = logs.get(keyOf(namespace, name));
  const data = html`data-namespace="${namespace}" data-pod="${name}"`;
  const following = log?.state === "following";
  const buttons = html`<button type="button" class="pod-log" ${data}>${log ? "refresh log" : "show log"}</button>${
    following
      ? html`<button type="button" class="pod-log-stop" ${data}>stop following</button>`
      : html`<button type="button" class="pod-log-follow" ${data}>follow</button>`
  }`;
  if (!log) return buttons;
  if (log.state === "loading") return html`${buttons} <span class="muted">loading…</span>`;
  if (log.state === "failed") return html`${buttons} <span class="muted log-error">${log.message}</span>`;
  const note =
    log.state === "following"
      ? html` <span class="muted log-following">following…</span>`
      : log.state === "ended"
        ? html` <span class="muted log-error">${log.message}</span>`
        : "";
  return html`${buttons}${note}<pre class="log" tabindex="0" aria-label="Last lines of ${name}">${log.text || "(no output yet)"}</pre>`;
}

async function failure(response: Response): Promise<string> {
  const body = (await response.json().catch(() => ({}))) as { message?: string };
  return body.message ?? `HTTP ${response.status}`;
}

/** Fetches the last lines of a pod's output; `changed` re-renders the page as the state moves. */
export async function fetchPodLog(
  namespace: string,
  name: string,
  token: string,
  changed: () => void,
): Promise<void> {
  const key = keyOf(namespace, name);
  stopFollowing(namespace, name);
  logs.set(key, { state: "loading" });
  changed();
  try {
    const response = await fetch(logUrl(namespace, name, "tail=200"), {
      headers: { authorization: `Bearer ${token}` },
    });
    if (response.ok) logs.set(key, { state: "loaded", text: await response.text() });
    else logs.set(key, { state: "failed", message: await failure(response) });
  } catch (error) {
    logs.set(key, { state: "failed", message: error instanceof Error ? error.message : String(error) });
  }
  changed();
}

/** The newest whole lines of `text` within the page's bounds. */
function bounded(text: string): string {
  let kept = text.length > FOLLOW_MAX_CHARS ? text.slice(text.length - FOLLOW_MAX_CHARS) : text;
  if (kept !== text) kept = kept.slice(kept.indexOf("\n") + 1);
  let lines = 0;
  for (let i = kept.length - 2; i >= 0; i--) {
    if (kept[i] === "\n" && ++lines >= FOLLOW_MAX_LINES) return kept.slice(i + 1);
  }
  return kept;
}

/** Streams a pod's output from its last 200 lines on, until stopped or the hub ends it. */
export async function followPodLog(
  namespace: string,
  name: string,
  token: string,
  changed: () => void,
): Promise<void> {
  const key = keyOf(namespace, name);
  stopFollowing(namespace, name);
  const abort = new AbortController();
  let text = "";
  let stopped = false;
  const stop = () => {
    stopped = true;
    abort.abort();
  };
  logs.set(key, { state: "following", text, stop });
  changed();
  let message = "the log stream ended";
  try {
    const response = await fetch(logUrl(namespace, name, "tail=200&follow=true"), {
      headers: { authorization: `Bearer ${token}` },
      signal: abort.signal,
    });
    if (!response.ok || !response.body) {
      logs.set(key, { state: "failed", message: await failure(response) });
      changed();
      return;
    }
    const decoder = new TextDecoder();
    const reader = response.body.getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text = bounded(text + decoder.decode(value, { stream: true }));
      logs.set(key, { state: "following", text, stop });
      changed();
    }
  } catch (error) {
    // A cut follow (access revoked, the agent gone) is not the end of the log.
    message = `the follow was cut: ${error instanceof Error ? error.message : String(error)}`;
  }
  if (logs.get(key)?.state !== "following") return;
  logs.set(key, stopped ? { state: "loaded", text } : { state: "ended", text, message });
  changed();
}

export function stopFollowing(namespace: string, name: string): void {
  const log = logs.get(keyOf(namespace, name));
  if (log?.state === "following") log.stop();
}
