// The hub's running account of quota: the Teams, the Jobs admitted (what each holds) and the
// Jobs waiting. Decisions are taken and booked synchronously, so two reconciles in one process
// never admit into the same room (as PlacementSnapshot does for nodes).
//
// It is rebuilt from the store on start: a Job holds quota while its QuotaReserved condition
// is True and its run is not over; Evicted=True says it is being preempted.

import type { Job, Team } from "../../api/index.ts";
import type { Store } from "../../lib/store/index.ts";
import {
  type AdmittedJob,
  type Decision,
  decide,
  fittingHeads,
  type QuotaState,
  requestKey,
  type WaitingGroup,
  type WaitingJob,
} from "./admission.ts";
import { jobRequest, type TeamQuota, teamNameOf, teamQuota } from "./team-quota.ts";

/** Job phases whose run is over: they hold no quota. */
const DONE = new Set(["Succeeded", "Failed", "Stopped"]);

export class QuotaLedger {
  readonly #teams = new Map<string, TeamQuota>();
  readonly #defaults = new Set<string>();
  readonly #admitted = new Map<string, AdmittedJob>();
  readonly #waiting = new Map<string, WaitingJob>();
  /** #waiting by team and request, kept with it. */
  readonly #groups = new Map<string, Map<string, WaitingGroup & { jobs: Set<string> }>>();
  /** Per team, how many of its admitted Jobs are being preempted. */
  readonly #evicting = new Map<string, number>();
  /** Teams whose cohort's use changed since the last wakes(): their fitting Jobs are woken. */
  readonly #changed = new Set<string>();
  /** Per team, the sum of its admitted Jobs' requests, kept as they come and go. */
  readonly #used = new Map<string, Record<string, number>>();
  #loaded: Promise<void> | undefined;

  /** Fills the ledger from the store once (later calls wait for the same load). */
  load(store: Store): Promise<void> {
    this.#loaded ??= (async () => {
      const [teams, jobs] = await Promise.all([store.list<Team>("Team"), store.list<Job>("Job")]);
      for (const team of teams.items) this.setTeam(team);
      for (const job of jobs.items) {
        const conditions = job.status?.conditions ?? [];
        const reserved = conditions.find((c) => c.type === "QuotaReserved");
        if (reserved?.status !== "True" || DONE.has(job.status?.phase ?? "")) {
          this.expect(job);
          continue;
        }
        const evicted = conditions.find((c) => c.type === "Evicted")?.status === "True";
        const at = Date.parse(reserved.lastTransitionTime ?? "");
        this.adopt(job, Number.isNaN(at) ? 0 : at, evicted);
      }
    })();
    return this.#loaded;
  }

  /** Records a Team; returns the waiting Jobs its change may let in. */
  setTeam(team: Team): string[] {
    const quota = teamQuota(team);
    this.#teams.set(quota.name, quota);
    if (team.spec.default) this.#defaults.add(quota.name);
    else this.#defaults.delete(quota.name);
    return [...this.#waiting.keys()];
  }

  deleteTeam(name: string): string[] {
    this.#teams.delete(name);
    this.#defaults.delete(name);
    return [...this.#waiting.keys()];
  }

  /** The team whose quota the Job counts against; undefined: none applies. */
  teamOf(job: Job): TeamQuota | undefined {
    const [fallback] = [...this.#defaults].sort();
    const name = teamNameOf(job, fallback);
    return name === undefined ? undefined : this.#teams.get(name);
  }

  isAdmitted(job: string): boolean {
    return this.#admitted.has(job);
  }

  isEvicting(job: string): boolean {
    return this.#admitted.get(job)?.evicting === true;
  }

  /**
   * A Job the hub has seen: one that may ask for quota counts as waiting from now on, before its
   * first reconcile, so that idle quota goes by weight among every team that wants it, not to
   * whichever team's Jobs are reconciled first (a cold start: every Job in one revision).
   */
  expect(job: Job): void {
    const name = job.metadata.name;
    if (this.#admitted.has(name)) return;
    const team = this.teamOf(job);
    if (!team || job.spec.stopped || DONE.has(job.status?.phase ?? "")) {
      this.#unwait(name);
      return;
    }
    this.#wait({ job: name, team: team.name, request: jobRequest(job.spec.tasks, team) });
  }

  /** Counts a Job as admitted without a decision: one that already runs (its Tasks exist). */
  adopt(job: Job, now: number, evicting = false): void {
    const team = this.teamOf(job);
    if (!team) return;
    this.#unwait(job.metadata.name);
    this.#book({
      job: job.metadata.name,
      team: team.name,
      request: jobRequest(job.spec.tasks, team),
      priority: team.priority,
      admittedAt: now,
      evicting,
    });
  }

  #book(admitted: AdmittedJob): void {
    this.#unbook(admitted.job);
    this.#admitted.set(admitted.job, admitted);
    this.#count(admitted, 1);
    if (admitted.evicting) this.#markEvicting(admitted);
  }

  #unbook(job: string): boolean {
    const known = this.#admitted.get(job);
    if (!known) return false;
    this.#admitted.delete(job);
    this.#count(known, -1);
    if (known.evicting) this.#evicting.set(known.team, (this.#evicting.get(known.team) ?? 1) - 1);
    return true;
  }

  #markEvicting(admitted: AdmittedJob): void {
    admitted.evicting = true;
    this.#evicting.set(admitted.team, (this.#evicting.get(admitted.team) ?? 0) + 1);
  }

  #wait(waiting: WaitingJob): void {
    this.#unwait(waiting.job);
    this.#waiting.set(waiting.job, waiting);
    let byRequest = this.#groups.get(waiting.team);
    if (!byRequest) {
      byRequest = new Map();
      this.#groups.set(waiting.team, byRequest);
    }
    const key = requestKey(waiting.request);
    let group = byRequest.get(key);
    if (!group) {
      group = { request: waiting.request, jobs: new Set() };
      byRequest.set(key, group);
    }
    group.jobs.add(waiting.job);
  }

  #unwait(job: string): void {
    const known = this.#waiting.get(job);
    if (!known) return;
    this.#waiting.delete(job);
    const byRequest = this.#groups.get(known.team);
    const key = requestKey(known.request);
    const group = byRequest?.get(key);
    group?.jobs.delete(job);
    if (group?.jobs.size === 0) byRequest?.delete(key);
    if (byRequest?.size === 0) this.#groups.delete(known.team);
  }

  #count(admitted: AdmittedJob, sign: 1 | -1): void {
    this.#changed.add(admitted.team);
    let total = this.#used.get(admitted.team);
    if (!total) {
      total = {};
      this.#used.set(admitted.team, total);
    }
    for (const [key, amount] of Object.entries(admitted.request))
      total[key] = (total[key] ?? 0) + sign * amount;
  }

  /** Decides on a Job not admitted yet and books the outcome: admitted, or waiting (with victims marked). */
  admit(job: Job, team: TeamQuota, now: number): Decision {
    const name = job.metadata.name;
    const request = jobRequest(job.spec.tasks, team);
    const decision = decide(this.state(), name, team, request);
    if (decision.admit) {
      this.#unwait(name);
      this.#book({
        job: name,
        team: team.name,
        request,
        priority: team.priority,
        admittedAt: now,
        evicting: false,
      });
    } else {
      this.#wait({ job: name, team: team.name, request });
      for (const victim of decision.victims) {
        const admitted = this.#admitted.get(victim);
        if (admitted && !admitted.evicting) this.#markEvicting(admitted);
      }
    }
    return decision;
  }

  /** The Job holds no quota any more (its run is over, or its Tasks are gone); returns the Jobs to wake. */
  release(job: string): string[] {
    this.#unbook(job);
    this.#unwait(job);
    return this.wakes();
  }

  /** The Job no longer waits for quota (it was stopped or deleted while waiting). */
  forget(job: string): void {
    this.#unwait(job);
  }

  /**
   * The waiting Jobs worth deciding again since the last call: in each cohort whose use changed
   * (a Job admitted or giving its quota back), per team, one Job of each distinct request that
   * fits now. Not every waiting Job: those that do not fit would only be told so again, and a
   * Job admitted changes the use again, which wakes the next.
   */
  wakes(): string[] {
    if (this.#changed.size === 0) return [];
    const state = this.state();
    const cohorts = new Set<string>();
    const out = new Set<string>();
    for (const name of this.#changed) {
      const team = this.#teams.get(name);
      if (!team) continue;
      const id = team.cohort ? `cohort:${team.cohort}` : `team:${name}`;
      if (cohorts.has(id)) continue;
      cohorts.add(id);
      for (const job of fittingHeads(state, team)) out.add(job);
    }
    this.#changed.clear();
    return [...out];
  }

  state(): QuotaState {
    const evictingTeams = new Set<string>();
    for (const [team, count] of this.#evicting) if (count > 0) evictingTeams.add(team);
    return {
      teams: this.#teams,
      admitted: this.#admitted,
      waiting: this.#waiting,
      used: this.#used,
      waitingGroups: this.#groups,
      evictingTeams,
    };
  }
}
