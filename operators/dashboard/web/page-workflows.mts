import type { Job, Workflow } from "../../api/index.ts";
import { dagSvg } from "./dag.mts";
import { type Html, html } from "./html.mts";
import { sourceLink } from "./source-link.mts";
import type { State } from "./state.mts";
import { age } from "./time.mts";
import { phase, table } from "./widgets.mts";

export function workflowsPage(state: State): Html {
  const workflows = state.list<Workflow>("Workflow");
  return html`<h1>Workflows</h1>
  ${workflows.length === 0 ? html`<p class="muted">No workflows in git.</p>` : ""}
  ${workflows.map((wf) => {
    const statusByName = new Map((wf.status?.nodes ?? []).map((n) => [n.name, n]));
    const nodes = wf.spec.jobs.map((j) => {
      const status = statusByName.get(j.name);
      const job = status?.job ? state.get<Job>("Job", undefined, status.job) : undefined;
      return {
        name: j.name,
        dependsOn: j.dependsOn ?? [],
        phase: status?.phase ?? "Pending",
        run: job?.status?.run,
        job: status?.job,
      };
    });
    return html`<section class="workflow" data-workflow="${wf.metadata.name}">
      <h2>${wf.metadata.name} ${phase(wf.status?.phase ?? "Pending")}</h2>
      <p class="muted">run ${wf.status?.run ?? 0} · ${wf.spec.failurePolicy ?? "StopAll"} · ${age(wf.metadata.creationTimestamp)} old · ${sourceLink(wf, state.repoWeb)}</p>
      <div class="scroll">${dagSvg(`DAG of workflow ${wf.metadata.name}`, nodes)}</div>
      ${table(
        ["Step", "Depends on", "Phase", "Job", "Run"],
        nodes.map(
          (n) => html`<tr><td>${n.name}</td><td>${n.dependsOn.join(", ")}</td><td>${phase(n.phase)}</td>
            <td>${n.job ? html`<a href="#/jobs/${encodeURIComponent(n.job)}">${n.job}</a>` : ""}</td><td>${n.run ?? ""}</td></tr>`,
        ),
      )}
    </section>`;
  })}`;
}
