// apply() and prune: renders every desired Task (render.ts), server-side applies the result a few
// Tasks at a time, then prunes what is no longer desired. One reconcile runs at a time, each from
// the latest desired set; failures are retried with backoff (lib/controller's ApplyLoop).
import type { CoreV1Api, KubernetesObjectApi } from "@kubernetes/client-node";
import { type Clock, systemClock } from "../../../../lib/clock.ts";
import { ApplyLoop, type RunResult } from "../../../../lib/controller/loop/index.ts";
import type { Logger } from "../../../../lib/logger.ts";
import type { RuntimeTask, TaskApplyProblem, WorkloadKind } from "../../types.ts";
import { describeApiError } from "../api-error.ts";
import { ensureNamespace } from "../namespace.ts";
import type { ClusterWatches } from "../watch/watches.ts";
import { applyTask } from "./apply-task.ts";
import { objectKey } from "./object-key.ts";
import { prune } from "./prune.ts";
import {
  DEFAULT_NAMESPACE,
  RenderError,
  type RenderedTask,
  renderTask,
  type SidecarOptions,
} from "./render.ts";

export interface RejectedTask {
  task: string;
  message: string;
}

export interface ReconcilerOptions {
  objects: KubernetesObjectApi;
  core: CoreV1Api;
  watches: Pick<ClusterWatches, "workloads" | "volumes">;
  /** Selects the objects this runtime owns. */
  selector: string;
  logger: Logger;
  defaultNamespace?: string | undefined;
  sidecar?: SidecarOptions | undefined;
  instance?: string | undefined;
  /** The virtual IPs of the Domains' Tasks, from the agent's DomainPeers (render.ts). */
  domainTasks?: ((domain: string, task: string) => readonly string[] | undefined) | undefined;
  /** The first retry's delay (doubling to a minute). Default 5 s. */
  retryIntervalMs?: number | undefined;
  clock?: Clock | undefined;
  /** Called when the Tasks refused or failing (`problems`) change: the hub is told. */
  onProblemsChange?: (() => void) | undefined;
}

/** Server-side applies in flight at once (docs/benchmarks/agent.md: 8 → 16 took 200 from 4.7 s to 2.7 s). */
const APPLY_CONCURRENCY = 16;
/** An unchanged Task is applied again after this long anyway, to undo drift made behind our back. */
const REAPPLY_AFTER_MS = 5 * 60_000;
/**
 * How long after an apply the watch may take to show the workload before the Task counts as
 * missing. With hundreds of Tasks arriving in many deltas, every reconcile used to apply again
 * each Task whose ADDED event had not arrived yet: 2,104 applies for ~600 Deployments on a loaded
 * machine (docs/benchmarks/push-fleet.md).
 */
const WATCH_LAG_GRACE_MS = 30_000;

export class WorkloadReconciler {
  readonly #options: ReconcilerOptions;
  readonly #namespaces = new Set<string>();
  /** What was last applied for each Task, and when: unchanged Tasks are not re-sent on every delta. */
  readonly #applied = new Map<string, { objects: string; at: number; seen: boolean }>();
  readonly #clock: Clock;
  readonly #loop: ApplyLoop<readonly RuntimeTask[]>;
  #desired: readonly RuntimeTask[] | undefined;
  #rejected: RejectedTask[] = [];
  /** Tasks whose last apply failed for now (the API server's error), with it. */
  #failing: RejectedTask[] = [];
  #problemsShown = "[]";

  constructor(options: ReconcilerOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#loop = new ApplyLoop({
      name: "workload reconcile",
      run: (desired) => this.#reconcileOnce(desired),
      clock: this.#clock,
      baseMs: options.retryIntervalMs ?? 5000,
      logger: options.logger,
      describeError: (err) => describeApiError(err),
    });
  }

  /** Tasks handed to apply() that cannot run as given, with the reason. */
  get rejected(): readonly RejectedTask[] {
    return this.#rejected;
  }

  /** Tasks refused or failing, for the hub; onProblemsChange is called when they change. */
  get problems(): TaskApplyProblem[] {
    return [
      ...this.#rejected.map((r): TaskApplyProblem => ({ ...r, reason: "ApplyRefused" })),
      ...this.#failing.map((r): TaskApplyProblem => ({ ...r, reason: "ApplyFailed" })),
    ];
  }

  /** Resolves when the reconcile in progress, if any, is over. */
  get settled(): Promise<void> {
    return this.#loop.settled();
  }

  apply(desired: readonly RuntimeTask[]): Promise<void> {
    this.#desired = desired;
    return this.#loop.set(desired);
  }

  /** Renders the last desired set again: what it depends on besides the Tasks has changed. */
  refresh(): Promise<void> {
    return this.#desired ? this.#loop.set(this.#desired) : Promise.resolve();
  }

  /** No more reconciles, retries included; the one in progress finishes (see {@link settled}). */
  stop(): Promise<void> {
    return this.#loop.stop();
  }

  async #reconcileOnce(desired: readonly RuntimeTask[]): Promise<RunResult | undefined> {
    const { logger } = this.#options;
    const defaultNamespace = this.#options.defaultNamespace ?? DEFAULT_NAMESPACE;
    const rendered: RenderedTask[] = [];
    const rejected: RejectedTask[] = [];
    for (const task of desired) {
      try {
        rendered.push(
          renderTask(task, {
            defaultNamespace,
            desired,
            ...(this.#options.instance ? { instance: this.#options.instance } : {}),
            ...(this.#options.sidecar ? { sidecar: this.#options.sidecar } : {}),
            ...(this.#options.domainTasks ? { domainTasks: this.#options.domainTasks } : {}),
          }),
        );
      } catch (err) {
        if (!(err instanceof RenderError)) throw err;
        rejected.push({ task: task.metadata.name, message: err.message });
      }
    }
    let retry = false;

    for (const namespace of new Set(rendered.map((r) => r.namespace))) {
      if (this.#namespaces.has(namespace)) continue;
      try {
        await ensureNamespace(this.#options.core, namespace);
        this.#namespaces.add(namespace);
      } catch (err) {
        logger.warn("could not create namespace", { namespace, error: describeApiError(err) });
        retry = true;
      }
    }

    const keep = new Set<string>();
    for (const r of rendered) for (const obj of r.objects) keep.add(objectKey(obj));
    // Tasks are independent: a few applies in flight at once instead of one round trip after the
    // other (200 Tasks took 23 s one by one). A Task whose objects are as last applied, recently,
    // and whose workload the watch still sees, is not sent again on every delta.
    const pending = rendered.filter((r) => !this.#recentlyApplied(r));
    const context = {
      objects: this.#options.objects,
      jobs: this.#options.watches.workloads.get("Job"),
      logger,
      namespaceGone: (namespace: string) => this.#namespaces.delete(namespace),
    };
    const failing: RejectedTask[] = [];
    let next = 0;
    const worker = async () => {
      while (next < pending.length) {
        const r = pending[next++] as RenderedTask;
        const outcome = await applyTask(context, r);
        if (outcome === "applied") {
          this.#applied.set(r.task, {
            objects: JSON.stringify(r.objects),
            at: this.#clock.now(),
            seen: false,
          });
          continue;
        }
        this.#applied.delete(r.task);
        if (outcome === "retry") retry = true;
        else if ("failed" in outcome) {
          retry = true;
          failing.push({ task: r.task, message: outcome.failed });
        } else rejected.push({ task: r.task, message: outcome.invalid });
      }
    };
    await Promise.all(Array.from({ length: Math.min(APPLY_CONCURRENCY, pending.length) }, worker));
    const renderedTasks = new Set(rendered.map((r) => r.task));
    for (const task of this.#applied.keys()) if (!renderedTasks.has(task)) this.#applied.delete(task);
    this.#rejected = rejected;
    this.#failing = failing;
    const problems = JSON.stringify(this.problems);
    if (problems !== this.#problemsShown) {
      this.#problemsShown = problems;
      this.#options.onProblemsChange?.();
    }
    // a Task that cannot run as given keeps what it had: a bad edit must not wipe a running Task
    const keepTasks = new Set(rejected.map((r) => r.task));
    const pruned = await prune(
      {
        objects: this.#options.objects,
        watches: this.#options.watches,
        selector: this.#options.selector,
        logger,
        desired: () => this.#desired,
      },
      keep,
      keepTasks,
    );
    if (!pruned) retry = true;
    return retry ? { retry } : undefined;
  }

  /**
   * Unchanged since the last successful apply, within the re-apply period, and still observed, or
   * not observed yet only because the watch lags behind an apply of moments ago.
   */
  #recentlyApplied(r: RenderedTask): boolean {
    const last = this.#applied.get(r.task);
    const age = this.#clock.now() - (last?.at ?? 0);
    if (!last || age > REAPPLY_AFTER_MS) return false;
    if (last.objects !== JSON.stringify(r.objects)) return false;
    const observed = r.objects.every((obj) => {
      const collection = this.#options.watches.workloads.get(obj.kind as WorkloadKind);
      // Companions (Services, ConfigMaps) are not watched; their workload's presence stands for them.
      return (
        !collection || collection.get(obj.metadata?.namespace ?? "", obj.metadata?.name ?? "") !== undefined
      );
    });
    if (observed) {
      last.seen = true;
      return true;
    }
    // Seen once and gone now: deleted behind our back, so applied again. Never seen yet: the
    // watch has not caught up with the apply; sending it again would change nothing.
    return !last.seen && age < WATCH_LAG_GRACE_MS;
  }
}
