// The store's live watches by kind: each durable change is offered to every watch of its kind.

import type { KubeObject, WatchHandler } from "./types.ts";
import { type ChangeRecord, Watcher, type WatchFilter } from "./watchers.ts";

export class WatchFanout {
  #watchers = new Map<string, Set<Watcher>>();

  /**
   * Registers a watch that has seen changes up to `seen`; `prime` gives it what it starts with
   * (a replay or the current objects) before any later change reaches it.
   */
  add(
    kind: string,
    filter: WatchFilter,
    handler: WatchHandler<KubeObject>,
    seen: number,
    prime: (watcher: Watcher) => void,
  ): Watcher {
    const watcher = new Watcher(
      kind,
      filter,
      handler,
      (w) => {
        this.#watchers.get(kind)?.delete(w);
      },
      seen,
    );
    prime(watcher);
    const set = this.#watchers.get(kind) ?? new Set<Watcher>();
    this.#watchers.set(kind, set);
    set.add(watcher);
    return watcher;
  }

  deliver(changes: readonly ChangeRecord[]): void {
    for (const change of changes) {
      for (const watcher of this.#watchers.get(change.kind) ?? []) watcher.offer(change);
    }
  }

  stopAll(): void {
    for (const set of this.#watchers.values()) for (const w of [...set]) w.stop();
    this.#watchers.clear();
  }
}
