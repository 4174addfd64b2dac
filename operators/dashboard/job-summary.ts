// What the dashboard's pages show of all Jobs without holding them: Jobs counted by phase (the
// overview), the quota each team's admitted Jobs hold and the Jobs waiting for quota (the Teams
// page). Kept by adding and removing one Job at a time as the event stream sees them change, so a
// change costs the same with 100,000 Jobs as with ten. Sent as the stream's `summary` event.
import type { Job, Team } from "../api/index.ts";
import { parseQuantity } from "../lib/quantity.ts";

/** Phases whose Jobs no longer hold quota (as the Teams page always counted them). */
const DONE = new Set(["Succeeded", "Failed", "Stopped"]);
/** Waiting Jobs listed per team; the rest are counted. */
export const WAITING_LISTED = 100;

export interface TeamSummary {
  /** Per quota key (`cpu`, `nvidia.com/gpu[a100]`): the sum of the requests held, in base units. */
  used: Record<string, number>;
  /** Jobs waiting for quota (QuotaReserved=False), the first WAITING_LISTED by name, with why. */
  waiting: { name: string; message: string }[];
  waitingCount: number;
}

export interface JobSummaryView {
  total: number;
  phases: Record<string, number>;
  teams: Record<string, TeamSummary>;
  /** The id of the newest Job change counted: a page of Jobs older than it is asked for again. */
  revision: string;
}

export class JobSummary {
  #total = 0;
  #phases = new Map<string, number>();
  /** team → quota key → the sum in base units (rounded when shown: "100m" is no binary fraction). */
  #used = new Map<string, Map<string, number>>();
  /** spec.team ("" for the default team) → Job name → message. */
  #waiting = new Map<string, Map<string, string>>();
  #json: { key: string; text: string } | undefined;
  revision: string;

  constructor(revision: string, jobs: Iterable<Job> = []) {
    this.revision = revision;
    for (const job of jobs) this.add(job);
  }

  add(job: Job): void {
    this.#count(job, 1);
  }

  remove(job: Job): void {
    this.#count(job, -1);
  }

  #count(job: Job, sign: 1 | -1): void {
    this.#json = undefined;
    this.#total += sign;
    const phase = job.status?.phase ?? "Pending";
    bump(this.#phases, phase, sign);
    const quota = job.status?.quota;
    if (quota && !DONE.has(phase)) {
      const totals = this.#used.get(quota.team) ?? new Map<string, number>();
      this.#used.set(quota.team, totals);
      for (const [key, value] of Object.entries(quota.request ?? {})) {
        bump(totals, key, sign * (parseQuantity(value) || 0));
      }
      if (totals.size === 0) this.#used.delete(quota.team);
    }
    const reserved = job.status?.conditions?.find((c) => c.type === "QuotaReserved");
    if (reserved?.status === "False") {
      const team = job.spec.team ?? "";
      const names = this.#waiting.get(team) ?? new Map<string, string>();
      this.#waiting.set(team, names);
      if (sign > 0) names.set(job.metadata.name, reserved.message ?? "");
      else names.delete(job.metadata.name);
      if (names.size === 0) this.#waiting.delete(team);
    }
  }

  /** The summary as sent, with the default team's name for Jobs that name none. */
  view(teams: Team[]): JobSummaryView {
    const fallback = teams.find((t) => t.spec.default)?.metadata.name;
    const teamsOut: Record<string, TeamSummary> = {};
    const entry = (team: string) => (teamsOut[team] ??= { used: {}, waiting: [], waitingCount: 0 });
    for (const [team, totals] of this.#used)
      for (const [key, sum] of totals) {
        // Thousandths are the finest a quantity here has ("500m"); bytes are whole.
        const value = Math.abs(sum) < 1e12 ? Math.round(sum * 1000) / 1000 : Math.round(sum);
        if (value !== 0) entry(team).used[key] = value;
      }
    for (const [team, names] of this.#waiting) {
      const name = team || fallback;
      if (!name) continue;
      const out = entry(name);
      out.waitingCount += names.size;
      for (const [job, message] of names) out.waiting.push({ name: job, message });
    }
    for (const out of Object.values(teamsOut)) {
      out.waiting.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      out.waiting.length = Math.min(out.waiting.length, WAITING_LISTED);
    }
    return {
      total: this.#total,
      phases: Object.fromEntries([...this.#phases].filter(([, n]) => n > 0)),
      teams: teamsOut,
      revision: this.revision,
    };
  }

  /** view() as JSON, kept until the next change: every admin's stream sends the same text. */
  json(teams: Team[]): string {
    const key = `${this.revision}|${teams.find((t) => t.spec.default)?.metadata.name ?? ""}`;
    if (this.#json?.key !== key) this.#json = { key, text: JSON.stringify(this.view(teams)) };
    return this.#json.text;
  }
}

function bump(map: Map<string, number>, key: string, by: number): void {
  const next = (map.get(key) ?? 0) + by;
  // What float sums leave of nothing (0.1 + 0.2 - 0.1 - 0.2) counts as nothing.
  if (Math.abs(next) < 1e-9) map.delete(key);
  else map.set(key, next);
}
