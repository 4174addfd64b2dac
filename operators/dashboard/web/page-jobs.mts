import type { Job, JobTaskStatus, Pod, Task } from "../../api/index.ts";
import { type Html, html } from "./html.mts";
import { jobsPage as fetchJobsPage, PAGE_SIZE, previousOf, rememberPrevious } from "./jobs-list.mts";
import { podLogView } from "./pod-logs.mts";
import { tensorBoardLink } from "./proxy-link.mts";
import { sourceLink } from "./source-link.mts";
import { clusterOf, type State } from "./state.mts";
import { age } from "./time.mts";
import { conditionsList, phase, select, table } from "./widgets.mts";

const PHASES = ["Pending", "Running", "Succeeded", "Failed", "Stopping", "Stopped"];

function jobClusters(job: Job): string[] {
  return [...new Set((job.status?.tasks ?? []).map((t) => t.cluster).filter((c): c is string => !!c))].sort();
}

/**
 * The Jobs list: one page of the hub's API (jobs-list.mts), filtered by the server, paged by its
 * continue tokens. `loaded` redraws when a page arrives.
 */
export function jobsPage(state: State, query: URLSearchParams, token: string, loaded: () => void): Html {
  const phaseFilter = query.get("phase") ?? "";
  const labelFilter = query.get("label") ?? "";
  const clusterFilter = query.get("cluster") ?? "";
  const here = query.get("continue") ?? "";
  const { page } = fetchJobsPage(query, token, state.summary?.revision ?? "", loaded);
  // The stream follows the page's Jobs: a row shows a change as soon as it happens.
  const jobs = (page?.items ?? []).map((job) => state.get<Job>("Job", undefined, job.metadata.name) ?? job);
  const clusters = state.list("Cluster").map((c) => c.metadata.name);
  const link = (token: string) => {
    const next = new URLSearchParams(query);
    if (token) next.set("continue", token);
    else next.delete("continue");
    return `#/jobs?${next}`;
  };
  if (page?.continue) rememberPrevious(page.continue, here);
  const back = here ? previousOf(here) : undefined;
  const total = state.summary?.total ?? 0;
  const count = !page
    ? "loading…"
    : !here && !page.continue
      ? `${jobs.length} of ${total} jobs`
      : `${jobs.length} on this page${total ? ` of ${total} jobs` : ""}`;
  return html`<h1>Jobs</h1>
  <form class="filters" role="search" aria-label="Filter jobs">
    ${select("phase", "Phase", phaseFilter, PHASES)}
    ${select("cluster", "Cluster", clusterFilter, clusters)}
    <label>Label <input id="filter-label" data-filter="label" value="${labelFilter}" placeholder="key=value" autocomplete="off"></label>
  </form>
  <p class="muted" id="jobs-count">${count}</p>
  ${page?.error ? html`<p class="error" role="alert" id="jobs-error">${page.error}</p>` : ""}
  ${table(
    ["Name", "Phase", "Run", "Tasks", "Clusters", "Age", "Source"],
    jobs.map((job) => {
      const tasks = job.status?.tasks ?? [];
      const done = tasks.filter((t) => t.phase === "Running" || t.phase === "Succeeded").length;
      return html`<tr data-job="${job.metadata.name}"><td><a href="#/jobs/${encodeURIComponent(job.metadata.name)}">${job.metadata.name}</a></td>
        <td>${phase(job.status?.phase ?? "Pending")}</td><td>${job.status?.run ?? ""}</td>
        <td>${tasks.length ? `${done}/${tasks.length}` : job.spec.tasks.length}</td>
        <td>${jobClusters(job).join(", ")}</td><td>${age(job.metadata.creationTimestamp)}</td>
        <td>${sourceLink(job, state.repoWeb)}</td></tr>`;
    }),
  )}
  <nav class="pager" aria-label="Pages of jobs">
    ${here ? html`<a href="${link("")}" rel="first">« first</a>` : ""}
    ${back !== undefined ? html`<a href="${link(back)}" rel="prev">← previous</a>` : ""}
    <span>${PAGE_SIZE} a page</span>
    ${page?.continue ? html`<a href="${link(page.continue)}" rel="next">next →</a>` : ""}
  </nav>`;
}

/** The pod's terminal tab, while it runs. */
function terminalLink(pod: Pod): Html | string {
  if (pod.status?.phase !== "Running") return "";
  const where = `${encodeURIComponent(pod.metadata.namespace ?? "")}/${encodeURIComponent(pod.metadata.name)}`;
  return html`<a class="pod-terminal" href="#/terminal/${where}">terminal</a>`;
}

export function jobPage(state: State, name: string): Html {
  const job = state.get<Job>("Job", undefined, name);
  if (!job) return html`<h1>Job ${name}</h1><p>No such job (yet). <a href="#/jobs">All jobs</a></p>`;
  const tasks = state.list<Task>("Task").filter((t) => t.spec.job === name);
  const pods = state
    .list<Pod>("Pod")
    .filter((p) => p.metadata.labels?.["rlinf.io/job"] === name || p.spec.job === name);
  const podsOf = (task: Task) =>
    pods.filter(
      (p) =>
        p.metadata.namespace === task.metadata.namespace &&
        (p.spec.task === task.metadata.name || p.metadata.labels?.["rlinf.io/task"] === task.metadata.name),
    );
  const status = job.status;
  return html`<h1>Job <span id="job-name">${name}</span> ${phase(status?.phase ?? "Pending")}</h1>
  <p>Run ${status?.run ?? 0}${status?.startTime ? ` · started ${age(status.startTime)} ago` : ""}${job.spec.stopped ? " · stopped in git" : ""} · ${sourceLink(job, state.repoWeb)}</p>
  <section><h2>Tasks</h2>
  ${table(
    ["Task", "Phase", "Cluster", "Node", "Pods", "IPs", "Restarts", "Exit code", ""],
    // Before the Job controller has written status, the templates stand in as pending tasks.
    (status?.tasks?.length
      ? status.tasks
      : job.spec.tasks.map((t) => ({ name: t.name, phase: "Pending" as const }) as JobTaskStatus)
    ).map((entry) => {
      const task = tasks.find(
        (t) => t.metadata.name === entry.taskName && clusterOf(t.metadata.namespace) === entry.cluster,
      );
      const taskPods = task ? podsOf(task) : [];
      const restarts = taskPods.reduce((n, p) => n + (p.status?.restarts ?? 0), 0);
      const exitCodes = [
        entry.exitCode,
        task?.status?.exitCode,
        ...taskPods.flatMap((p) => (p.status?.containerStatuses ?? []).map((c) => c.exitCode)),
      ].filter((c): c is number => typeof c === "number");
      return html`<tr data-task="${entry.name}"><td>${entry.name}${entry.message ? html`<div class="muted">${entry.message}</div>` : ""}</td>
        <td>${phase(task?.status?.phase ?? entry.phase)}</td><td>${entry.cluster ?? ""}</td>
        <td>${
          (task?.status?.observedNodes ?? []).join(", ") ||
          taskPods
            .map((p) => p.spec.node)
            .filter(Boolean)
            .join(", ")
        }</td>
        <td>${taskPods.map((p) => html`<div>${p.metadata.name} ${phase(p.status?.phase)} ${podLogView(p.metadata.namespace ?? "", p.metadata.name)} ${terminalLink(p)}</div>`)}</td>
        <td>${taskPods.map((p) => html`<div>${p.status?.podIP ?? ""}${p.status?.domainIP ? ` · domain ${p.status.domainIP}` : ""}</div>`)}</td>
        <td>${taskPods.length ? restarts : ""}</td><td>${[...new Set(exitCodes)].join(", ")}</td>
        <td>${tensorBoardLink(task, taskPods)}</td></tr>`;
    }),
  )}</section>
  <section><h2>Timeline</h2>${conditionsList(status?.conditions)}
  ${
    status?.events?.length
      ? html`<ol class="timeline">${status.events.map(
          (e) =>
            html`<li class="${e.type === "Warning" ? "warning" : ""}"><time>${e.time}</time> <strong>${e.reason}</strong>${e.run ? ` (run ${e.run})` : ""} — ${e.message}</li>`,
        )}</ol>`
      : ""
  }</section>
  <section><h2>Run history</h2>
  ${table(
    ["Run", "Phase", "Started", "Completed", "Tasks"],
    (status?.history ?? []).map(
      (
        r,
      ) => html`<tr><td>${r.run}</td><td>${phase(r.phase)}</td><td>${r.startTime ?? ""}</td><td>${r.completionTime ?? ""}</td>
        <td>${(r.tasks ?? []).map((t) => `${t.name}: ${t.phase ?? ""}${typeof t.exitCode === "number" ? ` (exit ${t.exitCode})` : ""}`).join(", ")}</td></tr>`,
    ),
  )}</section>`;
}
