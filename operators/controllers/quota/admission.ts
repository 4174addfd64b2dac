// Admission (pure): whether a Job's whole request fits its team's quota plus what the team may
// borrow from its cohort, and if not, whether taking borrowed quota back from other teams would
// make it fit. Kueue's model, over the whole pool:
//
//   - a team alone: used + request ≤ nominal, per limited resource;
//   - in a cohort: used + request ≤ nominal + borrowingLimit, and the cohort's total use stays
//     within the cohort's total nominal (what one team borrows, another left idle);
//   - a Job that borrows waits while a team of the cohort with a lower share by weight (dominant
//     resource fairness) has a Job waiting that fits, or while quota is being taken back;
//   - a Job that fits its team's nominal quota but not the cohort's idle capacity preempts
//     Jobs of teams that borrow: lowest priority first, then the newest.

import { formatQuota, formatQuotaAmount, type TeamQuota } from "./team-quota.ts";

type Amounts = Readonly<Record<string, number>>;

export interface AdmittedJob {
  job: string;
  team: string;
  request: Amounts;
  priority: number;
  /** When it was admitted (ms): among equal priorities the newest is preempted first. */
  admittedAt: number;
  /** Being preempted: its quota comes back once its Tasks are gone. */
  evicting: boolean;
}

export interface WaitingJob {
  job: string;
  team: string;
  request: Amounts;
}

/** Waiting Jobs of one team that ask for the same amounts: one decision speaks for all of them. */
export interface WaitingGroup {
  request: Amounts;
  jobs: ReadonlySet<string>;
}

export interface QuotaState {
  teams: ReadonlyMap<string, TeamQuota>;
  admitted: ReadonlyMap<string, AdmittedJob>;
  waiting: ReadonlyMap<string, WaitingJob>;
  /** usage(state), when the holder keeps it current; computed when absent. */
  used?: ReadonlyMap<string, Amounts>;
  /**
   * `waiting` by team, then by request (requestKey), when the holder keeps it current: a decision
   * then reads each team's few distinct requests, not every waiting Job. Computed when absent.
   */
  waitingGroups?: ReadonlyMap<string, ReadonlyMap<string, WaitingGroup>>;
  /** The teams with a Job being preempted, when the holder keeps it current; computed when absent. */
  evictingTeams?: ReadonlySet<string>;
}

/** A request's identity: its amounts in key order. */
export function requestKey(request: Amounts): string {
  return Object.keys(request)
    .sort()
    .map((key) => `${key}=${request[key]}`)
    .join(",");
}

/** `state.waiting` grouped by team and request (what the ledger keeps current). */
export function waitingGroupsOf(state: QuotaState): ReadonlyMap<string, ReadonlyMap<string, WaitingGroup>> {
  if (state.waitingGroups) return state.waitingGroups;
  const groups = new Map<string, Map<string, { request: Amounts; jobs: Set<string> }>>();
  for (const w of state.waiting.values()) {
    let byRequest = groups.get(w.team);
    if (!byRequest) {
      byRequest = new Map();
      groups.set(w.team, byRequest);
    }
    const key = requestKey(w.request);
    const group = byRequest.get(key) ?? { request: w.request, jobs: new Set<string>() };
    group.jobs.add(w.job);
    byRequest.set(key, group);
  }
  return groups;
}

/**
 * Per team of `team`'s cohort (or `team` alone), one waiting Job of each distinct request that
 * fits now: after a change of the cohort's use, these are the Jobs worth deciding again. The
 * others would only hear "does not fit" again; a Job held for fair share is among them when its
 * team's request fits, and the team it waits for has its own among them.
 */
export function fittingHeads(state: QuotaState, team: TeamQuota): string[] {
  const used = state.used ?? usage(state);
  const view = new View(state, used);
  const groups = waitingGroupsOf(state);
  const heads: string[] = [];
  for (const member of view.cohort(team)) {
    for (const group of groups.get(member.name)?.values() ?? []) {
      if (view.short(member, group.request)) continue;
      let first: string | undefined;
      for (const job of group.jobs) if (first === undefined || job < first) first = job;
      if (first !== undefined) heads.push(first);
    }
  }
  return heads;
}

export type Decision =
  | { admit: true; borrowing: boolean; message: string }
  | {
      admit: false;
      reason: "QuotaExceeded" | "FairShare" | "Preempting";
      message: string;
      /** Jobs to preempt now (reason Preempting; empty when they already are). */
      victims: string[];
    };

/** Per team, the sum of its admitted Jobs' requests (without the Jobs in `without`). */
export function usage(state: QuotaState, without?: ReadonlySet<string>): Map<string, Record<string, number>> {
  const used = new Map<string, Record<string, number>>();
  for (const name of state.teams.keys()) used.set(name, {});
  for (const a of state.admitted.values()) {
    if (without?.has(a.job)) continue;
    const total = used.get(a.team);
    if (!total) continue;
    for (const [key, amount] of Object.entries(a.request)) total[key] = (total[key] ?? 0) + amount;
  }
  return used;
}

/** The teams of `team`'s cohort, itself included. */
export function cohortOf(state: QuotaState, team: TeamQuota): TeamQuota[] {
  if (!team.cohort) return [team];
  return [...state.teams.values()].filter((t) => t.cohort === team.cohort);
}

/**
 * One decision's reading of the state at one usage: cohorts, free amounts and nominal totals are
 * computed once each, so a decision that looks at thousands of waiting Jobs stays linear in them.
 */
class View {
  readonly state: QuotaState;
  readonly used: ReadonlyMap<string, Amounts>;
  readonly #cohorts = new Map<string, TeamQuota[]>();
  readonly #free = new Map<string, number>();
  readonly #totals = new Map<string, number>();

  constructor(state: QuotaState, used: ReadonlyMap<string, Amounts>) {
    this.state = state;
    this.used = used;
  }

  cohort(team: TeamQuota): TeamQuota[] {
    if (!team.cohort) return [team];
    let teams = this.#cohorts.get(team.cohort);
    if (!teams) {
      teams = cohortOf(this.state, team);
      this.#cohorts.set(team.cohort, teams);
    }
    return teams;
  }

  /** The cohort's (or the lone team's) nominal total of `key`. */
  total(team: TeamQuota, key: string): number {
    const id = `${team.cohort ?? `team:${team.name}`}\0${key}`;
    let total = this.#totals.get(id);
    if (total === undefined) {
      total = this.cohort(team).reduce((sum, t) => sum + (t.nominal[key] ?? 0), 0);
      this.#totals.set(id, total);
    }
    return total;
  }

  /** How much of `key` the team may still take: its own headroom, capped by the cohort's idle capacity. */
  free(team: TeamQuota, key: string): number {
    const id = `${team.name}\0${key}`;
    let free = this.#free.get(id);
    if (free === undefined) {
      free = this.#computeFree(team, key);
      this.#free.set(id, free);
    }
    return free;
  }

  #computeFree(team: TeamQuota, key: string): number {
    const nominal = team.nominal[key];
    if (nominal === undefined) return Number.POSITIVE_INFINITY;
    const mine = this.used.get(team.name)?.[key] ?? 0;
    if (!team.cohort) return Math.max(0, nominal - mine);
    const own = nominal + (team.borrowingLimit[key] ?? Number.POSITIVE_INFINITY) - mine;
    let cohortUsed = 0;
    for (const t of this.cohort(team)) cohortUsed += this.used.get(t.name)?.[key] ?? 0;
    return Math.max(0, Math.min(own, this.total(team, key) - cohortUsed));
  }

  /** The first limited resource the request lacks, with what is free of it. */
  short(team: TeamQuota, request: Amounts): { key: string; need: number; free: number } | undefined {
    let found: { key: string; need: number; free: number } | undefined;
    for (const key in request) {
      const need = request[key] as number;
      if (need <= 0) continue;
      const free = this.free(team, key);
      if (need > free && (!found || key < found.key)) found = { key, need, free };
    }
    return found;
  }

  /**
   * A team's dominant share by weight: its largest use of a limited resource as a fraction of
   * the cohort's nominal total of that resource, divided by its weight.
   */
  share(team: TeamQuota, used: Amounts): number {
    let share = 0;
    for (const key in team.nominal) {
      const total = this.total(team, key);
      if (total > 0) share = Math.max(share, (used[key] ?? 0) / total);
    }
    return share / team.weight;
  }
}

/** How much of `key` the team may still take at usage `used`. */
export function freeFor(
  state: QuotaState,
  team: TeamQuota,
  key: string,
  used: ReadonlyMap<string, Amounts>,
): number {
  return new View(state, used).free(team, key);
}

/** A team's dominant share by weight at its usage `used` (see View.share). */
export function dominantShare(state: QuotaState, team: TeamQuota, used: Amounts): number {
  return new View(state, new Map()).share(team, used);
}

function withinNominal(team: TeamQuota, request: Amounts, used: ReadonlyMap<string, Amounts>): boolean {
  const mine = used.get(team.name) ?? {};
  return Object.entries(request).every(([key, need]) => {
    const nominal = team.nominal[key];
    return nominal === undefined || (mine[key] ?? 0) + need <= nominal;
  });
}

function borrows(team: TeamQuota, used: Amounts): boolean {
  return Object.entries(team.nominal).some(([key, nominal]) => (used[key] ?? 0) > nominal);
}

function plus(a: Amounts, b: Amounts): Record<string, number> {
  const out: Record<string, number> = { ...a };
  for (const [key, value] of Object.entries(b)) out[key] = (out[key] ?? 0) + value;
  return out;
}

/** Decides on one Job of `team` asking for `request`. */
export function decide(state: QuotaState, job: string, team: TeamQuota, request: Amounts): Decision {
  const used = state.used ?? usage(state);
  const view = new View(state, used);
  const short = view.short(team, request);
  if (!short) {
    const after = plus(used.get(team.name) ?? {}, request);
    const borrowing = borrows(team, after);
    if (borrowing) {
      const blocked = fairShareBlock(view, job, team, after);
      if (blocked) return { admit: false, reason: "FairShare", message: blocked, victims: [] };
    }
    return {
      admit: true,
      borrowing,
      message: `admitted to team ${team.name}${borrowing ? `, borrowing from cohort ${team.cohort}` : ""}`,
    };
  }
  const wants = `team ${team.name} needs ${formatQuota(short.key, short.need)}, ${formatQuotaAmount(short.key, short.free)} free`;
  const reclaim =
    team.cohort && withinNominal(team, request, used) ? victimsFor(state, team, request) : undefined;
  if (reclaim) {
    const names = [...reclaim.evicting, ...reclaim.victims].sort();
    return {
      admit: false,
      reason: "Preempting",
      message: `${wants}: taking its nominal quota back from ${names.join(", ")} (borrowed in cohort ${team.cohort})`,
      victims: reclaim.victims,
    };
  }
  return { admit: false, reason: "QuotaExceeded", message: wants, victims: [] };
}

/**
 * A borrowing Job waits while quota is being taken back in its cohort, or while another team
 * with a lower share by weight (after its own Job) has a waiting Job that fits.
 */
function fairShareBlock(view: View, job: string, team: TeamQuota, after: Amounts): string | undefined {
  const { state, used } = view;
  if (!team.cohort) return undefined;
  const cohort = view.cohort(team);
  if (state.evictingTeams) {
    if (cohort.some((t) => state.evictingTeams?.has(t.name)))
      return `cohort ${team.cohort} is taking borrowed quota back; borrowing waits until that is done`;
  } else {
    for (const a of state.admitted.values()) {
      if (a.evicting && state.teams.get(a.team)?.cohort === team.cohort)
        return `cohort ${team.cohort} is taking borrowed quota back; borrowing waits until that is done`;
    }
  }
  const mine = view.share(team, after);
  let first: { job: string; team: string; share: number } | undefined;
  // By team and distinct request: every Job of a group has the same share and the same fit.
  const groups = waitingGroupsOf(state);
  for (const other of cohort) {
    if (other.name === team.name) continue;
    for (const group of groups.get(other.name)?.values() ?? []) {
      if (view.short(other, group.request)) continue;
      const theirs = view.share(other, plus(used.get(other.name) ?? {}, group.request));
      if (!(theirs < mine || (theirs === mine && other.name < team.name))) continue;
      if (first && theirs > first.share) continue;
      for (const w of group.jobs) {
        if (w === job) continue;
        if (!first || theirs < first.share || (theirs === first.share && w < first.job))
          first = { job: w, team: other.name, share: theirs };
      }
    }
  }
  return first
    ? `idle capacity of cohort ${team.cohort} goes to team ${first.team} first (Job ${first.job}): its share by weight would be ${first.share.toFixed(2)}, team ${team.name}'s ${mine.toFixed(2)}`
    : undefined;
}

/**
 * Jobs of other teams of the cohort that borrow, to preempt so that `request` fits: lowest
 * priority first, then the newest. Jobs already being preempted count as gone. Undefined when
 * even preempting every borrower would not make room.
 */
function victimsFor(
  state: QuotaState,
  team: TeamQuota,
  request: Amounts,
): { victims: string[]; evicting: string[] } | undefined {
  const gone = new Set<string>();
  const evicting: string[] = [];
  for (const a of state.admitted.values()) {
    if (a.evicting) {
      gone.add(a.job);
      evicting.push(a.job);
    }
  }
  const victims: string[] = [];
  let used: ReadonlyMap<string, Amounts> = usage(state, gone);
  const candidates = [...state.admitted.values()]
    .filter((a) => !a.evicting && a.team !== team.name && state.teams.get(a.team)?.cohort === team.cohort)
    .sort((a, b) => a.priority - b.priority || b.admittedAt - a.admittedAt || (a.job < b.job ? -1 : 1));
  for (const candidate of candidates) {
    const view = new View(state, used);
    if (!view.short(team, request)) break;
    const owner = state.teams.get(candidate.team);
    if (!owner || !borrows(owner, used.get(owner.name) ?? {})) continue;
    // Only a Job holding a resource this request lacks gives back anything that helps.
    const lacking = Object.keys(request).filter((key) => (request[key] as number) > view.free(team, key));
    if (!lacking.some((key) => (candidate.request[key] ?? 0) > 0)) continue;
    victims.push(candidate.job);
    const left: Record<string, number> = { ...used.get(owner.name) };
    for (const [key, amount] of Object.entries(candidate.request)) left[key] = (left[key] ?? 0) - amount;
    used = new Map(used).set(owner.name, left);
  }
  if (new View(state, used).short(team, request)) return undefined;
  return evicting.length + victims.length > 0 ? { victims, evicting } : undefined;
}
