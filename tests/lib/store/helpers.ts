import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FakeClock } from "../../../operators/lib/clock.ts";
import {
  type KubeObject,
  openSqliteStore,
  type SqliteStore,
  type SqliteStoreOptions,
  type WatchEvent,
} from "../../../operators/lib/store/index.ts";

interface Teardown {
  teardown(fn: () => unknown): void;
}

export function tempDir(t: Teardown): string {
  const dir = mkdtempSync(join(tmpdir(), "rlark-store-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export function tempStore(
  t: Teardown,
  options: Partial<SqliteStoreOptions> = {},
): { store: SqliteStore; dir: string; clock: FakeClock } {
  const dir = options.dataDir ?? tempDir(t);
  const clock = new FakeClock(Date.UTC(2026, 10, 29, 12, 0, 0));
  const store = openSqliteStore({ clock, ...options, dataDir: dir });
  t.teardown(() => store.close());
  return { store, dir, clock };
}

export function job(
  name: string,
  spec: unknown = { tasks: [] },
  extra: Partial<KubeObject["metadata"]> = {},
) {
  return {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Job",
    metadata: { name, ...extra },
    spec,
  } satisfies KubeObject;
}

export function task(
  name: string,
  namespace: string,
  owner?: KubeObject,
  labels: Record<string, string> = {},
): KubeObject {
  return {
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Task",
    metadata: {
      name,
      namespace,
      labels,
      ...(owner
        ? {
            ownerReferences: [
              {
                apiVersion: owner.apiVersion,
                kind: owner.kind,
                name: owner.metadata.name,
                uid: owner.metadata.uid!,
                controller: true,
              },
            ],
          }
        : {}),
    },
    spec: { image: "x" },
  };
}

/** Collects watch events; `next(n)` resolves once n events have arrived (no timers). */
export class Collector {
  events: WatchEvent[] = [];
  #waiters: { n: number; resolve: () => void }[] = [];

  readonly handler = (event: WatchEvent): void => {
    this.events.push(event);
    this.#waiters = this.#waiters.filter((w) => {
      if (this.events.length >= w.n) w.resolve();
      return this.events.length < w.n;
    });
  };

  until(n: number): Promise<WatchEvent[]> {
    if (this.events.length >= n) return Promise.resolve(this.events);
    return new Promise((resolve) => this.#waiters.push({ n, resolve: () => resolve(this.events) }));
  }

  summary(): string[] {
    return this.events.map(
      (e) =>
        `${e.type} ${e.object.metadata.namespace ? `${e.object.metadata.namespace}/` : ""}${e.object.metadata.name}@${e.object.metadata.resourceVersion}`,
    );
  }
}

/** Lets queued microtasks and one macrotask turn run (watch delivery, group commit). */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
