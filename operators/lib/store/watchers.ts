// In-process watch fan-out. Each watcher has its own FIFO and delivers one event at a time,
// asynchronously, so a handler may call back into the store and a slow handler delays only
// its own watch. Objects are parsed per watcher: a handler may mutate what it gets.

import { matches, type Selector } from "./label-selector.ts";
import type { KubeObject, Watch, WatchEventType, WatchHandler } from "./types.ts";

/** A committed change as the backend recorded it. */
export interface ChangeRecord {
  resourceVersion: number;
  type: WatchEventType;
  kind: string;
  namespace: string;
  /** The object after the change, serialised. */
  json: string;
  labels: Readonly<Record<string, string>> | undefined;
  /** Labels before a MODIFIED change: a label-selector watch sees an object enter or leave. */
  prevLabels: Readonly<Record<string, string>> | undefined;
}

export interface WatchFilter {
  namespace: string | undefined;
  selector: Selector;
}

/** The event type this filter sees for a change, or undefined when it sees nothing. */
export function visibleType(filter: WatchFilter, change: ChangeRecord): WatchEventType | undefined {
  if (filter.namespace !== undefined && filter.namespace !== change.namespace) return undefined;
  if (filter.selector.requirements.length === 0) return change.type;
  const now = matches(filter.selector, change.labels);
  if (change.type !== "MODIFIED") return now ? change.type : undefined;
  const before = matches(filter.selector, change.prevLabels);
  if (before && now) return "MODIFIED";
  if (now) return "ADDED";
  if (before) return "DELETED";
  return undefined;
}

/**
 * The event with its object parsed when first read: handlers that only learn that something
 * changed (a debounced writer, a listener) do not pay for parsing every object of a large
 * revision once per watch.
 */
function lazyEvent(type: WatchEventType, json: string): { type: WatchEventType; object: KubeObject } {
  let object: KubeObject | undefined;
  return {
    type,
    get object(): KubeObject {
      object ??= JSON.parse(json) as KubeObject;
      return object;
    },
  };
}

export class Watcher implements Watch {
  readonly kind: string;
  readonly closed: Promise<Error | undefined>;
  #filter: WatchFilter;
  #handler: WatchHandler<KubeObject>;
  #queue: { type: WatchEventType; json: string }[] = [];
  #head = 0;
  #draining = false;
  #stopped = false;
  #resolveClosed!: (error: Error | undefined) => void;
  #onStop: (watcher: Watcher) => void;
  /** Changes up to here are already reflected in what this watch was given. */
  #seen: number;

  constructor(
    kind: string,
    filter: WatchFilter,
    handler: WatchHandler<KubeObject>,
    onStop: (watcher: Watcher) => void,
    seen: number,
  ) {
    this.kind = kind;
    this.#seen = seen;
    this.#filter = filter;
    this.#handler = handler;
    this.#onStop = onStop;
    this.closed = new Promise((resolve) => {
      this.#resolveClosed = resolve;
    });
  }

  /** Queues the change if this watch sees it and has not seen it yet. */
  offer(change: ChangeRecord): void {
    if (this.#stopped || change.resourceVersion <= this.#seen) return;
    this.#seen = change.resourceVersion;
    const type = visibleType(this.#filter, change);
    if (type) this.push(type, change.json);
  }

  push(type: WatchEventType, json: string): void {
    if (this.#stopped) return;
    this.#queue.push({ type, json });
    if (!this.#draining) {
      this.#draining = true;
      queueMicrotask(() => void this.#drain());
    }
  }

  async #drain(): Promise<void> {
    try {
      while (!this.#stopped && this.#head < this.#queue.length) {
        const next = this.#queue[this.#head++]!;
        if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
          this.#queue = this.#queue.slice(this.#head);
          this.#head = 0;
        }
        const result = this.#handler(lazyEvent(next.type, next.json));
        if (result instanceof Promise) await result;
      }
    } catch (error) {
      this.close(error instanceof Error ? error : new Error(String(error)));
    } finally {
      this.#draining = false;
    }
  }

  stop(): void {
    this.close(undefined);
  }

  close(error: Error | undefined): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#queue = [];
    this.#head = 0;
    this.#onStop(this);
    this.#resolveClosed(error);
  }
}
