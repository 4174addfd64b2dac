// Runs one controller: its watches feed the queue, N workers take keys and reconcile, failures
// back off per key, a resync timer queues every primary object now and then. Watches that end
// are re-established from the last seen resourceVersion (relisting when it expired).

import type { Clock, TimerId } from "../clock.ts";
import type { Logger } from "../logger.ts";
import type { Counter, Gauge, Histogram } from "../metrics/index.ts";
import { isExpired, keyOf, parseKey, type Store, type Watch } from "../store/index.ts";
import { ExponentialFailureRateLimiter } from "./rate-limiter.ts";
import type { Controller, MapToKeys, ReconcileContext, WatchSpec } from "./types.ts";
import { WorkQueue } from "./work-queue.ts";

export interface ControllerMetrics {
  depth: Gauge;
  adds: Counter;
  retries: Counter;
  reconciles: Counter;
  errors: Counter;
  duration: Histogram;
}

export interface RunnerOptions {
  controller: Controller;
  store: Store;
  clock: Clock;
  logger: Logger;
  metrics: ControllerMetrics;
  workers: number;
  /** ms; 0 disables. */
  resyncPeriod: number;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export class ControllerRunner {
  readonly controller: Controller;
  readonly queue: WorkQueue;
  #o: RunnerOptions;
  #context: ReconcileContext;
  #watches = new Set<Watch>();
  #watchLoops: Promise<void>[] = [];
  #workers: Promise<void>[] = [];
  #resyncTimer: TimerId | undefined;
  #sleepers = new Map<TimerId, () => void>();
  #started = false;
  #stopped = false;

  constructor(options: RunnerOptions) {
    this.#o = options;
    this.controller = options.controller;
    const name = options.controller.name;
    this.queue = new WorkQueue({
      clock: options.clock,
      onAdd: () => options.metrics.adds.labels({ controller: name }).inc(),
    });
    this.#context = {
      store: options.store,
      clock: options.clock,
      logger: options.logger,
      controller: name,
      enqueue: (key, afterMs = 0) => this.queue.addAfter(key, afterMs),
    };
  }

  /** Resolves once every watch is registered (their initial events may still be arriving). */
  async start(): Promise<void> {
    if (this.#started) throw new Error(`controller ${this.controller.name} was already started`);
    this.#started = true;
    const c = this.controller;
    const primary: WatchSpec = {
      kind: c.kind,
      mapToKeys: (object) => [keyOf(object)],
      ...(c.namespace !== undefined ? { namespace: c.namespace } : {}),
      ...(c.labelSelector !== undefined ? { labelSelector: c.labelSelector } : {}),
    };
    const ready: Promise<void>[] = [];
    for (const spec of [primary, ...(c.watches ?? [])]) {
      let markReady!: () => void;
      ready.push(new Promise((resolve) => (markReady = resolve)));
      this.#watchLoops.push(this.#watchLoop(spec, markReady));
    }
    await Promise.all(ready);
    for (let i = 0; i < Math.max(1, this.#o.workers); i++) this.#workers.push(this.#work());
    this.#scheduleResync();
  }

  /** Stops watches and timers; with drain (default) queued keys are still reconciled first. */
  async stop(options: { drain?: boolean } = {}): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    if (this.#resyncTimer) this.#o.clock.clearTimeout(this.#resyncTimer);
    for (const [timer, wake] of this.#sleepers) {
      this.#o.clock.clearTimeout(timer);
      wake();
    }
    for (const w of this.#watches) w.stop();
    await this.queue.shutdown(options);
    await Promise.all([...this.#workers, ...this.#watchLoops]);
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = this.#o.clock.setTimeout(() => {
        this.#sleepers.delete(timer);
        resolve();
      }, ms);
      this.#sleepers.set(timer, resolve);
    });
  }

  async #watchLoop(spec: WatchSpec, markReady: () => void): Promise<void> {
    const { store, logger } = this.#o;
    const name = this.controller.name;
    const backoff = new ExponentialFailureRateLimiter(100, 30_000);
    let resourceVersion: string | undefined;
    const map: MapToKeys = spec.mapToKeys;
    while (!this.#stopped) {
      let watch: Watch;
      try {
        watch = await store.watch(
          spec.kind,
          {
            ...(spec.namespace !== undefined ? { namespace: spec.namespace } : {}),
            ...(spec.labelSelector !== undefined ? { labelSelector: spec.labelSelector } : {}),
            ...(resourceVersion !== undefined ? { resourceVersion } : {}),
          },
          (event) => {
            const rv = event.object.metadata.resourceVersion;
            if (rv && (resourceVersion === undefined || Number(rv) > Number(resourceVersion)))
              resourceVersion = rv;
            try {
              for (const key of map(event.object, event.type)) this.queue.add(key);
            } catch (error) {
              logger.error("mapping a watch event to keys failed", {
                controller: name,
                kind: spec.kind,
                object: keyOf(event.object),
                error: errorMessage(error),
              });
            }
          },
        );
      } catch (error) {
        if (isExpired(error)) {
          resourceVersion = undefined;
          continue;
        }
        logger.warn("watch failed, retrying", {
          controller: name,
          kind: spec.kind,
          error: errorMessage(error),
        });
        markReady();
        await this.#sleep(backoff.when(spec.kind));
        continue;
      }
      if (this.#stopped) {
        watch.stop();
        break;
      }
      this.#watches.add(watch);
      markReady();
      const error = await watch.closed;
      this.#watches.delete(watch);
      if (this.#stopped) break;
      if (isExpired(error)) {
        resourceVersion = undefined;
        continue;
      }
      logger.warn("watch ended, re-watching", {
        controller: name,
        kind: spec.kind,
        ...(error ? { error: errorMessage(error) } : {}),
      });
      await this.#sleep(backoff.when(spec.kind));
    }
    markReady();
  }

  #scheduleResync(): void {
    const period = this.#o.resyncPeriod;
    if (!(period > 0) || this.#stopped) return;
    this.#resyncTimer = this.#o.clock.setTimeout(() => void this.#resync(), period);
  }

  /** Queues every object of the primary kind (as a watch would on relist). */
  async #resync(): Promise<void> {
    const c = this.controller;
    try {
      const { items } = await this.#o.store.list(c.kind, {
        ...(c.namespace !== undefined ? { namespace: c.namespace } : {}),
        ...(c.labelSelector !== undefined ? { labelSelector: c.labelSelector } : {}),
      });
      for (const object of items) this.queue.add(keyOf(object));
    } catch (error) {
      this.#o.logger.warn("resync list failed", { controller: c.name, error: errorMessage(error) });
    }
    this.#scheduleResync();
  }

  async #work(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      await this.#reconcile(key);
    }
  }

  async #reconcile(key: string): Promise<void> {
    const { clock, metrics, logger } = this.#o;
    const controller = this.controller.name;
    const started = clock.now();
    const { namespace, name } = parseKey(key);
    try {
      const result = await this.controller.reconcile({ key, namespace, name }, this.#context);
      this.queue.forget(key);
      const requeueAfter = result ? result.requeueAfter : undefined;
      metrics.reconciles
        .labels({ controller, result: requeueAfter !== undefined ? "requeue_after" : "success" })
        .inc();
      if (requeueAfter !== undefined) this.queue.addAfter(key, requeueAfter);
    } catch (error) {
      const retries = this.queue.retries(key);
      const delay = this.queue.addRateLimited(key);
      metrics.reconciles.labels({ controller, result: "error" }).inc();
      metrics.errors.labels({ controller }).inc();
      metrics.retries.labels({ controller }).inc();
      logger.error("reconcile failed, will retry", {
        controller,
        key,
        error: errorMessage(error),
        retries: retries + 1,
        retryInMs: delay,
      });
    } finally {
      metrics.duration.labels({ controller }).observe((clock.now() - started) / 1000);
      this.queue.done(key);
    }
  }
}
