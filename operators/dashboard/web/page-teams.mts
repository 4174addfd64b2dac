// Teams and their quota (docs/teams.md): per team and quota line, what its admitted Jobs hold
// (status.quota of each Job), its nominal quota and how much of the holding is borrowed from
// its cohort; then the Jobs waiting for quota and why (their QuotaReserved=False condition).
import type { Job, Team } from "../../api/index.ts";
import { type Html, html } from "./html.mts";
import { formatAmount, formatBytes, parseQuantity } from "./quantity.mts";
import { sourceLink } from "./source-link.mts";
import type { State } from "./state.mts";
import { table } from "./widgets.mts";

const DONE = new Set(["Succeeded", "Failed", "Stopped"]);

function key(resource: string, flavor: string | undefined): string {
  return flavor ? `${resource}[${flavor}]` : resource;
}

function amount(quotaKey: string, value: number): string {
  return quotaKey.startsWith("memory") ? formatBytes(value) : formatAmount(value);
}

export function teamsPage(state: State): Html {
  const jobs = state.list<Job>("Job");
  const held = new Map<string, Map<string, number>>();
  for (const job of jobs) {
    const quota = job.status?.quota;
    if (!quota || DONE.has(job.status?.phase ?? "")) continue;
    const totals = held.get(quota.team) ?? new Map<string, number>();
    for (const [k, v] of Object.entries(quota.request))
      totals.set(k, (totals.get(k) ?? 0) + (parseQuantity(v) ?? 0));
    held.set(quota.team, totals);
  }
  const teams = state.list<Team>("Team");
  const fallback = teams.find((t) => t.spec.default)?.metadata.name;
  const waitingFor = (team: string) =>
    jobs.filter((job) => {
      const reserved = job.status?.conditions?.find((c) => c.type === "QuotaReserved");
      return reserved?.status === "False" && (job.spec.team ?? fallback) === team;
    });
  return html`<h1>Teams</h1>
  ${teams.map((team) => {
    const name = team.metadata.name;
    const used = held.get(name) ?? new Map<string, number>();
    const waiting = waitingFor(name);
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
        waiting.map((job) => {
          const reserved = job.status?.conditions?.find((c) => c.type === "QuotaReserved");
          return html`<tr data-waiting="${job.metadata.name}"><td><a href="#/jobs/${encodeURIComponent(job.metadata.name)}">${job.metadata.name}</a></td><td>${reserved?.message ?? ""}</td></tr>`;
        }),
        "Waiting",
      )}
    </section>`;
  })}`;
}
