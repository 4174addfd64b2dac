// The Job controller (seed 000 §6-8): one Task per template, placed all-or-nothing across
// clusters, and the phase machine
//
//   (new) → Pending → Running → Succeeded | Failed
//   any   → Stopping (Tasks deleted, waiting for the agents' cleanup) → Stopped
//   Stopped + stopped cleared, a changed rlinf.io/run annotation, or changed task templates
//     (spec.tasks, domain, sshPublicKey: status.specHash) → Stopping → a fresh run
//
// Level-triggered: every reconcile reads the Job and its Tasks and moves one step. Tasks are
// found by label and owner uid, never remembered, so a controller killed between creating a
// Task and writing status adopts that Task on restart instead of creating another.

import type {
  Cluster,
  Job,
  JobEvent,
  JobRunRecord,
  JobStatus,
  JobTaskStatus,
  Node,
  Task,
  TaskTemplate,
} from "../../api/index.ts";
import type { Clock } from "../../lib/clock.ts";
import {
  type Controller,
  ownerKeys,
  type ReconcileContext,
  type ReconcileRequest,
  type ReconcileResult,
} from "../../lib/controller/index.ts";
import {
  type BatchOp,
  deepEqual,
  isAlreadyExists,
  isNotFound,
  type KubeObject,
  type Store,
} from "../../lib/store/index.ts";
import { JOB_LABEL, JOB_STOP_FINALIZER, RUN_ANNOTATION } from "../labels.ts";
import {
  clusterOfNamespace,
  offlineSince,
  PlacementSnapshot,
  type PlacementTask,
  placeJob,
  placementTask,
} from "../placement/index.ts";
import { appendEvent, getCondition, setCondition, timestamp } from "./conditions.ts";
import { failureMessage, type RunPhase, rollup, taskStatus } from "./rollup.ts";
import { specHash } from "./spec-hash.ts";
import { ownedBy, runOf, taskObject } from "./task-object.ts";

export interface JobControllerOptions {
  /** Default: the manager's clock. */
  clock?: Clock;
  /** How long a cluster may be Offline before its not-yet-running Tasks are placed elsewhere (ms). Default 5 min. */
  offlineGracePeriod?: number;
  /** How often an unplaceable Job is tried again besides on Node and Cluster changes (ms). Default 60 s. */
  unschedulableRetry?: number;
  /** The pool picture; default a new one. Share it to place other work against the same reservations. */
  snapshot?: PlacementSnapshot;
  /** Controller name (metrics label). Default "job". */
  name?: string;
  /** Parallel reconciles (placement stays exact: it reserves before it awaits). Default 16. */
  workers?: number;
}

export interface JobController extends Controller {
  readonly snapshot: PlacementSnapshot;
}

const HISTORY_LIMIT = 10;

function planKey(job: string, task: string): string {
  return `plan/${job}/${task}`;
}

function planGroup(job: string): string {
  return `plans/${job}`;
}

function taskKey(task: { metadata: { namespace?: string; name: string } }): string {
  return `${task.metadata.namespace}/${task.metadata.name}`;
}

function isTerminal(phase: string | undefined): phase is "Succeeded" | "Failed" {
  return phase === "Succeeded" || phase === "Failed";
}

function started(task: Task | undefined): boolean {
  const phase = task?.status?.phase;
  return phase === "Running" || phase === "Succeeded" || phase === "Failed";
}

export function createJobController(options: JobControllerOptions = {}): JobController {
  const snapshot = options.snapshot ?? new PlacementSnapshot();
  const grace = options.offlineGracePeriod ?? 5 * 60_000;
  const retry = options.unschedulableRetry ?? 60_000;
  /** Jobs waiting for room: any Node or Cluster change queues them. */
  const waiting = new Set<string>();
  /** cluster → Jobs with Tasks there: a Cluster change queues them. */
  const jobsOnCluster = new Map<string, Map<string, string>>();
  /** When this process first saw a cluster Offline, for clusters that report no transition time. */
  const offlineNoticed = new Map<string, number>();

  const trackTask = (task: KubeObject, deleted: boolean) => {
    const cluster = clusterOfNamespace(task.metadata.namespace);
    const job = task.metadata.labels?.[JOB_LABEL];
    if (!cluster || !job) return;
    let jobs = jobsOnCluster.get(cluster);
    if (!jobs) {
      jobs = new Map();
      jobsOnCluster.set(cluster, jobs);
    }
    if (deleted) jobs.delete(task.metadata.name);
    else jobs.set(task.metadata.name, job);
  };

  const toOwners = ownerKeys("Job", { controllerOnly: true });

  const controller: JobController = {
    name: options.name ?? "job",
    kind: "Job",
    snapshot,
    // Reconciles wait mostly on the store's disk sync, which concurrent writes share.
    workers: options.workers ?? 16,
    watches: [
      {
        kind: "Task",
        mapToKeys(object, type) {
          const key = taskKey(object);
          const held = snapshot.isReserved(key);
          snapshot.observeTask(object as Task, type === "DELETED");
          trackTask(object, type === "DELETED");
          const owners = toOwners(object, type);
          // Room given back (a Task deleted or started) may be what a waiting Job needs.
          return held && !snapshot.isReserved(key) ? new Set([...owners, ...waiting]) : owners;
        },
      },
      {
        kind: "Node",
        mapToKeys(object, type) {
          if (type === "DELETED") {
            snapshot.deleteNode(
              object.metadata.namespace,
              object.metadata.name,
              Number(object.metadata.resourceVersion),
            );
            return [...waiting];
          }
          // Heartbeats that change nothing placement reads wake nobody.
          return snapshot.setNode(object as Node) ? [...waiting] : [];
        },
      },
      {
        kind: "Cluster",
        mapToKeys(object, type) {
          const name = object.metadata.name;
          if (type === "DELETED") snapshot.deleteCluster(name, Number(object.metadata.resourceVersion));
          else if (!snapshot.setCluster(object as Cluster)) return [];
          return new Set([...waiting, ...(jobsOnCluster.get(name)?.values() ?? [])]);
        },
      },
    ],
    async reconcile(
      request: ReconcileRequest,
      context: ReconcileContext,
    ): Promise<ReconcileResult | undefined> {
      await snapshot.load(context.store);
      const clock = options.clock ?? context.clock;
      const reconciler = new JobReconcile({
        store: context.store,
        now: clock.now(),
        snapshot,
        grace,
        offlineNoticed,
      });
      const outcome = await reconciler.run(request.name);
      if (outcome.unschedulable) waiting.add(request.name);
      else waiting.delete(request.name);
      if (outcome.unschedulable) {
        return { requeueAfter: Math.min(retry, outcome.requeueAfter ?? retry) };
      }
      return outcome.requeueAfter !== undefined ? { requeueAfter: outcome.requeueAfter } : undefined;
    },
  };
  return controller;
}

interface ReconcileDeps {
  store: Store;
  now: number;
  snapshot: PlacementSnapshot;
  grace: number;
  offlineNoticed: Map<string, number>;
}

interface Outcome {
  unschedulable?: boolean;
  requeueAfter?: number;
}

/** One reconcile of one Job: reads, decides, writes; then is thrown away. */
class JobReconcile {
  #d: ReconcileDeps;
  #job!: Job;
  #status!: JobStatus;
  #tasks: Task[] = [];
  #outcome: Outcome = {};
  /** Tasks to create at commit. */
  #creates: { template: TaskTemplate; cluster: string; object: Task }[] = [];

  constructor(deps: ReconcileDeps) {
    this.#d = deps;
  }

  async run(name: string): Promise<Outcome> {
    const { store } = this.#d;
    const job = await store.get<Job>("Job", undefined, name);
    if (!job) {
      this.#releasePlans(name);
      return {};
    }
    this.#job = job;
    const listed = await store.list<Task>("Task", { labelSelector: `${JOB_LABEL}=${name}` });
    this.#tasks = listed.items.filter((t) => ownedBy(t, job));
    this.#status = structuredClone(job.status ?? {});

    if (job.metadata.deletionTimestamp) {
      await this.#finalize();
      return this.#outcome;
    }
    this.#adopt();
    // A run started before the hub recorded spec hashes answers the spec it finds.
    if (this.#status.run && this.#status.specHash === undefined) this.#status.specHash = specHash(job);
    if (job.spec.stopped) {
      await this.#stop("Stopping", "spec.stopped is true");
    } else if (this.#restartWanted()) {
      if (await this.#cleanUp("Restarting")) {
        this.#startRun();
        await this.#advance();
      }
    } else {
      await this.#advance();
    }
    await this.#commit();
    return this.#outcome;
  }

  // ---- lifecycle steps ----------------------------------------------------------------

  /** A Job removed from git: stopped first, then its finalizer goes and the store lets it go. */
  async #finalize(): Promise<void> {
    const job = this.#job;
    if (!(job.metadata.finalizers ?? []).includes(JOB_STOP_FINALIZER)) return;
    if (this.#tasks.length > 0) {
      await this.#deleteTasks(this.#tasks);
      this.#enterStopping("Deleting", "the Job was deleted; deleting its Tasks before it goes");
      await this.#writeStatus();
      return;
    }
    this.#releasePlans(job.metadata.name);
    await this.#d.store.update({
      ...job,
      metadata: {
        ...job.metadata,
        finalizers: (job.metadata.finalizers ?? []).filter((f) => f !== JOB_STOP_FINALIZER),
      },
    });
  }

  /** Adopts what a previous process left: Tasks of a run whose status was never written. */
  #adopt(): void {
    const s = this.#status;
    if (s.run) return;
    const runs = this.#tasks.map(runOf).filter((n) => n > 0);
    if (runs.length === 0) return;
    s.run = Math.max(...runs);
    s.phase ??= "Pending";
    s.runAnnotation = this.#runAnnotation();
    s.specHash = specHash(this.#job);
    s.startTime ??= timestamp(this.#d.now);
  }

  #runAnnotation(): string {
    return this.#job.metadata.annotations?.[RUN_ANNOTATION] ?? "";
  }

  #restartWanted(): boolean {
    const s = this.#status;
    if (!s.run) return true;
    if (s.phase === "Stopped" || s.phase === "Stopping") return true;
    return this.#changes().length > 0;
  }

  /** What changed since the current run started, in words. */
  #changes(): string[] {
    const s = this.#status;
    const changes: string[] = [];
    if (s.runAnnotation !== undefined && s.runAnnotation !== this.#runAnnotation()) {
      changes.push(`the ${RUN_ANNOTATION} annotation changed to "${this.#runAnnotation()}"`);
    }
    if (s.specHash !== undefined && s.specHash !== specHash(this.#job)) changes.push("spec changed");
    return changes;
  }

  /** Why the next run starts: what changed, or else a start after a stop. */
  #restartReason(): string {
    return this.#changes().join("; ") || "started again after a stop";
  }

  /** spec.stopped: delete the Tasks, wait for the agents' cleanup, then Stopped. */
  async #stop(reason: string, why: string): Promise<void> {
    const s = this.#status;
    this.#releasePlans(this.#job.metadata.name);
    if (this.#tasks.length > 0) {
      await this.#deleteTasks(this.#tasks);
      this.#enterStopping(
        reason,
        `${why}; deleting Tasks and waiting for their workloads and PVCs to be removed`,
      );
      return;
    }
    if (s.phase === "Stopped") return;
    s.phase = "Stopped";
    for (const t of s.tasks ?? []) if (!isTerminal(t.phase)) t.phase = "Stopped";
    s.completionTime ??= timestamp(this.#d.now);
    this.#condition(
      "Ready",
      "False",
      "Stopped",
      "the Job is stopped; clear spec.stopped to start a fresh run",
    );
    this.#event("Normal", "Stopped", "every Task is gone; the Job is Stopped");
  }

  /** Before a fresh run: the previous run's Tasks must be gone (same names). True when they are. */
  async #cleanUp(reason: string): Promise<boolean> {
    if (this.#tasks.length === 0) return true;
    await this.#deleteTasks(this.#tasks);
    this.#enterStopping(
      reason,
      `${this.#restartReason()}: starting a fresh run; deleting the previous run's Tasks first`,
    );
    return false;
  }

  #enterStopping(reason: string, message: string): void {
    const s = this.#status;
    for (const t of s.tasks ?? []) if (!isTerminal(t.phase) && t.phase !== "Stopped") t.phase = "Stopping";
    this.#condition("Ready", "False", reason, message);
    if (s.phase !== "Stopping") {
      s.phase = "Stopping";
      this.#event("Normal", reason, message);
    }
  }

  #startRun(): void {
    const s = this.#status;
    const reason = s.run ? this.#restartReason() : undefined;
    if (s.run) {
      const record: JobRunRecord = {
        run: s.run,
        phase: this.#finalPhase(),
        ...(s.startTime ? { startTime: s.startTime } : {}),
        ...(s.completionTime ? { completionTime: s.completionTime } : {}),
        ...(reason ? { reason } : {}),
        tasks: s.tasks ?? [],
      };
      s.history = [...(s.history ?? []), record].slice(-HISTORY_LIMIT);
    }
    s.run = (s.run ?? 0) + 1;
    s.runAnnotation = this.#runAnnotation();
    s.specHash = specHash(this.#job);
    s.phase = "Pending";
    s.startTime = timestamp(this.#d.now);
    delete s.completionTime;
    s.conditions = [];
    s.tasks = this.#job.spec.tasks.map((t) => ({
      name: t.name,
      taskName: `${this.#job.metadata.name}-${t.name}`,
      phase: "Pending",
    }));
    this.#releasePlans(this.#job.metadata.name);
    this.#event("Normal", "RunStarted", reason ? `run ${s.run} started: ${reason}` : `run ${s.run} started`);
  }

  /** How the current run ended, for history: its outcome if it had one, else Stopped. */
  #finalPhase(): JobRunRecord["phase"] {
    const s = this.#status;
    if (isTerminal(s.phase)) return s.phase;
    if (getCondition(s.conditions, "Failed")?.status === "True") return "Failed";
    if (getCondition(s.conditions, "Complete")?.status === "True") return "Succeeded";
    return "Stopped";
  }

  /** An active run: keep Tasks in line with the templates, place what is missing, roll up. */
  async #advance(): Promise<void> {
    const job = this.#job;
    const s = this.#status;
    const run = s.run ?? 1;
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

    if (!isTerminal(s.phase)) {
      await this.#handleOfflineClusters(current);
      await this.#placeAndCreate(templates, current, run);
    }
    this.#rollUp(templates, current);
  }

  /**
   * Not-yet-running Tasks on a cluster Offline past the grace period are placed elsewhere, unless
   * the Job has no Domain and another of its tasks runs there.
   */
  async #handleOfflineClusters(current: Map<string, Task>): Promise<void> {
    const { now, grace } = this.#d;
    const stranded: string[] = [];
    // Without a Domain a task cannot leave the cluster where the rest of its Job runs.
    const runningOn = new Map<string, string>();
    if (!this.#job.spec.domain) {
      for (const [template, task] of current) {
        const cluster = clusterOfNamespace(task.metadata.namespace);
        if (cluster && task.status?.phase === "Running" && !runningOn.has(cluster))
          runningOn.set(cluster, template);
      }
    }
    for (const [template, task] of current) {
      const cluster = clusterOfNamespace(task.metadata.namespace) ?? "";
      const object = this.#d.snapshot.cluster(cluster);
      if (object?.status?.phase === "Online") {
        this.#d.offlineNoticed.delete(cluster);
        continue;
      }
      // A cluster removed from git counts as Offline from when this controller noticed.
      const state = object ? "Offline" : "not registered";
      if (task.status?.phase === "Running") {
        stranded.push(`task ${template} runs on cluster ${cluster}, which is ${state}; it is not moved`);
        continue;
      }
      if (started(task)) continue;
      const anchor = runningOn.get(cluster);
      if (anchor) {
        stranded.push(
          `task ${template} waits for cluster ${cluster}, which is ${state}: a Job without a Domain runs in one cluster, and task ${anchor} runs there`,
        );
        continue;
      }
      const since = this.#offlineSince(cluster, object);
      const left = since + grace - now;
      if (left > 0) {
        this.#requeue(left);
        continue;
      }
      await this.#deleteTasks([task]);
      current.delete(template);
      const entry = this.#status.tasks?.find((t) => t.name === template);
      if (entry) {
        delete entry.cluster;
        entry.phase = "Pending";
      }
      this.#event(
        "Warning",
        "Replacing",
        `task ${template}: cluster ${cluster} has been ${state} since ${timestamp(since)}, longer than ${Math.round(grace / 1000)}s; placing it elsewhere`,
      );
    }
    if (stranded.length > 0) this.#condition("ClusterOffline", "True", "ClusterOffline", stranded.join("; "));
    else if (getCondition(this.#status.conditions, "ClusterOffline")) {
      this.#condition("ClusterOffline", "False", "ClustersOnline", "every running task's cluster is Online");
    }
  }

  #offlineSince(name: string, cluster: Cluster | undefined): number {
    const reported = cluster ? offlineSince(cluster) : undefined;
    if (reported !== undefined) return reported;
    const noticed = this.#d.offlineNoticed.get(name);
    if (noticed !== undefined) return noticed;
    this.#d.offlineNoticed.set(name, this.#d.now);
    return this.#d.now;
  }

  async #placeAndCreate(
    templates: readonly TaskTemplate[],
    current: Map<string, Task>,
    run: number,
  ): Promise<void> {
    const job = this.#job;
    const s = this.#status;
    const { snapshot } = this.#d;
    const entries = new Map((s.tasks ?? []).map((t) => [t.name, t]));
    const missing = templates.filter((t) => !current.has(t.name));
    if (missing.length === 0) return;

    // Plans made earlier in this run hold, if their cluster is still Online.
    const planned = new Map<string, string>();
    for (const template of missing) {
      const cluster = entries.get(template.name)?.cluster;
      if (cluster && snapshot.cluster(cluster)?.status?.phase === "Online")
        planned.set(template.name, cluster);
    }
    // After a restart of the hub the plans are only in status: hold their room again first.
    for (const template of missing) {
      const cluster = planned.get(template.name);
      if (cluster) this.#holdPlan(template, cluster);
    }
    const unplanned = missing.filter((t) => !planned.has(t.name));
    if (unplanned.length > 0) {
      let wanted: PlacementTask[];
      try {
        wanted = unplanned.map(placementTask);
      } catch (error) {
        this.#unschedulable(error instanceof Error ? error.message : String(error));
        return;
      }
      const span = Boolean(job.spec.domain);
      // Without a Domain the rest of the run is already somewhere: the missing tasks join it.
      const joined = span ? undefined : this.#runCluster(current, planned);
      const clusters = joined
        ? snapshot.clusters().filter((c) => c.name === joined.cluster)
        : snapshot.clusters();
      const result = placeJob({ tasks: wanted, clusters, spanClusters: span });
      if (!result.placed) {
        this.#unschedulable(
          joined
            ? `${result.message}; a Job without a Domain runs in one cluster, and ${joined.tasks.join(", ")} ${joined.tasks.length === 1 ? "is" : "are"} in ${joined.cluster}`
            : result.message,
        );
        return;
      }
      for (const p of result.tasks) {
        snapshot.reserve(planKey(job.metadata.name, p.task), p, planGroup(job.metadata.name));
        planned.set(p.task, p.cluster);
        const entry = entries.get(p.task);
        if (entry) {
          entry.cluster = p.cluster;
          entry.phase = "Scheduled";
        }
      }
      const where = result.tasks.map((p) => `${p.task} → ${p.cluster}`).join(", ");
      this.#condition("Scheduled", "True", "Placed", where);
      this.#event("Normal", "Scheduled", `placed ${where}`);
    }

    // The head first, when one is declared: the others once it runs.
    const head = templates.find((t) => t.head);
    const headStarted = !head || started(current.get(head.name));
    const now = headStarted ? missing : missing.filter((t) => t === head);
    for (const template of now) {
      const cluster = planned.get(template.name);
      if (!cluster) continue;
      const object = taskObject(this.#job, template, cluster, run);
      // The plan's room becomes the Task's before the Task exists, so its watch event finds it held.
      this.#d.snapshot.rekey(planKey(this.#job.metadata.name, template.name), taskKey(object));
      this.#creates.push({ template, cluster, object });
      current.set(template.name, object);
    }
  }

  /**
   * The cluster a Job without a Domain already runs in: where its live Tasks of this run (or its
   * held plans) are. Finished Tasks do not hold the Job there.
   */
  #runCluster(
    current: Map<string, Task>,
    planned: Map<string, string>,
  ): { cluster: string; tasks: string[] } | undefined {
    const where = new Map<string, string[]>();
    const add = (cluster: string, task: string) => where.set(cluster, [...(where.get(cluster) ?? []), task]);
    for (const [template, task] of current) {
      const cluster = clusterOfNamespace(task.metadata.namespace);
      if (cluster && !isTerminal(task.status?.phase)) add(cluster, template);
    }
    for (const [template, cluster] of planned) add(cluster, template);
    const [first] = [...where].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return first ? { cluster: first[0], tasks: first[1].sort() } : undefined;
  }

  #holdPlan(template: TaskTemplate, cluster: string): void {
    const { snapshot } = this.#d;
    const key = planKey(this.#job.metadata.name, template.name);
    if (snapshot.isReserved(key)) return;
    const view = snapshot.clusters().find((c) => c.name === cluster);
    if (!view) return;
    try {
      const result = placeJob({
        tasks: [{ ...placementTask(template), clusterSelector: undefined }],
        clusters: [view],
      });
      if (result.placed && result.tasks[0])
        snapshot.reserve(key, result.tasks[0], planGroup(this.#job.metadata.name));
    } catch {
      // An invalid clusterSelector cannot matter here: the plan names its cluster.
    }
  }

  /** One Task on its own, for when the batch met an existing name. */
  async #createTask(object: Task, template: TaskTemplate, run: number): Promise<Task | undefined> {
    const { store, snapshot } = this.#d;
    const plan = planKey(this.#job.metadata.name, template.name);
    const key = taskKey(object);
    try {
      return await store.create(object);
    } catch (error) {
      if (!isAlreadyExists(error)) {
        snapshot.rekey(key, plan, planGroup(this.#job.metadata.name));
        throw error;
      }
      const existing = await store.get<Task>("Task", object.metadata.namespace, object.metadata.name);
      if (
        existing &&
        ownedBy(existing, this.#job) &&
        runOf(existing) === run &&
        !existing.metadata.deletionTimestamp
      ) {
        return existing;
      }
      // The previous run's Task of that name is still being cleaned up there.
      snapshot.rekey(key, plan, planGroup(this.#job.metadata.name));
      this.#requeue(1000);
      return undefined;
    }
  }

  #unschedulable(message: string): void {
    this.#outcome.unschedulable = true;
    const previous = getCondition(this.#status.conditions, "Scheduled");
    this.#condition("Scheduled", "False", "Unschedulable", message);
    if (previous?.message !== message || previous.status !== "False")
      this.#event("Warning", "Unschedulable", message);
  }

  #rollUp(templates: readonly TaskTemplate[], current: Map<string, Task>): void {
    const s = this.#status;
    const previous = new Map((s.tasks ?? []).map((t) => [t.name, t]));
    const statuses: JobTaskStatus[] = templates.map((template) => {
      const task = current.get(template.name);
      const entry = previous.get(template.name);
      const plan = entry?.phase === "Scheduled" || entry?.phase === "Pending" ? entry.cluster : undefined;
      return taskStatus(this.#job.metadata.name, template, task, plan);
    });
    if (isTerminal(s.phase)) {
      // A finished run keeps its outcome; only the task lines follow their Tasks' last reports.
      s.tasks = statuses.map((line) => (current.has(line.name) ? line : (previous.get(line.name) ?? line)));
      return;
    }
    s.tasks = statuses;
    const result = rollup(templates, statuses);
    const was = s.phase;
    s.phase = result.phase;
    this.#rollupConditions(result.phase, result.waiting, result.failed);
    if (was !== result.phase) this.#phaseEvent(result.phase, result.failed);
  }

  #rollupConditions(phase: RunPhase, waiting: string[], failed: JobTaskStatus | undefined): void {
    const s = this.#status;
    switch (phase) {
      case "Running":
        this.#condition("Ready", "True", "TasksRunning", "every task is running");
        break;
      case "Pending":
        this.#condition("Ready", "False", "TasksNotRunning", `waiting for ${waiting.join(", ")}`);
        break;
      case "Succeeded":
        s.completionTime ??= timestamp(this.#d.now);
        this.#condition("Ready", "False", "Completed", "every finishing task succeeded");
        this.#condition("Complete", "True", "TasksSucceeded", "every finishing task succeeded");
        break;
      case "Failed": {
        s.completionTime ??= timestamp(this.#d.now);
        const message = failed ? failureMessage(failed) : "a task failed";
        this.#condition("Ready", "False", "TaskFailed", message);
        this.#condition("Failed", "True", "TaskFailed", message);
        break;
      }
    }
  }

  #phaseEvent(phase: RunPhase, failed: JobTaskStatus | undefined): void {
    switch (phase) {
      case "Running":
        this.#event("Normal", "Running", "every task is running");
        break;
      case "Succeeded":
        this.#event("Normal", "Succeeded", "every finishing task succeeded");
        break;
      case "Failed":
        this.#event("Warning", "Failed", failed ? failureMessage(failed) : "a task failed");
        break;
      case "Pending":
        break;
    }
  }

  // ---- small helpers --------------------------------------------------------------------

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

  #releasePlans(job: string): void {
    this.#d.snapshot.releaseGroup(planGroup(job));
  }

  #condition(type: string, status: "True" | "False" | "Unknown", reason: string, message: string): void {
    this.#status.conditions ??= [];
    setCondition(
      this.#status.conditions,
      { type, status, reason, message },
      this.#d.now,
      this.#job.metadata.generation,
    );
  }

  #event(type: JobEvent["type"], reason: string, message: string): void {
    this.#status.events ??= [];
    appendEvent(this.#status.events, {
      time: timestamp(this.#d.now),
      type,
      reason,
      ...(this.#status.run ? { run: this.#status.run } : {}),
      message,
    });
  }

  #requeue(ms: number): void {
    const after = Math.max(1, Math.ceil(ms));
    this.#outcome.requeueAfter = Math.min(this.#outcome.requeueAfter ?? after, after);
  }

  /**
   * Writes what this reconcile decided in one transaction (one disk sync): the Job's finalizer,
   * the new Tasks (a gang appears whole), the status. A name that already exists (a Task this
   * controller created before it was killed, or the previous run's still being cleaned up)
   * fails the batch; then each Task is created on its own and existing ones are adopted.
   */
  async #commit(): Promise<void> {
    const { store } = this.#d;
    const job = this.#job;
    const needsFinalizer = !(job.metadata.finalizers ?? []).includes(JOB_STOP_FINALIZER);
    const withFinalizer: Job = {
      ...job,
      metadata: { ...job.metadata, finalizers: [...(job.metadata.finalizers ?? []), JOB_STOP_FINALIZER] },
    };
    const s = this.#status;
    if (job.metadata.generation !== undefined) s.observedGeneration = job.metadata.generation;
    const statusChanged = !deepEqual(s, job.status ?? {});
    if (!needsFinalizer && this.#creates.length === 0) {
      if (statusChanged) this.#job = await store.updateStatus({ ...job, status: s });
      return;
    }
    const { resourceVersion: _unconditional, ...metadata } = job.metadata;
    const ops: BatchOp[] = [
      ...(needsFinalizer ? [{ op: "update" as const, object: withFinalizer }] : []),
      ...this.#creates.map((c) => ({ op: "create" as const, object: c.object })),
      // Only this controller writes Job status; the finalizer update above carries the
      // resourceVersion check for the whole batch.
      ...(statusChanged ? [{ op: "updateStatus" as const, object: { ...job, metadata, status: s } }] : []),
    ];
    try {
      await store.applyBatch(ops);
      return;
    } catch (error) {
      if (!isAlreadyExists(error)) {
        for (const c of this.#creates) {
          this.#d.snapshot.rekey(
            taskKey(c.object),
            planKey(job.metadata.name, c.template.name),
            planGroup(job.metadata.name),
          );
        }
        throw error;
      }
    }
    if (needsFinalizer) this.#job = await store.update(withFinalizer);
    for (const c of this.#creates) await this.#createTask(c.object, c.template, s.run ?? 1);
    await this.#writeStatus();
  }

  async #writeStatus(): Promise<void> {
    const s = this.#status;
    if (this.#job.metadata.generation !== undefined) s.observedGeneration = this.#job.metadata.generation;
    if (deepEqual(s, this.#job.status ?? {})) return;
    this.#job = await this.#d.store.updateStatus({ ...this.#job, status: s });
  }
}
