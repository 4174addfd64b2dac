// Clusters and their nodes (seed 000 §4): requested vs allocatable per resource, disk with a
// warning at ≥ 90 % or DiskPressure, admin annotations, cordons, the images pre-pulled onto each
// (docs/adr/0012-image-pre-pull.md); control-plane nodes apart; the StorageClasses each cluster's
// agent reports.
import type { Cluster, Node, Pod } from "../../api/index.ts";
import { type Html, html } from "./html.mts";
import { formatAmount, formatBytes, parseQuantity } from "./quantity.mts";
import { sourceLink } from "./source-link.mts";
import { clusterOf, type State } from "./state.mts";
import { age } from "./time.mts";
import { bar, phase, select, table } from "./widgets.mts";

const CATEGORY_PREFIX = "rlark.io/node-category-";
const RESOURCES = [
  { key: "cpu", label: "CPU", bytes: false },
  { key: "memory", label: "Memory", bytes: true },
  { key: "nvidia.com/gpu", label: "GPU", bytes: false },
  { key: "rlinf.io/device", label: "Device", bytes: false },
] as const;

export function isControlPlane(node: Node): boolean {
  const labels = node.metadata.labels ?? {};
  return "node-role.kubernetes.io/control-plane" in labels || "node-role.kubernetes.io/master" in labels;
}

export function categories(node: Node): string[] {
  const labels = node.metadata.labels ?? {};
  const found = Object.entries(labels)
    .filter(([k, v]) => k.startsWith(CATEGORY_PREFIX) && v === "true")
    .map(([k]) => k.slice(CATEGORY_PREFIX.length));
  // The older single-valued label is still shown.
  const legacy = labels["rlark.io/node-category"];
  if (legacy && !found.includes(legacy)) found.push(legacy);
  return found.sort();
}

function nodeBars(node: Node): Html[] {
  const allocatable = node.status?.allocatable ?? {};
  const requested = node.status?.requested ?? {};
  const bars: Html[] = [];
  for (const r of RESOURCES) {
    const total = parseQuantity(allocatable[r.key]);
    if (total === undefined || (total === 0 && r.key !== "cpu" && r.key !== "memory")) continue;
    const used = parseQuantity(requested[r.key]) ?? 0;
    const fmt = r.bytes ? formatBytes : formatAmount;
    bars.push(bar(r.label, used, total, `${fmt(used)} / ${fmt(total)} requested`));
  }
  const disk = node.status?.disk;
  if (disk?.totalBytes) {
    const used = disk.usedBytes ?? 0;
    const pressure = (node.status?.conditions ?? []).some(
      (c) => c.type === "DiskPressure" && c.status === "True",
    );
    const warn = pressure || used / disk.totalBytes >= 0.9;
    bars.push(
      bar(
        "Disk",
        used,
        disk.totalBytes,
        `${formatBytes(used)} / ${formatBytes(disk.totalBytes)} used, ${formatBytes(Math.max(0, disk.totalBytes - used))} free`,
        warn,
      ),
    );
  }
  return bars;
}

/** The pods on a node: which Job, which task, its IP and phase (seed 000 §4's node detail). */
function workers(node: Node, state: State): Html {
  const pods = state
    .list<Pod>("Pod")
    .filter((p) => p.metadata.namespace === node.metadata.namespace && p.spec.node === node.metadata.name);
  if (pods.length === 0) return html``;
  return html`<details class="workers"><summary>${pods.length} pod${pods.length === 1 ? "" : "s"}</summary><ul>${pods.map(
    (p) => {
      const job = p.spec.job ?? p.metadata.labels?.["rlinf.io/job"];
      return html`<li>${job ? html`<a href="#/jobs/${encodeURIComponent(job)}">${job}</a> · ` : ""}${p.metadata.name} ${p.status?.podIP ? html`<code>${p.status.podIP}</code>` : ""} ${phase(p.status?.phase)}</li>`;
    },
  )}</ul></details>`;
}

/** Image pre-pull: a count per phase, the images (failures with the runtime's message) inside. */
function images(node: Node): Html {
  const list = node.status?.images ?? [];
  if (list.length === 0) return html``;
  const count = (p: string) => list.filter((i) => i.phase === p).length;
  const summary = (["Present", "Pulling", "Failed"] as const)
    .filter((p) => count(p) > 0)
    .map((p) => `${count(p)} ${p.toLowerCase()}`)
    .join(" · ");
  return html`<details class="images${count("Failed") > 0 ? " warn" : ""}" data-images="${node.metadata.name}"${count("Failed") > 0 ? " open" : ""}><summary>Images: ${summary}</summary><ul>${list.map(
    (i) =>
      html`<li data-image="${i.image}"><code>${i.image}</code> ${phase(i.phase)}${i.lastTransitionTime ? html` <span class="muted small">${age(i.lastTransitionTime)} ago${i.attempts ? `, ${i.attempts} failed in a row` : ""}</span>` : ""}${i.message ? html`<br><span class="muted small">${i.message}</span>` : ""}</li>`,
  )}</ul></details>`;
}

function nodeCard(node: Node, state: State): Html {
  const annotations = node.metadata.annotations ?? {};
  const cordoned = node.spec?.unschedulable === true;
  return html`<article class="node${cordoned ? " cordoned" : ""}" data-node="${node.metadata.name}" aria-label="Node ${node.metadata.name}">
    <h4>${node.metadata.name} ${phase(node.status?.phase ?? "Unknown")} ${cordoned ? html`<span class="badge cordon" title="cordoned: no new work lands here">cordoned</span>` : ""}</h4>
    <p class="meta">${annotations["rlark.io/city"] ? html`<span>City: ${annotations["rlark.io/city"]}</span>` : ""}
      ${categories(node).map((c) => html`<span class="badge">${c}</span>`)}
      ${annotations["rlark.io/gpu-model"] ? html`<span>GPU: ${annotations["rlark.io/gpu-model"]}</span>` : ""}
      ${annotations["rlark.io/device-model"] ? html`<span>Device: ${annotations["rlark.io/device-model"]}</span>` : ""}</p>
    ${nodeBars(node)}
    ${images(node)}
    ${workers(node, state)}
    <p class="muted small">${sourceLink(node, state.repoWeb)}</p>
  </article>`;
}

/** The last connectivity test (the Version API, or the process agent's report), version and node count. */
function connectivity(cluster: Cluster): Html {
  const status = cluster.status;
  if (!status?.lastTestedAt) return html``;
  return html`<p class="connectivity" data-test-ok="${String(status.lastTestOk === true)}">
    ${status.lastTestOk ? html`<span class="badge ok">reachable</span>` : html`<span class="badge warn" title="${status.lastTestMessage ?? ""}">unreachable</span>`}
    tested ${age(status.lastTestedAt)} ago
    ${status.kubernetesVersion ? html` · Kubernetes <code>${status.kubernetesVersion}</code>` : ""}
    ${status.nodeCount !== undefined ? ` · ${status.nodeCount} node${status.nodeCount === 1 ? "" : "s"}` : ""}
    ${!status.lastTestOk && status.lastTestMessage ? html`<br><span class="muted small">${status.lastTestMessage}</span>` : ""}</p>`;
}

/** The AgentGroup (SWIM membership of the node agents) as the agent's member sees it. */
function agentGroup(cluster: Cluster): Html {
  const group = cluster.status?.agentGroup;
  if (!group) return html``;
  const counts = (["alive", "suspect", "dead", "left"] as const).filter((s) => s === "alive" || group[s] > 0);
  return html`<details class="agent-group" data-agent-group="${cluster.metadata.name}"><summary>AgentGroup: ${counts.map((s) => `${group[s]} ${s}`).join(" · ")} <span class="muted small">seen by ${group.member}</span></summary>
    ${table(
      ["Member", "Address", "State", "Incarnation"],
      (group.members ?? []).map(
        (m) =>
          html`<tr data-member="${m.id}"><td>${m.id}</td><td><code>${m.address}</code></td><td>${phase(m.state)}</td><td>${m.incarnation}</td></tr>`,
      ),
      `AgentGroup members of ${cluster.metadata.name}`,
    )}</details>`;
}

/** The StorageClasses the agent reports (seed 000 §14): what a volumeClaimTemplate may name. */
function storageClasses(cluster: Cluster): Html {
  const classes = cluster.status?.storageClasses;
  if (!classes) return html``;
  return html`<details class="storage-classes"><summary>StorageClasses (${classes.length})</summary>
    ${table(
      ["StorageClass", "Provisioner", "Reclaim", "Binding", "Expands"],
      classes.map(
        (c) =>
          html`<tr data-storage-class="${c.name}"><td><code>${c.name}</code>${c.default ? html` <span class="badge">default</span>` : ""}</td><td>${c.provisioner}</td><td>${c.reclaimPolicy ?? "-"}</td><td>${c.volumeBindingMode ?? "-"}</td><td>${c.allowVolumeExpansion ? "yes" : "no"}</td></tr>`,
      ),
      `StorageClasses of ${cluster.metadata.name}`,
    )}</details>`;
}

export function clustersPage(state: State, query: URLSearchParams): Html {
  const categoryFilter = query.get("category") ?? "";
  const cityFilter = query.get("city") ?? "";
  const clusters = state.list<Cluster>("Cluster");
  const nodes = state.list<Node>("Node");
  const workers = nodes.filter((n) => !isControlPlane(n));
  const allCategories = [...new Set(workers.flatMap(categories))].sort();
  const cities = [
    ...new Set(workers.map((n) => n.metadata.annotations?.["rlark.io/city"]).filter((c): c is string => !!c)),
  ].sort();
  const visible = (n: Node) =>
    (!categoryFilter || categories(n).includes(categoryFilter)) &&
    (!cityFilter || n.metadata.annotations?.["rlark.io/city"] === cityFilter);
  return html`<h1>Clusters and nodes</h1>
  <form class="filters" role="search" aria-label="Filter nodes">
    ${select("category", "Category", categoryFilter, allCategories)}
    ${select("city", "City", cityFilter, cities)}
  </form>
  <p class="muted">${workers.filter(visible).length} worker nodes shown of ${workers.length}; control-plane nodes are listed apart and not counted.</p>
  ${clusters.map((cluster) => {
    const name = cluster.metadata.name;
    const mine = nodes.filter((n) => clusterOf(n.metadata.namespace) === name);
    const shown = mine.filter((n) => !isControlPlane(n) && visible(n));
    const control = mine.filter(isControlPlane);
    const caps = cluster.status?.capabilities ?? [];
    return html`<section class="cluster" data-cluster="${name}">
      <h2>${name} ${phase(cluster.status?.phase ?? "Offline")} <span class="muted small">${cluster.spec.runtime}${cluster.spec.access === "kubeconfig" ? " · agentless (kubeconfig)" : ""}</span>
        ${cluster.spec.runtime === "kubernetes" ? html`<a class="small browse-link" href="#/clusters/${encodeURIComponent(name)}/browse">browse</a>` : ""}</h2>
      <p class="muted">${cluster.metadata.labels?.["rlark.io/city"] ? `${cluster.metadata.labels["rlark.io/city"]} · ` : ""}${cluster.spec.description ?? ""}
        ${cluster.status?.lastHeartbeatTime ? ` · heartbeat ${age(cluster.status.lastHeartbeatTime)} ago` : ""}
        ${cluster.status?.agentVersion ? ` · agent ${cluster.status.agentVersion}` : ""} · ${sourceLink(cluster, state.repoWeb)}</p>
      ${connectivity(cluster)}
      ${
        caps.length
          ? html`<p class="caps">${caps.map((c) => html`<span class="badge" title="${c.message ?? ""}">${c.name}: ${phase(c.health ?? c.process)}</span>`)}</p>`
          : cluster.status?.phase === "Online"
            ? // an agent too old to report any: not known, which is not failed
              html`<p class="caps"><span class="badge">capabilities: ${phase("UNKNOWN")}</span> <span class="muted small">none reported</span></p>`
            : ""
      }
      ${agentGroup(cluster)}
      ${storageClasses(cluster)}
      <div class="nodes">${shown.length ? shown.map((n) => nodeCard(n, state)) : html`<p class="muted">no worker nodes${categoryFilter || cityFilter ? " match" : " reported"}</p>`}</div>
      ${
        control.length
          ? html`<details class="control-plane"><summary>Control plane (${control.length}, not counted as workers)</summary>
          ${table(
            ["Node", "Phase"],
            control.map(
              (n) =>
                html`<tr data-control-plane="${n.metadata.name}"><td>${n.metadata.name}</td><td>${phase(n.status?.phase)}</td></tr>`,
            ),
          )}</details>`
          : ""
      }
    </section>`;
  })}`;
}
