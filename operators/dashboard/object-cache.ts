// What the dashboard shows, held in memory: every object of the kinds it draws (redacted as the
// API serves them), kept current by one store watch per kind, plus a log of recent changes so a
// browser that lost its connection resumes from its last event instead of loading everything again.
// One cache serves every browser: the store sees one watch per kind however many people look.

import { type Clock, systemClock } from "../lib/clock.ts";
import { type KubeObject, kindKey, kindKeyOf } from "../lib/kube-object.ts";
import type { Logger } from "../lib/logger.ts";
import type { Store, Watch, WatchEvent } from "../lib/store/index.ts";
import { objectView } from "./object-view.ts";

/**
 * The kinds whose number grows with the number of Jobs in git (a Job, its Tasks): an event stream
 * carries them only for the Jobs its page shows (events.ts), never all of them. Pods are sent
 * whole: the Clusters page lists each node's, and they are as many as run, not as Jobs exist.
 */
export const PER_JOB_KINDS: ReadonlySet<string> = new Set(["Job", "Task"]);

/** The pause before a kind whose watch ended is listed again, doubling per failed relist. */
const RELIST_FIRST_MS = 500;
const RELIST_MAX_MS = 30_000;

/** The Job an object belongs to (a Task's or Pod's spec.job, or its rlinf.io/job label). */
export function jobOf(object: KubeObject): string | undefined {
  if (object.kind === "Job") return object.metadata.name;
  const spec = object.spec as { job?: unknown } | undefined;
  return typeof spec?.job === "string" ? spec.job : object.metadata.labels?.["rlinf.io/job"];
}

/** Users are left out: the dashboard has no page for them and their hashes never leave the hub. */
export const DASHBOARD_KINDS = [
  "Cluster",
  "Node",
  "Job",
  "Task",
  "Pod",
  "Workflow",
  "Domain",
  "DomainPeer",
  "Addon",
  "Bundle",
  "Team",
] as const;

export interface CachedEvent {
  /** The change's resourceVersion: the SSE event id. */
  id: string;
  event: WatchEvent;
  /** The object as held before this change (MODIFIED, DELETED): summaries subtract it. Never sent. */
  previous?: KubeObject;
}

export interface ObjectCache {
  start(): Promise<void>;
  /**
   * Every object now except those of PER_JOB_KINDS, which only for the Jobs named in `jobs`; and
   * the id to resume from after them. Synchronous: nothing falls in between.
   */
  snapshot(jobs: ReadonlySet<string>): { objects: KubeObject[]; cursor: string };
  /** The objects of PER_JOB_KINDS that belong to the Jobs named (a Job and its Tasks). */
  ofJobs(jobs: ReadonlySet<string>): KubeObject[];
  /** The id of the newest change held (what a stream is up to once it has seen everything). */
  cursor(): string;
  /** The changes after `cursor`, or undefined when they are no longer all held (load a snapshot). */
  since(cursor: string): CachedEvent[] | undefined;
  subscribe(listener: (event: CachedEvent) => void): () => void;
  /** One object as held now (the event stream's team filter looks Jobs up by name). */
  get(kind: string, namespace: string | undefined, name: string): KubeObject | undefined;
  /** Every object of `kind` held now. */
  objectsOf(kind: string): KubeObject[];
  stop(): void;
}

export function createObjectCache(options: {
  store: Store;
  logger: Logger;
  logSize?: number;
  /** Drives the wait before a lost watch is listed again. */
  clock?: Clock;
}): ObjectCache {
  const { store, logger } = options;
  const clock = options.clock ?? systemClock;
  const logSize = options.logSize ?? 20_000;
  const objects = new Map<string, KubeObject>();
  // The same objects by kind, and the keys of PER_JOB_KINDS by their Job's name: a page's Jobs and
  // a kind's objects are found without walking 100,000 Jobs.
  const byKind = new Map<string, Map<string, KubeObject>>();
  const byJob = new Map<string, Set<string>>();
  const hold = (key: string, object: KubeObject) => {
    const old = objects.get(key);
    if (old) forget(key, old);
    objects.set(key, object);
    const kind = byKind.get(object.kind) ?? new Map<string, KubeObject>();
    byKind.set(object.kind, kind);
    kind.set(key, object);
    const job = PER_JOB_KINDS.has(object.kind) ? jobOf(object) : undefined;
    if (job !== undefined) {
      const keys = byJob.get(job) ?? new Set<string>();
      byJob.set(job, keys);
      keys.add(key);
    }
  };
  const forget = (key: string, object: KubeObject) => {
    objects.delete(key);
    byKind.get(object.kind)?.delete(key);
    const job = PER_JOB_KINDS.has(object.kind) ? jobOf(object) : undefined;
    const keys = job === undefined ? undefined : byJob.get(job);
    keys?.delete(key);
    if (keys?.size === 0) byJob.delete(job!);
  };
  const listeners = new Set<(event: CachedEvent) => void>();
  const watches = new Map<string, Watch>();
  // The log: events in the order they were delivered (per-kind watches interleave, so ids are not
  // sorted); `position` finds an id in it. `startCursor` names the state before the first event.
  let log: CachedEvent[] = [];
  let base = 0;
  const position = new Map<string, number>();
  let startCursor = "";
  let stopped = false;
  /** Set once every kind has been listed: objects a relist finds after that are announced. */
  let started = false;

  function record(event: WatchEvent) {
    const object = objectView(event.object);
    const key = kindKeyOf(object);
    const previous = objects.get(key);
    if (event.type === "DELETED") {
      if (previous) forget(key, previous);
    } else hold(key, object);
    const cached: CachedEvent = {
      id: object.metadata.resourceVersion ?? "",
      event: { type: event.type, object },
      ...(previous ? { previous } : {}),
    };
    position.set(cached.id, base + log.length);
    log.push(cached);
    if (log.length > logSize * 1.5) {
      const drop = log.length - logSize;
      for (const old of log.slice(0, drop)) if (position.get(old.id)! < base + drop) position.delete(old.id);
      log = log.slice(drop);
      base += drop;
      startCursor = "";
    }
    for (const listener of listeners) listener(cached);
  }

  async function follow(kind: string): Promise<void> {
    const list = await store.list(kind);
    const seen = new Set<string>();
    for (const object of list.items) {
      const key = kindKeyOf(object);
      seen.add(key);
      const held = objects.get(key);
      // At the start nobody listens yet; after a lost watch, what appeared meanwhile is announced.
      if (!held) {
        if (started) record({ type: "ADDED", object });
        else hold(key, objectView(object));
      } else if (held.metadata.resourceVersion !== object.metadata.resourceVersion)
        record({ type: "MODIFIED", object });
    }
    // After a lost watch: what vanished meanwhile is announced as deleted.
    for (const [key, held] of byKind.get(kind) ?? [])
      if (!seen.has(key)) record({ type: "DELETED", object: held });
    const watch = await store.watch(kind, { resourceVersion: list.resourceVersion }, (event) =>
      record(event),
    );
    watches.set(kind, watch);
    void watch.closed.then((error) => {
      if (!error || stopped) return;
      logger.warn("dashboard watch ended, listing again", { kind, error: error.message });
      relist(kind, RELIST_FIRST_MS);
    });
  }

  // A relist that fails (the apiserver still down) is tried again, 0.5 s doubling to 30 s: given
  // up after one try, the kind's objects would stay as they were until the hub restarted.
  function relist(kind: string, delayMs: number): void {
    clock.setTimeout(() => {
      if (stopped) return;
      follow(kind).catch((e: unknown) => {
        const next = Math.min(delayMs * 2, RELIST_MAX_MS);
        logger.warn("dashboard relist failed; trying again", { kind, error: String(e), retryInMs: next });
        relist(kind, next);
      });
    }, delayMs);
  }

  return {
    async start() {
      startCursor = `start-${await store.resourceVersion()}`;
      for (const kind of DASHBOARD_KINDS) await follow(kind);
      started = true;
    },
    snapshot(jobs) {
      const held: KubeObject[] = [];
      for (const [kind, items] of byKind) if (!PER_JOB_KINDS.has(kind)) held.push(...items.values());
      held.push(...this.ofJobs(jobs));
      return { objects: held, cursor: this.cursor() };
    },
    ofJobs(jobs) {
      const held: KubeObject[] = [];
      for (const job of jobs)
        for (const key of byJob.get(job) ?? []) {
          const object = objects.get(key);
          if (object) held.push(object);
        }
      return held;
    },
    cursor() {
      return log.at(-1)?.id ?? startCursor;
    },
    since(cursor) {
      if (cursor && cursor === startCursor) return log.slice();
      const at = position.get(cursor);
      return at === undefined ? undefined : log.slice(at - base + 1);
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    get(kind, namespace, name) {
      return objects.get(kindKey(kind, namespace, name));
    },
    objectsOf(kind) {
      return [...(byKind.get(kind)?.values() ?? [])];
    },
    stop() {
      stopped = true;
      for (const watch of watches.values()) watch.stop();
      listeners.clear();
    },
  };
}
