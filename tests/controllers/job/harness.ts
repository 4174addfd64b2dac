// A hub in miniature for Job controller tests: a real SQLite store in a temp dir, the real
// Manager, and the agents' side played at the store boundary (Node and Task status reports,
// finalizer release), as the tunnel glue would write them.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Test } from "tap";
import type { Job, Task, TaskStatus } from "../../../operators/api/index.ts";
import { AGENT_CLEANUP_FINALIZER } from "../../../operators/api/index.ts";
import { createJobController, type JobController } from "../../../operators/controllers/job/index.ts";
import { FakeClock } from "../../../operators/lib/clock.ts";
import { Manager } from "../../../operators/lib/controller/index.ts";
import { modify, openSqliteStore, type Store } from "../../../operators/lib/store/index.ts";
import { waitFor } from "../../helpers/wait-for.ts";

export interface JobHarness {
  store: Store;
  dir: string;
  /** The controller's clock (offline grace); the manager runs on real time. */
  clock: FakeClock;
  controller: JobController;
  manager: Manager;
  /** Queues a Job's reconcile now (as a resync would). */
  poke(job: string): void;
  stop(): Promise<void>;
}

export async function startJobHarness(
  t: Test,
  options: { dir?: string; offlineGracePeriod?: number; clock?: FakeClock } = {},
): Promise<JobHarness> {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), "rlark-job-"));
  const store = openSqliteStore({ dataDir: dir });
  const clock = options.clock ?? new FakeClock(Date.UTC(2026, 10, 29, 12, 0, 0));
  const controller = createJobController({
    clock,
    ...(options.offlineGracePeriod !== undefined ? { offlineGracePeriod: options.offlineGracePeriod } : {}),
  });
  const manager = new Manager({ store, resyncPeriod: 0 });
  manager.add(controller);
  await manager.start();
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await manager.stop({ drain: false });
    await store.close();
  };
  t.teardown(async () => {
    await stop();
    if (!options.dir) rmSync(dir, { recursive: true, force: true });
  });
  return { store, dir, clock, controller, manager, poke: (job) => manager.queue("job").add(job), stop };
}

export const getJob = (store: Store, name: string) => store.get<Job>("Job", "", name);

export async function tasksOf(store: Store, job: string): Promise<Task[]> {
  return (await store.list<Task>("Task", { labelSelector: `rlinf.io/job=${job}` })).items;
}

export async function waitForJob(
  store: Store,
  name: string,
  what: string,
  check: (job: Job) => boolean,
): Promise<Job> {
  return waitFor(`Job ${name}: ${what}`, async () => {
    const job = await getJob(store, name);
    return job && check(job) ? job : undefined;
  });
}

export const phaseIs = (phase: string) => (job: Job) => job.status?.phase === phase;

/** The agent glue reporting a Task's state. */
export async function report(store: Store, task: Task, status: TaskStatus): Promise<void> {
  const done = await modify<Task>(
    store,
    "Task",
    task.metadata.namespace,
    task.metadata.name,
    (t) => {
      t.status = { ...(t.status ?? {}), ...status };
    },
    { status: true },
  );
  if (!done) throw new Error(`no Task ${task.metadata.namespace}/${task.metadata.name}`);
}

/** The agent glue after the agent removed a deleted Task's workloads and PVCs. */
export async function releaseCleanup(store: Store, task: Task): Promise<void> {
  await modify<Task>(store, "Task", task.metadata.namespace, task.metadata.name, (t) => {
    t.metadata.finalizers = (t.metadata.finalizers ?? []).filter((f) => f !== AGENT_CLEANUP_FINALIZER);
  });
}

export const running: TaskStatus = { phase: "Running", replicas: 1, readyReplicas: 1 };
export const succeeded: TaskStatus = { phase: "Succeeded", exitCode: 0 };
