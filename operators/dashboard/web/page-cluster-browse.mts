// Read-only browsing of one cluster (seed 003's cluster detail): pick a namespace, then its
// Deployments (with container env, references shown as references), Services, Pods, ConfigMaps
// and Secrets (key names only). Pages are fetched from the hub, which asks the cluster's agent.
import type {
  BrowseAnswer,
  ConfigMapItem,
  DeploymentItem,
  EnvItem,
  NamespaceItem,
  PodItem,
  SecretItem,
  ServiceItem,
} from "../../lib/tunnel/index.ts";
import { type Html, html } from "./html.mts";
import { table } from "./widgets.mts";

const RESOURCES = ["deployments", "services", "pods", "configmaps", "secrets"] as const;
const TITLES: Record<string, string> = {
  deployments: "Deployments",
  services: "Services",
  pods: "Pods",
  configmaps: "ConfigMaps",
  secrets: "Secrets",
};

type PageState =
  | { state: "loading" }
  | { state: "loaded"; items: BrowseAnswer["items"]; continue?: string; loadingMore?: boolean }
  | { state: "failed"; message: string };

/** Fetched pages by cluster/resource/namespace; kept so re-renders do not fetch again. */
const pages = new Map<string, PageState>();

const keyOf = (cluster: string, resource: string, namespace: string) => `${cluster}/${resource}/${namespace}`;

function url(cluster: string, resource: string, namespace: string, next?: string): string {
  const query = new URLSearchParams();
  if (namespace) query.set("namespace", namespace);
  if (next) query.set("continue", next);
  return `/api/v1/clusters/${encodeURIComponent(cluster)}/browse/${resource}?${query}`;
}

/** Fetches the first page (or, with `more`, the next one) and re-renders as the state moves. */
export async function fetchBrowsePage(
  cluster: string,
  resource: string,
  namespace: string,
  token: string,
  changed: () => void,
  more = false,
): Promise<void> {
  const key = keyOf(cluster, resource, namespace);
  const current = pages.get(key);
  const next = more && current?.state === "loaded" ? current.continue : undefined;
  if (more && (!next || current?.state !== "loaded")) return;
  if (current?.state === "loaded" && more) current.loadingMore = true;
  else pages.set(key, { state: "loading" });
  changed();
  try {
    const response = await fetch(url(cluster, resource, namespace, next), {
      headers: { authorization: `Bearer ${token}` },
    });
    const body = (await response.json().catch(() => ({}))) as Partial<BrowseAnswer> & { message?: string };
    if (!response.ok) pages.set(key, { state: "failed", message: body.message ?? `HTTP ${response.status}` });
    else {
      const before = more && current?.state === "loaded" ? current.items : [];
      pages.set(key, {
        state: "loaded",
        items: [...before, ...(body.items ?? [])],
        ...(body.continue ? { continue: body.continue } : {}),
      });
    }
  } catch (error) {
    pages.set(key, { state: "failed", message: error instanceof Error ? error.message : String(error) });
  }
  changed();
}

/** Forgets the fetched pages of a cluster: the refresh button. */
export function forgetBrowsePages(cluster: string): void {
  for (const key of [...pages.keys()]) if (key.startsWith(`${cluster}/`)) pages.delete(key);
}

function envText(e: EnvItem): Html {
  if (e.secretKeyRef)
    return html`<span class="ref">from Secret <code>${e.secretKeyRef.name}</code> key <code>${e.secretKeyRef.key}</code></span>`;
  if (e.configMapKeyRef)
    return html`<span class="ref">from ConfigMap <code>${e.configMapKeyRef.name}</code> key <code>${e.configMapKeyRef.key}</code></span>`;
  if (e.fieldRef) return html`<span class="ref">field <code>${e.fieldRef}</code></span>`;
  if (e.resourceFieldRef) return html`<span class="ref">resource <code>${e.resourceFieldRef}</code></span>`;
  return html`<code>${e.value ?? ""}</code>`;
}

function deploymentRows(items: DeploymentItem[]): Html {
  return table(
    ["Deployment", "Ready", "Containers and env"],
    items.map(
      (d) =>
        html`<tr data-deployment="${d.name}"><td>${d.name}</td><td>${d.readyReplicas}/${d.replicas}</td><td>${d.containers.map(
          (c) => html`<div class="container"><strong>${c.name}</strong> <code>${c.image ?? ""}</code>
          ${
            c.env.length || c.envFrom.length
              ? html`<ul class="env">${c.env.map((e) => html`<li data-env="${e.name}"><code>${e.name}</code> = ${envText(e)}</li>`)}${c.envFrom.map(
                  (f) =>
                    html`<li class="env-from">all of ${f.secretRef ? html`Secret <code>${f.secretRef}</code>` : html`ConfigMap <code>${f.configMapRef ?? ""}</code>`}${f.prefix ? html` with prefix <code>${f.prefix}</code>` : ""}</li>`,
                )}</ul>`
              : ""
          }</div>`,
        )}</td></tr>`,
    ),
  );
}

function rows(resource: string, items: BrowseAnswer["items"]): Html {
  switch (resource) {
    case "deployments":
      return deploymentRows(items as DeploymentItem[]);
    case "services":
      return table(
        ["Service", "Type", "Cluster IP", "Ports"],
        (items as ServiceItem[]).map(
          (s) =>
            html`<tr data-service="${s.name}"><td>${s.name}</td><td>${s.type ?? ""}</td><td><code>${s.clusterIP ?? ""}</code></td><td>${s.ports
              .map(
                (p) =>
                  `${p.name ? `${p.name} ` : ""}${p.port}${p.targetPort ? `→${p.targetPort}` : ""}/${p.protocol ?? "TCP"}`,
              )
              .join(", ")}</td></tr>`,
        ),
      );
    case "pods":
      return table(
        ["Pod", "Phase", "Ready", "Restarts", "Node", "IP"],
        (items as PodItem[]).map(
          (p) =>
            html`<tr data-pod="${p.name}"><td>${p.name}</td><td>${p.phase ?? ""}</td><td>${p.ready}</td><td>${p.restarts}</td><td>${p.node ?? ""}</td><td><code>${p.podIP ?? ""}</code></td></tr>`,
        ),
      );
    case "configmaps":
      return table(
        ["ConfigMap", "Data"],
        (items as ConfigMapItem[]).map(
          (c) =>
            html`<tr data-configmap="${c.name}"><td>${c.name}</td><td><dl class="data">${Object.entries(
              c.data,
            ).map(([k, v]) => html`<dt>${k}</dt><dd><pre>${v}</pre></dd>`)}</dl></td></tr>`,
        ),
      );
    default:
      return table(
        ["Secret", "Type", "Keys (values are never shown)"],
        (items as SecretItem[]).map(
          (s) =>
            html`<tr data-secret="${s.name}"><td>${s.name}</td><td>${s.type ?? ""}</td><td>${s.keys.map((k) => html`<code class="key">${k}</code> `)}</td></tr>`,
        ),
      );
  }
}

function view(cluster: string, resource: string, namespace: string, page: PageState | undefined): Html {
  if (!page || page.state === "loading") return html`<p class="muted">loading…</p>`;
  if (page.state === "failed") return html`<p class="error browse-error" role="alert">${page.message}</p>`;
  return html`${rows(resource, page.items)}
    ${page.continue ? html`<button type="button" class="browse-more" data-cluster="${cluster}" data-resource="${resource}" data-namespace="${namespace}" ${page.loadingMore ? "disabled" : ""}>more</button>` : ""}`;
}

/**
 * The page at #/clusters/<name>/browse?namespace=&resource=; `load` fetches what the page shows
 * and has not been fetched yet.
 */
export function clusterBrowsePage(
  cluster: string,
  query: URLSearchParams,
  load: (resource: string, namespace: string) => void,
): Html {
  const namespace = query.get("namespace") ?? "";
  const resource = (RESOURCES as readonly string[]).includes(query.get("resource") ?? "")
    ? (query.get("resource") as string)
    : "deployments";
  const namespaces = pages.get(keyOf(cluster, "namespaces", ""));
  if (!namespaces) load("namespaces", "");
  if (namespace && !pages.get(keyOf(cluster, resource, namespace))) load(resource, namespace);
  const names =
    namespaces?.state === "loaded" ? (namespaces.items as NamespaceItem[]).map((n) => n.name) : [];
  const base = `#/clusters/${encodeURIComponent(cluster)}/browse`;
  return html`<h1>Cluster ${cluster}</h1>
  <p><a href="#/clusters">← all clusters</a> · <button type="button" class="browse-refresh" data-cluster="${cluster}">refresh</button>
    <span class="muted">read-only; Secrets show their keys, never their values</span></p>
  <form class="filters" aria-label="Namespace">
    <label>Namespace <select id="filter-namespace" data-filter="namespace"><option value="">choose…</option>${names.map(
      (n) => html`<option value="${n}" ${n === namespace ? "selected" : ""}>${n}</option>`,
    )}</select></label>
    ${namespaces?.state === "failed" ? html`<span class="error browse-error" role="alert">${namespaces.message}</span>` : ""}
  </form>
  ${
    namespace
      ? html`<nav class="tabs" aria-label="Resources">${RESOURCES.map(
          (r) =>
            html`<a class="tab" href="${base}?namespace=${encodeURIComponent(namespace)}&amp;resource=${r}" ${r === resource ? html`aria-current="page"` : ""}>${TITLES[r] ?? r}</a>`,
        )}</nav>
        <section class="browse" data-resource="${resource}">${view(cluster, resource, namespace, pages.get(keyOf(cluster, resource, namespace)))}</section>`
      : html`<p class="muted">Choose a namespace.</p>`
  }`;
}
