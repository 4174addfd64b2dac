// The dashboard in the browser: hash routes, one render function per page, redrawn (at most once
// a frame) when the event stream changes what it shows.

import type { Workflow } from "../../api/index.ts";
import { type Html, html } from "./html.mts";
import { prefetchJobs, shownJobs } from "./jobs-list.mts";
import { type Connection, connect, type Live } from "./live.mts";
import { accessPage, fetchAccessAudit } from "./page-access.mts";
import { bundlePage, bundlesPage } from "./page-bundles.mts";
import { clusterBrowsePage, fetchBrowsePage, forgetBrowsePages } from "./page-cluster-browse.mts";
import { clustersPage } from "./page-clusters.mts";
import { addonsPage, domainsPage } from "./page-domains.mts";
import { jobPage, jobsPage } from "./page-jobs.mts";
import { forgetNetwork, networkPage } from "./page-network.mts";
import { overviewPage } from "./page-overview.mts";
import { teamsPage } from "./page-teams.mts";
import { workflowsPage } from "./page-workflows.mts";
import { fetchPodLog, followPodLog, stopFollowing } from "./pod-logs.mts";
import { openProxyLink } from "./proxy-link.mts";
import { type Credentials, currentSession, endSession, logIn } from "./session.mts";
import { State } from "./state.mts";
import { mountTerminal, terminalPage, unmountTerminal } from "./terminal.mts";

const PAGES = [
  { path: "overview", title: "Overview" },
  { path: "jobs", title: "Jobs" },
  { path: "workflows", title: "Workflows" },
  { path: "teams", title: "Teams" },
  { path: "clusters", title: "Clusters" },
  { path: "domains", title: "Domains" },
  { path: "network", title: "Network" },
  { path: "addons", title: "Addons" },
  { path: "bundles", title: "Bundles" },
  { path: "access", title: "Access" },
] as const;

// boot.mts reloads a page whose modules did not all arrive; this says they did.
document.documentElement.dataset.started = "true";

const state = new State();
const main = document.getElementById("page")!;
const nav = document.getElementById("nav")!;
const connectionEl = document.getElementById("connection")!;
let live: Live | undefined;
let loaded = false;
/** Counts start(): a stream is opened only by the newest one. */
let starts = 0;
let scheduled = false;

function route(): { parts: string[]; query: URLSearchParams } {
  const hash = location.hash.replace(/^#\/?/, "");
  const [path = "", query = ""] = hash.split("?", 2);
  return {
    parts: path.split("/").filter(Boolean).map(decodeURIComponent),
    query: new URLSearchParams(query),
  };
}

function page(parts: string[], query: URLSearchParams): Html {
  switch (parts[0]) {
    case "jobs":
      return parts[1]
        ? jobPage(state, parts[1])
        : jobsPage(state, query, currentSession()?.token ?? "", schedule);
    case "workflows":
      return workflowsPage(state);
    case "teams":
      return teamsPage(state);
    case "clusters": {
      const cluster = parts[1];
      if (cluster && parts[2] === "browse")
        return clusterBrowsePage(cluster, query, (resource, namespace) => {
          const token = currentSession()?.token;
          if (token) void fetchBrowsePage(cluster, resource, namespace, token, schedule);
        });
      return clustersPage(state, query);
    }
    case "domains":
      return domainsPage(state);
    case "network":
      return networkPage(parts[1], query, currentSession()?.token, schedule);
    case "addons":
      return addonsPage(state);
    case "bundles":
      return parts[1] ? bundlePage(state, parts[1]) : bundlesPage(state);
    case "access":
      return accessPage();
    case "terminal":
      return terminalPage(parts[1] ?? "", parts[2] ?? "");
    default:
      return overviewPage(state);
  }
}

/**
 * The Jobs the page at the address shows, whose objects (with their Tasks) the stream
 * must carry: a page of the list, one Job, the Workflows' Jobs. Other pages need none.
 */
function pageJobs(parts: string[], query: URLSearchParams): string[] {
  if (parts[0] === "jobs") return parts[1] ? [parts[1]] : shownJobs(query);
  if (parts[0] === "workflows")
    return state
      .list<Workflow>("Workflow")
      .flatMap((wf) => (wf.status?.nodes ?? []).map((n) => n.job))
      .filter((job): job is string => !!job);
  return [];
}

function render(): void {
  scheduled = false;
  const routed = route();
  if (live && currentSession()) live.select(pageJobs(routed.parts, routed.query));
  renderPage();
}

function renderPage(): void {
  const { parts, query } = route();
  if (parts[0] === "login" || !currentSession()) {
    renderLogin(query);
    return;
  }
  const current = parts[0] ?? "overview";
  setHtml(
    nav,
    html`${PAGES.filter((p) => p.path !== "access" || state.principal?.role === "admin").map(
      (p) =>
        html`<a href="#/${p.path}" ${p.path === current ? html`aria-current="page"` : ""}>${p.title}</a>`,
    )}<button type="button" id="logout">Log out ${state.principal ? `(${state.principal.subject})` : ""}</button>`,
  );
  // The Jobs list comes from the API page by page: it draws before the live snapshot arrives.
  if (!loaded && !(current === "jobs" && !parts[1])) {
    setHtml(main, html`<p>Loading…</p>`);
    return;
  }
  // Redrawing replaces the elements: keep the focus and caret where the person left them. A
  // field is found again by its id, a link by its target (a keyboard user tabbing through a page
  // whose statuses change would otherwise be sent back to its top).
  const active = document.activeElement as HTMLInputElement | null;
  const inside = active && main.contains(active) ? active : null;
  const focusId = inside?.id ?? "";
  const focusHref = !focusId && inside instanceof HTMLAnchorElement ? inside.getAttribute("href") : null;
  const caret = focusId && typeof active?.selectionStart === "number" ? active.selectionStart : null;
  const open = new Set(
    detailsByKey(main)
      .filter(([, d]) => d.open)
      .map(([key]) => key),
  );
  const changed = setHtml(main, page(parts, query));
  // A section the person opened stays open when a live update redraws the page.
  if (changed) for (const [key, d] of detailsByKey(main)) if (open.has(key)) d.open = true;
  const token = currentSession()?.token;
  if (current === "terminal" && parts[1] && parts[2] && token) void mountTerminal(parts[1], parts[2], token);
  else unmountTerminal();
  if (!changed) return;
  document.title = `RLark · ${PAGES.find((p) => p.path === current)?.title ?? parts[0]}`;
  if (focusId) {
    const again = document.getElementById(focusId) as HTMLInputElement | null;
    again?.focus();
    if (again && caret !== null) again.setSelectionRange(caret, caret);
  } else if (focusHref !== null) {
    [...main.querySelectorAll("a")].find((a) => a.getAttribute("href") === focusHref)?.focus();
  }
}

/**
 * The page's <details> by a key that survives a redraw: class and data attributes, and the place
 * among those sharing them.
 */
function detailsByKey(root: HTMLElement): [string, HTMLDetailsElement][] {
  const seen = new Map<string, number>();
  return [...root.querySelectorAll("details")].map((d) => {
    const base = `${d.className}|${JSON.stringify({ ...d.dataset })}`;
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    return [`${base}|${n}`, d];
  });
}

// What each region shows now: a change that draws the same leaves the DOM (and focus, hover,
// text selection, a half-typed filter) alone. The source status alone changes every poll.
const drawn = new WeakMap<HTMLElement, string>();
function setHtml(element: HTMLElement, content: Html): boolean {
  if (drawn.get(element) === content.text) return false;
  drawn.set(element, content.text);
  element.innerHTML = content.text;
  return true;
}

function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(render);
}

function showConnection(connection: Connection): void {
  connectionEl.textContent =
    connection === "live" ? "● live" : connection === "reconnecting" ? "reconnecting…" : "connecting…";
  connectionEl.className = connection;
}

function start(): void {
  const session = currentSession();
  if (!session) return;
  live?.close();
  loaded = false;
  const { parts, query } = route();
  // The page the address shows is asked for first: the hub answers it before it builds the
  // stream's snapshot (which holds every object), so it paints at once.
  const first = parts[0] === "jobs" && !parts[1] ? prefetchJobs(query, session.token) : Promise.resolve();
  const generation = ++starts;
  void Promise.race([first, new Promise((r) => setTimeout(r, 2000))]).then(() => {
    if (generation !== starts || currentSession()?.token !== session.token) return;
    schedule();
    const now = route();
    openStream(session.token, pageJobs(now.parts, now.query));
  });
}

function openStream(token: string, jobs: string[]): void {
  live = connect({
    state,
    token,
    jobs,
    onChange: () => {
      loaded = true;
      schedule();
    },
    onConnection: showConnection,
    onUnauthorized: () => {
      endSession();
      live?.close();
      live = undefined;
      location.hash = "#/login";
    },
  });
}

function renderLogin(query: URLSearchParams): void {
  setHtml(nav, html``);
  connectionEl.textContent = "";
  const code = query.get("code");
  if (code) {
    // The one-click link from `rlark up`: drop its code from the address bar (and so from the
    // history), then spend it. It works once; a reload shows the login form.
    history.replaceState(null, "", `${location.pathname}#/login`);
    void submit({ code });
    return;
  }
  setHtml(
    main,
    html`<section class="login"><h1>Log in to RLark</h1>
    <form id="login-form">
      <label>User name <input name="username" id="username" autocomplete="username" required></label>
      <label>Password <input name="password" id="password" type="password" autocomplete="current-password" required></label>
      <button type="submit">Log in</button>
      <p id="login-error" class="error" role="alert"></p>
    </form>
    <details><summary>Log in with the hub's admin token</summary>
      <form id="token-form"><label>Admin token <input name="adminToken" id="admin-token" type="password" autocomplete="off" required></label>
      <button type="submit">Log in</button></form>
      <p class="muted">It is in <code>&lt;data-dir&gt;/admin-token</code> on the hub.</p>
    </details></section>`,
  );
  document.getElementById("username")?.focus();
}

async function submit(body: Credentials): Promise<void> {
  try {
    await logIn(body);
    location.hash = "#/overview";
    start();
    render();
  } catch (error) {
    if (!document.getElementById("login-form")) renderLogin(new URLSearchParams());
    const message = document.getElementById("login-error");
    if (message) message.textContent = error instanceof Error ? error.message : String(error);
  }
}

document.addEventListener("submit", (event) => {
  const form = event.target as HTMLFormElement;
  if (form.classList.contains("network-fit")) {
    // the question lives in the address, like the filters: #/network/<cluster>?nodes=a,b
    event.preventDefault();
    const nodes = String(new FormData(form).get("nodes") ?? "").trim();
    location.hash = `#/network/${encodeURIComponent(form.dataset.cluster ?? "")}${nodes ? `?nodes=${encodeURIComponent(nodes)}` : ""}`;
    return;
  }
  if (form.id !== "login-form" && form.id !== "token-form") return;
  event.preventDefault();
  const data = new FormData(form);
  if (form.id === "token-form") void submit({ adminToken: String(data.get("adminToken")) });
  else void submit({ username: String(data.get("username")), password: String(data.get("password")) });
});

// Filters live in the address: a filtered view can be bookmarked and shared.
const onFilter = (event: Event) => {
  const input = event.target as HTMLInputElement | HTMLSelectElement;
  const name = input.dataset.filter;
  if (!name) return;
  const { parts, query } = route();
  if (input.value) query.set(name, input.value);
  else query.delete(name);
  query.delete("page");
  query.delete("continue");
  history.replaceState(null, "", `#/${parts.map(encodeURIComponent).join("/")}?${query}`);
  schedule();
};
document.addEventListener("change", onFilter);
document.addEventListener("input", onFilter);
document.addEventListener("click", (event) => {
  const target = event.target as HTMLElement;
  if (target.classList.contains("skip")) {
    // The address holds the route: jump to the content without changing it.
    event.preventDefault();
    main.focus();
    return;
  }
  const logAction = ["pod-log", "pod-log-follow", "pod-log-stop"].find((c) => target.classList.contains(c));
  if (logAction) {
    const token = currentSession()?.token;
    const { namespace, pod } = target.dataset;
    if (!token || !namespace || !pod) return;
    if (logAction === "pod-log") void fetchPodLog(namespace, pod, token, schedule);
    else if (logAction === "pod-log-follow") void followPodLog(namespace, pod, token, schedule);
    else stopFollowing(namespace, pod);
    return;
  }
  if (target.classList.contains("browse-more")) {
    const token = currentSession()?.token;
    const { cluster, resource, namespace } = target.dataset;
    if (token && cluster && resource && namespace)
      void fetchBrowsePage(cluster, resource, namespace, token, schedule, true);
    return;
  }
  if (target.classList.contains("browse-refresh")) {
    const { cluster } = target.dataset;
    if (cluster) forgetBrowsePages(cluster);
    schedule();
    return;
  }
  if (target.classList.contains("proxy-link")) {
    const token = currentSession()?.token;
    if (!token) return;
    event.preventDefault();
    void openProxyLink(target, token);
    return;
  }
  if (target.classList.contains("network-refresh")) {
    forgetNetwork();
    schedule();
    return;
  }
  if (target.classList.contains("access-audit")) {
    const token = currentSession()?.token;
    if (token) void fetchAccessAudit(token, schedule);
    return;
  }
  if (target.id !== "logout") return;
  unmountTerminal();
  endSession();
  live?.close();
  live = undefined;
  location.hash = "#/login";
});
window.addEventListener("hashchange", () => {
  render();
  if (route().parts[0] !== "login") main.focus({ preventScroll: true });
});

if (currentSession()) start();
if (!location.hash || location.hash === "#/") location.hash = currentSession() ? "#/overview" : "#/login";
render();
