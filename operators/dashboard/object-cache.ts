// What the dashboard shows, held in memory: every object of the kinds it draws (redacted as the
// API serves them), kept current by one store watch per kind, plus a log of recent changes so a
// browser that lost its connection resumes from its last event instead of loading everything again.
// One cache serves every browser: the store sees one watch per kind however many people look.

import { type Clock, systemClock } from "../lib/clock.ts";
import { type KubeObject, kindKey, kindKeyOf } from "../lib/kube-object.ts";
import type { Logger } from "../lib/logger.ts";
import type { Store, Watch, WatchEvent } from "../lib/store/index.ts";
import { objectView } from "./object-view.ts";

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
}

export interface ObjectCache {
  start(): Promise<void>;
  /** Every object now, and the id to resume from after them. Synchronous: nothing falls in between. */
  snapshot(): { objects: KubeObject[]; cursor: string };
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
  const listeners = new Set<(event: CachedEvent) => void>();
  const watches = new Map<string, Watch>();
  // The log: events in the order they were delivered (per-kind watches interleave, so ids are not
  // sorted); `position` finds an id in it. `startCursor` names the state before the first event.
  let log: CachedEvent[] = [];
  let base = 0;
  const position = new Map<string, number>();
  let startCursor = "";
  let stopped = false;

  function record(event: WatchEvent) {
    const object = objectView(event.object);
    const key = kindKeyOf(object);
    if (event.type === "DELETED") objects.delete(key);
    else objects.set(key, object);
    const cached: CachedEvent = {
      id: object.metadata.resourceVersion ?? "",
      event: { type: event.type, object },
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
      if (!held) objects.set(key, objectView(object));
      else if (held.metadata.resourceVersion !== object.metadata.resourceVersion)
        record({ type: "MODIFIED", object });
    }
    // After a lost watch: what vanished meanwhile is announced as deleted.
    for (const [key, held] of objects)
      if (held.kind === kind && !seen.has(key)) record({ type: "DELETED", object: held });
    const watch = await store.watch(kind, { resourceVersion: list.resourceVersion }, (event) =>
      record(event),
    );
    watches.set(kind, watch);
    void watch.closed.then((error) => {
      if (!error || stopped) return;
      logger.warn("dashboard watch ended, listing again", { kind, error: error.message });
      clock.setTimeout(() => {
        if (stopped) return;
        follow(kind).catch((e: unknown) =>
          logger.error("dashboard relist failed", { kind, error: String(e) }),
        );
      }, 500);
    });
  }

  return {
    async start() {
      startCursor = `start-${await store.resourceVersion()}`;
      for (const kind of DASHBOARD_KINDS) await follow(kind);
    },
    snapshot() {
      return { objects: [...objects.values()], cursor: log.at(-1)?.id ?? startCursor };
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
      return [...objects.values()].filter((o) => o.kind === kind);
    },
    stop() {
      stopped = true;
      for (const watch of watches.values()) watch.stop();
      listeners.clear();
    },
  };
}
