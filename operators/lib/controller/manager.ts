// Starts controllers against one Store and owns the process's controller metrics.

import { type Clock, systemClock } from "../clock.ts";
import { type Logger, silentLogger } from "../logger.ts";
import { Registry } from "../metrics/index.ts";
import type { Store } from "../store/index.ts";
import { type ControllerMetrics, ControllerRunner } from "./runner.ts";
import type { Controller } from "./types.ts";

export interface ManagerOptions {
  store: Store;
  clock?: Clock;
  logger?: Logger;
  /** Where metrics go; default a new Registry. Pass the process's registry to share /metrics. */
  registry?: Registry;
  /** Default workers per controller: 2. */
  workers?: number;
  /** Default resync period in ms: 10 minutes. 0 disables. */
  resyncPeriod?: number;
}

const latencyBuckets = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export class Manager {
  readonly store: Store;
  readonly registry: Registry;
  #clock: Clock;
  #logger: Logger;
  #workers: number;
  #resyncPeriod: number;
  #metrics: ControllerMetrics;
  #runners = new Map<string, ControllerRunner>();
  #started = false;
  #ready = false;
  #stopped = false;

  constructor(options: ManagerOptions) {
    this.store = options.store;
    this.registry = options.registry ?? new Registry();
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? silentLogger;
    this.#workers = options.workers ?? 2;
    this.#resyncPeriod = options.resyncPeriod ?? 600_000;
    const r = this.registry;
    const controller = ["controller"];
    this.#metrics = {
      depth: r.gauge({
        name: "rlark_workqueue_depth",
        help: "Keys waiting for a worker.",
        labelNames: controller,
      }),
      adds: r.counter({ name: "rlark_workqueue_adds_total", help: "Keys queued.", labelNames: controller }),
      retries: r.counter({
        name: "rlark_workqueue_retries_total",
        help: "Keys queued again after a failed reconcile.",
        labelNames: controller,
      }),
      reconciles: r.counter({
        name: "rlark_reconcile_total",
        help: "Reconciles by result (success, requeue_after, error).",
        labelNames: ["controller", "result"],
      }),
      errors: r.counter({
        name: "rlark_reconcile_errors_total",
        help: "Failed reconciles.",
        labelNames: controller,
      }),
      duration: r.histogram({
        name: "rlark_reconcile_duration_seconds",
        help: "Time spent in reconcile.",
        labelNames: controller,
        buckets: latencyBuckets,
      }),
    };
    const storeObjects = r.gauge({
      name: "rlark_store_objects",
      help: "Objects in the store by kind.",
      labelNames: ["kind"],
    });
    r.onCollect(async () => {
      const counts = await this.store.countByKind();
      storeObjects.reset();
      for (const [kind, n] of Object.entries(counts)) storeObjects.labels({ kind }).set(n);
    });
    r.onCollect(() => {
      for (const [name, runner] of this.#runners)
        this.#metrics.depth.labels({ controller: name }).set(runner.queue.length);
    });
  }

  /** Registers a controller; call before start(). */
  add(controller: Controller): this {
    if (this.#started) throw new Error(`add controller ${controller.name} before the manager starts`);
    if (this.#runners.has(controller.name))
      throw new Error(`a controller named ${controller.name} is already added`);
    const name = controller.name;
    const m = this.#metrics;
    // Series exist from the start, so a scrape shows 0 rather than nothing.
    m.depth.labels({ controller: name });
    m.adds.labels({ controller: name });
    m.retries.labels({ controller: name });
    m.errors.labels({ controller: name });
    m.duration.labels({ controller: name });
    for (const result of ["success", "requeue_after", "error"])
      m.reconciles.labels({ controller: name, result });
    this.#runners.set(
      name,
      new ControllerRunner({
        controller,
        store: this.store,
        clock: this.#clock,
        logger: this.#logger,
        metrics: m,
        workers: controller.workers ?? this.#workers,
        resyncPeriod: controller.resyncPeriod ?? this.#resyncPeriod,
      }),
    );
    return this;
  }

  /** Starts every controller; resolves when their watches are registered. */
  async start(): Promise<void> {
    if (this.#started) throw new Error("the manager was already started");
    this.#started = true;
    await Promise.all([...this.#runners.values()].map((r) => r.start()));
    this.#ready = true;
  }

  /** Stops every controller; with drain (default) queued keys are reconciled first. */
  async stop(options: { drain?: boolean } = {}): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await Promise.all([...this.#runners.values()].map((r) => r.stop(options)));
  }

  /** True between start() resolving and stop() (for /readyz). */
  get running(): boolean {
    return this.#ready && !this.#stopped;
  }

  /** One line per controller, for status pages. */
  controllers(): { name: string; kind: string; queueDepth: number; processing: number; delayed: number }[] {
    return [...this.#runners.values()].map((r) => ({
      name: r.controller.name,
      kind: r.controller.kind,
      queueDepth: r.queue.length,
      processing: r.queue.processing,
      delayed: r.queue.delayed,
    }));
  }

  /** Keys waiting for a worker in the named controller. */
  queueDepth(controller: string): number {
    const runner = this.#runners.get(controller);
    if (!runner) throw new Error(`no controller named ${controller}`);
    return runner.queue.length;
  }

  /** The queue of the named controller (for tests and status pages). */
  queue(controller: string): ControllerRunner["queue"] {
    const runner = this.#runners.get(controller);
    if (!runner) throw new Error(`no controller named ${controller}`);
    return runner.queue;
  }

  /** Prometheus text exposition (format 0.0.4) of every metric in the registry. */
  metricsText(): Promise<string> {
    return this.registry.text();
  }
}
