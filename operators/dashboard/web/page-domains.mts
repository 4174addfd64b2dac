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
        ["Cluster", "Pod", "Virtual IP", "Node"],
        mine.flatMap((p) =>
          (p.spec.pods ?? []).map(
            (pod) =>
              html`<tr data-member="${pod.name}"><td>${clusterOf(p.metadata.namespace)}</td><td>${pod.name}</td><td><code>${pod.ip}</code>/${p.spec.prefixLen}</td><td>${pod.node ?? ""}</td></tr>`,
          ),
        ),
        "Members",
      )}
      ${trafficTable(mine)}
    </section>`;
  })}`;
}

/** Bytes as B, KiB, MiB, GiB. */
function bytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}

/** The live figures the agents report from their nodeservers: pool connections and peer pairs. */
function trafficTable(peers: readonly DomainPeer[]): Html {
  const podOf = new Map(peers.flatMap((p) => (p.spec.pods ?? []).map((pod) => [pod.ip, pod.name] as const)));
  const who = (ip: string) =>
    html`<code>${ip}</code>${podOf.has(ip) ? html` <span class="muted">${podOf.get(ip)}</span>` : ""}`;
  const rows = peers.flatMap((p) => {
    const traffic = p.status?.traffic;
    if (!traffic) return [];
    const cluster = clusterOf(p.metadata.namespace);
    const pool = html`<tr data-pool="${cluster}"><td>${cluster}</td><td colspan="3">pool: ${traffic.poolConnections} connection${traffic.poolConnections === 1 ? "" : "s"} to the hub${traffic.omittedPairs ? `, ${traffic.omittedPairs} quieter pairs not shown` : ""}</td><td colspan="3" class="muted">figures since ${traffic.observedAt}</td></tr>`;
    return [
      pool,
      ...traffic.pairs.map(
        (pair) =>
          html`<tr data-pair="${pair.source}>${pair.target}"><td>${cluster}</td><td>${who(pair.source)}</td><td>${who(pair.target)}</td><td>${pair.path ?? ""}</td><td>${pair.activeStreams}</td><td>${bytes(pair.bytesSent)}</td><td>${bytes(pair.bytesReceived)}</td></tr>`,
      ),
    ];
  });
  return table(["Cluster", "From", "To", "Path", "Open", "Sent", "Received"], rows, "Connections");
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
