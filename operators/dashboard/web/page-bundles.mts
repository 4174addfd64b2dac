// Bundles (docs/bundles.md): the list with each Bundle's phase over its clusters, and a Bundle's
// page with, per cluster, the revision applied, phase and last error, and per object its health,
// drifted fields and message, all from the Bundle's status (the releases' copied in by the hub).
import type { Bundle, BundleClusterStatus } from "../../api/index.ts";
import { type Html, html } from "./html.mts";
import { sourceLink } from "./source-link.mts";
import type { State } from "./state.mts";
import { phase, table } from "./widgets.mts";

const short = (revision: string | undefined) => (revision ? revision.slice(0, 7) : "");

function readyCount(clusters: readonly BundleClusterStatus[]): string {
  return `${clusters.filter((c) => c.phase === "Ready").length}/${clusters.length} Ready`;
}

export function bundlesPage(state: State): Html {
  const rows = state.list<Bundle>("Bundle").map((bundle) => {
    const name = bundle.metadata.name;
    const clusters = bundle.status?.clusters ?? [];
    return html`<tr data-bundle="${name}"><td><a href="#/bundles/${encodeURIComponent(name)}">${name}</a></td>
      <td><code>${bundle.spec.namespace}</code></td><td>${phase(bundle.status?.phase ?? "Pending")}</td>
      <td>${readyCount(clusters)}</td><td>${bundle.spec.objects?.length ?? 0}</td>
      <td>${bundle.status?.message ?? ""}</td><td>${sourceLink(bundle, state.repoWeb)}</td></tr>`;
  });
  return html`<h1>Bundles</h1>${table(["Bundle", "Namespace", "Phase", "Clusters", "Objects", "Message", "Source"], rows)}`;
}

export function bundlePage(state: State, name: string): Html {
  const bundle = state.get<Bundle>("Bundle", undefined, name);
  if (!bundle)
    return html`<h1>Bundle ${name}</h1><p class="muted">no such Bundle</p><p><a href="#/bundles">← all Bundles</a></p>`;
  const clusters = bundle.status?.clusters ?? [];
  const objectRows = clusters.flatMap((c) =>
    (c.objects ?? []).map(
      (o) =>
        html`<tr data-object="${c.cluster}/${o.kind}/${o.name}"><td>${c.cluster}</td><td>${o.kind} <code>${o.name}</code></td>
        <td>${phase(o.health)}</td><td>${(o.drifted ?? []).map((d) => html`<code class="drifted">${d}</code> `)}</td>
        <td>${o.message ?? ""}</td></tr>`,
    ),
  );
  return html`<h1>Bundle ${name}</h1>
  <p><a href="#/bundles">← all Bundles</a> · ${phase(bundle.status?.phase ?? "Pending")} · namespace <code>${bundle.spec.namespace}</code>
    · prune ${bundle.spec.prune === false ? "off" : "on"} · ${sourceLink(bundle, state.repoWeb)}</p>
  ${table(
    ["Cluster", "Phase", "Revision applied", "Last error or what is not ready"],
    clusters.map(
      (c) =>
        html`<tr data-bundle-cluster="${c.cluster}"><td>${c.cluster}</td><td>${phase(c.phase ?? "Pending")}</td>
        <td><code>${short(c.revision)}</code></td><td>${c.message ?? ""}</td></tr>`,
    ),
    "Clusters",
  )}
  ${table(["Cluster", "Object", "Health", "Drifted fields", "Message"], objectRows, "Objects")}`;
}
