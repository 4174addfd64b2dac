// Where an object comes from in git: `rlark.io/source-file` (path:line) at `rlark.io/source-revision`,
// linked to the repository's web view when the hub knows one.
import type { KubeObject } from "../../lib/kube-object.ts";
import { type Html, html } from "./html.mts";
import type { RepoWeb } from "./state.mts";

export function sourceLink(object: KubeObject, repoWeb: RepoWeb | null): Html {
  const file = object.metadata.annotations?.["rlark.io/source-file"];
  if (!file) return html`<span class="muted">not from git</span>`;
  const revision = object.metadata.annotations?.["rlark.io/source-revision"] ?? "";
  const match = /^(.*):(\d+)$/.exec(file);
  const path = match?.[1] ?? file;
  const line = match?.[2] ?? "1";
  const label = html`<code>${file}</code>${revision ? html` @ <code>${revision.slice(0, 7)}</code>` : ""}`;
  if (!repoWeb || !revision) return html`<span class="source">${label}</span>`;
  const encoded = path.split("/").map(encodeURIComponent).join("/");
  const href =
    repoWeb.style === "gitea"
      ? `${repoWeb.base}/src/commit/${revision}/${encoded}#L${line}`
      : `${repoWeb.base}/blob/${revision}/${encoded}#L${line}`;
  return html`<a class="source" href="${href}" rel="noopener noreferrer" target="_blank">${label}</a>`;
}
