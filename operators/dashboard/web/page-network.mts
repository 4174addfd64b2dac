// PingMesh (docs/pingmesh.md): the RTT matrix between clusters and, per cluster, between its
// nodes, as heatmaps (a cell's shade is its p99 on a log scale; degraded pairs are marked), with
// the hub's answers: which node or rack/ToR looks at fault, and whether a set of nodes is fit to
// be one job. Fetched from GET /api/v1/pingmesh[/<cluster>] (viewers and up); refresh re-fetches.
import { type Html, html } from "./html.mts";
import { table } from "./widgets.mts";

interface Figures {
  samples: number;
  loss: number;
  p50Ms?: number;
  p99Ms?: number;
  jitterMs?: number;
}
interface Cell {
  source: string;
  target: string;
  figures: Figures;
  degraded?: string;
  icmp?: Figures;
}
interface Thresholds {
  loss: number;
  p99Ms: number;
}
interface ClusterMatrix {
  clusters: string[];
  pairs: Cell[];
  thresholds: Thresholds;
}
interface NodeMatrix {
  cluster: string;
  observedAt?: string;
  thresholds: Thresholds;
  nodes: { name: string; topology?: Record<string, string> }[];
  pairs: Cell[];
  suspects: { scope: string; name: string; message: string }[];
  protocols?: { source: string; target: string; verdict: string; message: string }[];
  fit?: { nodes: string[]; ok: boolean; problems: string[] };
}

type Fetched<T> = { state: "loading" } | { state: "loaded"; body: T } | { state: "failed"; message: string };

/** By API path; kept until refresh so re-renders do not fetch again. */
const fetched = new Map<string, Fetched<unknown>>();

export function forgetNetwork(): void {
  fetched.clear();
}

async function load(path: string, token: string, changed: () => void): Promise<void> {
  fetched.set(path, { state: "loading" });
  changed();
  try {
    const response = await fetch(path, { headers: { authorization: `Bearer ${token}` } });
    const body = (await response.json().catch(() => ({}))) as { message?: string };
    fetched.set(
      path,
      response.ok
        ? { state: "loaded", body }
        : { state: "failed", message: body.message ?? `HTTP ${response.status}` },
    );
  } catch (error) {
    fetched.set(path, { state: "failed", message: error instanceof Error ? error.message : String(error) });
  }
  changed();
}

/** The fetched answer at `path`, fetching it first when it is not there yet. */
function answer<T>(path: string, token: string | undefined, changed: () => void): Fetched<T> | undefined {
  const got = fetched.get(path) as Fetched<T> | undefined;
  if (!got && token) void load(path, token, changed);
  return got;
}

/** Shade 0..5 by p99: under 1 ms, 1-5, 5-20, 20-100, over 100 ms or unanswered. */
function shade(cell: Cell): number {
  const p99 = cell.figures.p99Ms;
  if (p99 === undefined) return 5;
  return p99 < 1 ? 0 : p99 < 5 ? 1 : p99 < 20 ? 2 : p99 < 100 ? 3 : 4;
}

function ms(value: number | undefined): string {
  return value === undefined ? "–" : `${Math.round(value * 100) / 100}`;
}

function heatmap(names: readonly string[], pairs: readonly Cell[], what: string): Html {
  const at = new Map(pairs.map((p) => [`${p.source}\0${p.target}`, p]));
  return html`<div class="scroll table-box"><table class="heatmap" data-heatmap="${what}">
    <caption>${what}: p99 RTT in ms from the row to the column (loss in %; a marked cell is degraded)</caption>
    <thead><tr><th scope="col">from \\ to</th>${names.map((n) => html`<th scope="col">${n}</th>`)}</tr></thead>
    <tbody>${names.map(
      (source) =>
        html`<tr><th scope="row">${source}</th>${names.map((target) => {
          if (source === target) return html`<td class="heat-self"></td>`;
          const cell = at.get(`${source}\0${target}`);
          if (!cell) return html`<td class="heat-none muted" data-pair="${source}>${target}">·</td>`;
          const loss = cell.figures.loss > 0 ? ` / ${Math.round(cell.figures.loss * 1000) / 10}%` : "";
          return html`<td class="heat-${shade(cell)}${cell.degraded ? " heat-degraded" : ""}" data-pair="${source}>${target}" title="p50 ${ms(cell.figures.p50Ms)} ms, p99 ${ms(cell.figures.p99Ms)} ms, jitter ${ms(cell.figures.jitterMs)} ms, loss ${cell.figures.loss}, ${cell.figures.samples} probes${cell.degraded ? `; degraded: ${cell.degraded}` : ""}${cell.icmp ? `; ICMP p99 ${ms(cell.icmp.p99Ms)} ms, loss ${cell.icmp.loss}` : ""}">${ms(cell.figures.p99Ms)}${loss}</td>`;
        })}</tr>`,
    )}</tbody></table></div>`;
}

function status<T>(got: Fetched<T> | undefined, body: (value: T) => Html): Html {
  if (!got || got.state === "loading") return html`<p class="muted">loading…</p>`;
  if (got.state === "failed") return html`<p class="muted">${got.message}</p>`;
  return body(got.body);
}

export function networkPage(
  cluster: string | undefined,
  query: URLSearchParams,
  token: string | undefined,
  changed: () => void,
): Html {
  const refresh = html`<button type="button" class="network-refresh">refresh</button>`;
  if (!cluster) {
    const got = answer<ClusterMatrix>("/api/v1/pingmesh", token, changed);
    return html`<h1>Network</h1><p>${refresh}</p>${status(got, (m) => {
      const degraded = m.pairs.filter((p) => p.degraded);
      return html`${heatmap(m.clusters, m.pairs, "Clusters")}
        <p class="muted">Degraded above ${m.thresholds.loss * 100}% loss or ${m.thresholds.p99Ms} ms p99. ${degraded.length} degraded pairs.</p>
        <p>Nodes of ${m.clusters.map((c, i) => html`${i ? ", " : ""}<a href="#/network/${encodeURIComponent(c)}">${c}</a>`)}</p>`;
    })}`;
  }
  const nodes = query.get("nodes") ?? "";
  const path = `/api/v1/pingmesh/${encodeURIComponent(cluster)}${nodes ? `?nodes=${encodeURIComponent(nodes)}` : ""}`;
  const got = answer<NodeMatrix>(path, token, changed);
  return html`<h1>Network: ${cluster}</h1><p><a href="#/network">← all clusters</a> · ${refresh}</p>
    ${status(got, (m) => {
      const names = m.nodes.map((n) => n.name);
      for (const p of m.pairs)
        for (const end of [p.source, p.target]) if (!names.includes(end)) names.push(end);
      return html`<p class="muted">${m.observedAt ? `figures of ${m.observedAt}` : "no figures reported yet"}</p>
        ${heatmap(names, m.pairs, "Nodes")}
        ${table(
          ["Node", "Zone", "Rack", "ToR", "Subnet", "Pool"],
          m.nodes.map(
            (n) =>
              html`<tr data-node="${n.name}"><td>${n.name}</td>${["zone", "rack", "tor", "subnet", "pool"].map((f) => html`<td>${n.topology?.[f] ?? html`<span class="muted">unknown</span>`}</td>`)}</tr>`,
          ),
          "Topology (unknown stays unknown)",
        )}
        ${table(
          ["Where", "What it looks like"],
          m.suspects.map(
            (s) =>
              html`<tr data-suspect="${s.scope}/${s.name}"><td>${s.scope} ${s.name}</td><td>${s.message}</td></tr>`,
          ),
          "One node's NIC, or a whole rack/ToR?",
        )}
        ${table(
          ["Pair", "TCP vs ICMP"],
          (m.protocols ?? []).map(
            (p) =>
              html`<tr data-protocols="${p.source}>${p.target}" data-verdict="${p.verdict}"><td>${p.source} → ${p.target}</td><td>${p.message}</td></tr>`,
          ),
          "TCP failing while ICMP works? (pairs whose nodes probe ICMP)",
        )}
        <form class="network-fit" data-cluster="${cluster}"><label>Fit to be one job? nodes <input name="nodes" value="${nodes}" placeholder="node-a,node-b"></label> <button type="submit">check</button></form>
        ${
          m.fit
            ? html`<p class="${m.fit.ok ? "ok" : "bad"}" data-fit="${m.fit.ok ? "yes" : "no"}">${m.fit.ok ? `every pair among ${m.fit.nodes.join(", ")} is measured and healthy` : `not fit: ${m.fit.problems.join("; ")}`}</p>`
            : ""
        }`;
    })}`;
}
