import type { Addon, Domain, DomainPeer } from "../../api/index.ts";
import { type Html, html } from "./html.mts";
import { sourceLink } from "./source-link.mts";
import { clusterOf, type State } from "./state.mts";
import { phase, table } from "./widgets.mts";

export function domainsPage(state: State): Html {
  const peers = state.list<DomainPeer>("DomainPeer");
  return html`<h1>Domains</h1>
  ${state.list<Domain>("Domain").map((domain) => {
    const name = domain.metadata.name;
    const mine = peers.filter(
      (p) => p.metadata.labels?.["rlark.io/domain"] === name || p.metadata.name === name,
    );
    return html`<section class="domain" data-domain="${name}">
      <h2>${name} <code>${domain.spec.cidr}</code></h2>
      <p class="muted">${sourceLink(domain, state.repoWeb)}</p>
      ${table(
        ["IP", "Job", "Task", "Pod", "Cluster"],
        (domain.status?.ipAllocations ?? []).map(
          (a) =>
            html`<tr><td><code>${a.ip}</code></td><td>${a.job ? html`<a href="#/jobs/${encodeURIComponent(a.job)}">${a.job}</a>` : ""}</td><td>${a.task ?? ""}</td><td>${a.pod ?? ""}</td><td>${a.cluster ?? ""}</td></tr>`,
        ),
        "Allocations",
      )}
      ${table(
        ["Cluster", "Prefix", "Pods"],
        mine.map(
          (p) => html`<tr><td>${clusterOf(p.metadata.namespace)}</td><td>/${p.spec.prefixLen}</td>
            <td>${(p.spec.pods ?? []).map((pod) => html`<div>${pod.name} <code>${pod.ip}</code>${pod.node ? ` on ${pod.node}` : ""}</div>`)}</td></tr>`,
        ),
        "Peers per cluster",
      )}
    </section>`;
  })}`;
}

export function addonsPage(state: State): Html {
  const rows = state.list<Addon>("Addon").flatMap((addon) => {
    const perCluster = addon.status?.clusters?.length
      ? addon.status.clusters
      : [
          {
            cluster: clusterOf(addon.metadata.namespace),
            phase: addon.status?.phase,
            version: addon.status?.version,
            message: addon.status?.message,
          },
        ];
    return perCluster.map(
      (
        c,
      ) => html`<tr data-addon="${addon.metadata.name}"><td>${addon.metadata.name}</td><td>${addon.spec.addonName}</td><td>${c.cluster}</td>
        <td>${phase(c.phase ?? "Pending")}</td><td>${c.version ?? ""} <span class="muted">(wanted ${addon.spec.version})</span></td><td>${c.message ?? ""}</td>
        <td>${sourceLink(addon, state.repoWeb)}</td></tr>`,
    );
  });
  return html`<h1>Addons</h1>${table(["Addon", "Catalog", "Cluster", "Phase", "Version", "Message", "Source"], rows)}`;
}
