// One reconcile of one Job: reads the Job and its Tasks, moves the phase machine one step,
// writes. The steps decide on a status draft (runs.ts, run-phase.ts, offline-clusters.ts,
// place-tasks.ts); this file does the store reads, the Task deletions and the final commit.
//
// Level-triggered: Tasks are found by label and owner uid, never remembered, so a controller
// killed between creating a Task and writing status adopts that Task on restart instead of
// creating another.

import type { Domain, Job, Task } from "../../api/index.ts";
import { JOB_LABEL, JOB_STOP_FINALIZER } from "../../api/index.ts";
import { isNotFound, type Store } from "../../lib/store/index.ts";
import type { PlacementSnapshot } from "../placement/index.ts";
import type { QuotaLedger } from "../quota/index.ts";
import { admitJob, markEvicted } from "./admit.ts";
import { commit, writeStatus } from "./commit.ts";
import type { OfflineClusters } from "./offline-clusters.ts";
import { placeTasks, type TaskToCreate } from "./place-tasks.ts";
import { JobPlans } from "./plans.ts";
import { isTerminal } from "./rollup.ts";
import { enterStopping, markStopped, rollUpRun } from "./run-phase.ts";
import { adoptRun, restartReason, restartWanted, startRun } from "./runs.ts";
import { StatusDraft } from "./status-draft.ts";
import { ownedBy, runOf } from "./task-object.ts";

export interface ReconcileDeps {
  store: Store;
  /** The reconcile's time (ms), from the controller's clock. */
  now: number;
  snapshot: PlacementSnapshot;
  offline: OfflineClusters;
  quota: QuotaLedger;
  /** Queues another Job's reconcile (one this one preempts, or one that quota given back may admit). */
  enqueue: (job: string) => void;
}

export interface Outcome {
  /** The Job waits for room (or, with waitingForQuota, for its team's quota). */
  unschedulable?: boolean;
  /** It waits for quota, not for room: the ledger wakes it, node and Task changes need not. */
  waitingForQuota?: boolean;
  requeueAfter?: number;
}

/** Reconciles the Job named `name` once. */
export async function reconcileJob(deps: ReconcileDeps, name: string): Promise<Outcome> {
  const { store, snapshot } = deps;
  const job = await store.get<Job>("Job", undefined, name);
  if (!job) {
    new JobPlans(snapshot, name).releaseAll();
    for (const other of deps.quota.release(name)) deps.enqueue(other);
    return {};
  }
  const listed = await store.list<Task>("Task", { labelSelector: `${JOB_LABEL}=${name}` });
  const tasks = listed.items.filter((t) => ownedBy(t, job));
  return new JobReconcile(deps, job, tasks).run();
}

class JobReconcile {
  readonly #d: ReconcileDeps;
  readonly #job: Job;
  readonly #tasks: readonly Task[];
  readonly #draft: StatusDraft;
  readonly #plans: JobPlans;
  readonly #outcome: Outcome = {};
  #creates: TaskToCreate[] = [];

  constructor(deps: ReconcileDeps, job: Job, tasks: readonly Task[]) {
    this.#d = deps;
    this.#job = job;
    this.#tasks = tasks;
    this.#draft = new StatusDraft(job, deps.now);
    this.#plans = new JobPlans(deps.snapshot, job.metadata.name);
  }

  async run(): Promise<Outcome> {
    const job = this.#job;
    const draft = this.#draft;
    if (job.metadata.deletionTimestamp) {
      await this.#finalize();
      return this.#outcome;
    }
    adoptRun(draft, job, this.#tasks);
    if (job.spec.stopped) {
      await this.#stop();
    } else if (this.#d.quota.isEvicting(job.metadata.name)) {
      await this.#preempted();
    } else if (restartWanted(draft.status, job)) {
      if (await this.#cleanUp()) {
        this.#releaseQuota();
        startRun(draft, job);
        this.#plans.releaseAll();
        await this.#advance();
      }
    } else {
      await this.#advance();
    }
    const written = await commit({
      store: this.#d.store,
      plans: this.#plans,
      job,
      status: draft.status,
      creates: this.#creates,
    });
    if (written.requeueAfter !== undefined) this.#requeue(written.requeueAfter);
    return this.#outcome;
  }

  /** A Job removed from git: stopped first, then its finalizer goes and the store lets it go. */
  async #finalize(): Promise<void> {
    const job = this.#job;
    if (!(job.metadata.finalizers ?? []).includes(JOB_STOP_FINALIZER)) return;
    if (this.#tasks.length > 0) {
      await this.#deleteTasks(this.#tasks);
      enterStopping(this.#draft, "Deleting", "the Job was deleted; deleting its Tasks before it goes");
      await writeStatus(this.#d.store, job, this.#draft.status);
      return;
    }
    this.#plans.releaseAll();
    this.#releaseQuota();
    await this.#d.store.update({
      ...job,
      metadata: {
        ...job.metadata,
        finalizers: (job.metadata.finalizers ?? []).filter((f) => f !== JOB_STOP_FINALIZER),
      },
    });
  }

  /** spec.stopped: delete the Tasks, wait for the agents' cleanup, then Stopped. */
  async #stop(): Promise<void> {
    this.#plans.releaseAll();
    if (this.#tasks.length > 0) {
      await this.#deleteTasks(this.#tasks);
      enterStopping(
        this.#draft,
        "Stopping",
        "spec.stopped is true; deleting Tasks and waiting for their workloads and PVCs to be removed",
      );
      return;
    }
    this.#releaseQuota();
    markStopped(this.#draft);
  }

  /**
   * Another team takes its borrowed quota back: the Job stops through Stopping like any stop,
   * holds its quota until its Tasks are gone, then starts a fresh run that queues for quota again.
   */
  async #preempted(): Promise<void> {
    this.#plans.releaseAll();
    if (this.#tasks.length > 0) {
      await this.#deleteTasks(this.#tasks);
      markEvicted(this.#draft, this.#d.quota.teamOf(this.#job)?.name ?? "");
      enterStopping(
        this.#draft,
        "Preempted",
        "preempted to give borrowed quota back; deleting Tasks, then queueing again",
      );
      return;
    }
    this.#releaseQuota();
    startRun(this.#draft, this.#job);
    await this.#advance();
  }

  #releaseQuota(): void {
    delete this.#draft.status.quota;
    for (const other of this.#d.quota.release(this.#job.metadata.name)) this.#d.enqueue(other);
  }

  /** Before a fresh run: the previous run's Tasks must be gone (same names). True when they are. */
  async #cleanUp(): Promise<boolean> {
    if (this.#tasks.length === 0) return true;
    await this.#deleteTasks(this.#tasks);
    enterStopping(
      this.#draft,
      "Restarting",
      `${restartReason(this.#draft.status, this.#job)}: starting a fresh run; deleting the previous run's Tasks first`,
    );
    return false;
  }

  /** An active run: keep Tasks in line with the templates, place what is missing, roll up. */
  async #advance(): Promise<void> {
    const job = this.#job;
    const draft = this.#draft;
    const run = draft.status.run ?? 1;
    const templates = job.spec.tasks;
    const names = new Set(templates.map((t) => t.name));
    const current = new Map<string, Task>();
    const strays: Task[] = [];
    for (const task of this.#tasks) {
      if (task.metadata.deletionTimestamp) continue;
      const template = task.spec.task ?? "";
      if (runOf(task) !== run || !names.has(template) || current.has(template)) strays.push(task);
      else current.set(template, task);
    }
    await this.#deleteTasks(strays);

    if (!isTerminal(draft.status.phase)) {
      const offline = this.#d.offline.review(draft, job, current);
      if (offline.requeueAfter !== undefined) this.#requeue(offline.requeueAfter);
      await this.#deleteTasks([...offline.replace.values()]);
      for (const template of offline.replace.keys()) current.delete(template);

      // The pods' network init container needs the Domain's CIDR, which the Task carries.
      const admission = admitJob(draft, job, this.#d.quota, current.size > 0);
      for (const victim of admission.wake) this.#d.enqueue(victim);
      if (!admission.admitted) {
        this.#outcome.unschedulable = true;
        this.#outcome.waitingForQuota = true;
        rollUpRun(draft, job, templates, current);
        return;
      }

      const domain = job.spec.domain
        ? await this.#d.store.get<Domain>("Domain", undefined, job.spec.domain)
        : undefined;
      const placed = placeTasks({
        draft,
        job,
        run,
        snapshot: this.#d.snapshot,
        plans: this.#plans,
        current,
        ...(domain ? { domainCIDR: domain.spec.cidr } : {}),
      });
      if (placed.unschedulable) this.#outcome.unschedulable = true;
      this.#creates = placed.creates;
    }
    rollUpRun(draft, job, templates, current);
    if (isTerminal(draft.status.phase)) this.#releaseQuota();
  }

  async #deleteTasks(tasks: readonly Task[]): Promise<void> {
    // Their room is given back when the deletion's watch event arrives, which also wakes the
    // Jobs waiting for it.
    for (const task of tasks) {
      if (task.metadata.deletionTimestamp) continue;
      try {
        await this.#d.store.delete("Task", task.metadata.namespace, task.metadata.name, {
          preconditions: task.metadata.uid ? { uid: task.metadata.uid } : {},
        });
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
    }
  }

  #requeue(ms: number): void {
    const after = Math.max(1, Math.ceil(ms));
    this.#outcome.requeueAfter = Math.min(this.#outcome.requeueAfter ?? after, after);
  }
}
