import type { Cluster } from "../../api/index.ts";
import { type Html, html } from "./html.mts";
import type { State } from "./state.mts";
import { age } from "./time.mts";
import { phase, table } from "./widgets.mts";

const JOB_PHASES = ["Pending", "Running", "Succeeded", "Failed", "Stopping", "Stopped"] as const;

export function overviewPage(state: State): Html {
  const source = state.source;
  const clusters = state.list<Cluster>("Cluster");
  const online = clusters.filter((c) => c.status?.phase === "Online").length;
  // Counted by the hub: the page holds no Job.
  const byPhase = new Map(Object.entries(state.summary?.phases ?? {}));
  const capabilities = clusters.flatMap((c) =>
    (c.status?.capabilities ?? []).map((cap) => ({ cluster: c.metadata.name, ...cap })),
  );
  const unhealthy = capabilities.filter(
    (c) => c.health !== "READY" || (c.process && c.process !== "RUNNING"),
  );
  const errors = source?.errors ?? [];
  return html`<h1>Overview</h1>
  <section class="cards">
    <article class="card" id="card-source"><h2>Git source</h2>
      <p>${phase(source?.state)}</p>
      <p>Revision <code id="synced-revision">${source?.lastAppliedRevision?.slice(0, 12) ?? "none yet"}</code>
        ${source?.lastAppliedTime ? html`<span class="muted">applied ${age(source.lastAppliedTime)} ago</span>` : ""}</p>
      ${source?.branch ? html`<p class="muted">${source.url} · ${source.branch}</p>` : ""}
      ${source?.fetchError ? html`<p class="error">fetch failed: ${source.fetchError}</p>` : ""}
    </article>
    <article class="card"><h2>Clusters</h2>
      <p class="big"><span id="clusters-online">${online}</span> online · <span id="clusters-offline">${clusters.length - online}</span> offline</p>
      <p class="muted">${unhealthy.length === 0 ? "every capability healthy" : `${unhealthy.length} capabilities need attention`}</p>
    </article>
    <article class="card"><h2>Jobs</h2>
      <ul class="counts">${JOB_PHASES.map(
        (p) =>
          html`<li><a href="#/jobs?phase=${p}">${phase(p)} <span data-phase-count="${p}">${byPhase.get(p) ?? 0}</span></a></li>`,
      )}</ul>
    </article>
  </section>
  ${
    errors.length > 0
      ? html`<section><h2>Refused revision <code>${source?.lastAttemptedRevision?.slice(0, 12) ?? ""}</code></h2>
      <p>The last good revision stays applied until these are fixed in git.</p>
      <ul class="errors">${errors.map(
        (e) =>
          html`<li><code>${e.file ?? ""}${e.line ? `:${e.line}` : ""}${e.column ? `:${e.column}` : ""}</code> ${e.object ? html`<strong>${e.object}</strong> ` : ""}${e.message ?? ""} ${e.rule ? html`<span class="muted">(${e.rule})</span>` : ""}</li>`,
      )}</ul></section>`
      : ""
  }
  <section><h2>Capabilities</h2>
  ${table(
    ["Cluster", "Capability", "Process", "Health", "Message"],
    capabilities.map(
      (c) =>
        html`<tr><td>${c.cluster}</td><td>${c.name}</td><td>${c.process ?? ""}</td><td>${phase(c.health)}</td><td>${c.message ?? ""}</td></tr>`,
    ),
  )}</section>`;
}
