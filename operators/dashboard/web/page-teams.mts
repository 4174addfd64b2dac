// Teams and their quota (docs/teams.md): per team and quota line, what its admitted Jobs hold
// (status.quota of each Job), its nominal quota and how much of the holding is borrowed from
// its cohort; then the Jobs waiting for quota and why (their QuotaReserved=False condition).
// Summed by the hub over all Jobs (job-summary.ts): the page holds no Job.
import type { Team } from "../../api/index.ts";
import { type Html, html } from "./html.mts";
import { formatAmount, formatBytes, parseQuantity } from "./quantity.mts";
import { sourceLink } from "./source-link.mts";
import type { State } from "./state.mts";
import { table } from "./widgets.mts";

function key(resource: string, flavor: string | undefined): string {
  return flavor ? `${resource}[${flavor}]` : resource;
}

function amount(quotaKey: string, value: number): string {
  return quotaKey.startsWith("memory") ? formatBytes(value) : formatAmount(value);
}

export function teamsPage(state: State): Html {
  const teams = state.list<Team>("Team");
  return html`<h1>Teams</h1>
  ${teams.map((team) => {
    const name = team.metadata.name;
    const summary = state.summary?.teams[name];
    const used = new Map(Object.entries(summary?.used ?? {}));
    const waiting = summary?.waiting ?? [];
    const more = (summary?.waitingCount ?? 0) - waiting.length;
    return html`<section class="team" data-team="${name}">
      <h2>${name}${team.spec.cohort ? html` <span class="muted">cohort ${team.spec.cohort}</span>` : ""}</h2>
      <p class="muted">weight ${team.spec.weight ?? 1}, priority ${team.spec.priority ?? 0}${team.spec.default ? ", the default team" : ""}; ${(team.spec.members ?? []).join(", ") || "no members"} · ${sourceLink(team, state.repoWeb)}</p>
      ${table(
        ["Resource", "Used", "Nominal", "Borrowed"],
        (team.spec.quota ?? []).map((line) => {
          const k = key(line.resource, line.flavor);
          const nominal = parseQuantity(line.nominal) ?? 0;
          const use = used.get(k) ?? 0;
          return html`<tr data-resource="${k}"><td>${line.resource}${line.flavor ? html` <span class="muted">${line.flavor}</span>` : ""}</td><td>${amount(k, use)}</td><td>${amount(k, nominal)}</td><td>${amount(k, Math.max(0, use - nominal))}</td></tr>`;
        }),
        "Quota",
      )}
      ${table(
        ["Job", "Why it waits"],
        waiting.map(
          (job) =>
            html`<tr data-waiting="${job.name}"><td><a href="#/jobs/${encodeURIComponent(job.name)}">${job.name}</a></td><td>${job.message}</td></tr>`,
        ),
        "Waiting",
      )}
      ${more > 0 ? html`<p class="muted" id="waiting-more-${name}">and ${more} more waiting</p>` : ""}
    </section>`;
  })}`;
}
