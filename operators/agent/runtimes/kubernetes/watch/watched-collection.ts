// A list+watch cache of one resource, built to outlive what the stock informer does not
// (client-node issues #364, #958, #301): a loop that lists, then watches from the list's
// resourceVersion with bookmarks; relists on 410 Gone and every `relistIntervalMs` (jittered);
// re-watches from the last seen resourceVersion after a dropped or silent connection (the Watch's
// 30 s inactivity timeout is the watchdog); backs off exponentially while the server fails; and
// skips events whose object it already holds at that resourceVersion. A 403 on the first list is
// the one failure not retried: RBAC does not grant the list, and waiting will not grant it.
import { type KubeConfig, type KubernetesObject, KubernetesObjectApi, Watch } from "@kubernetes/client-node";
import { type Clock, systemClock } from "../../../../lib/clock.ts";
import type { Logger } from "../../../../lib/logger.ts";
import { apiErrorCode, describeApiError } from "../api-error.ts";

export interface CollectionOptions {
  kubeConfig: KubeConfig;
  apiVersion: string;
  kind: string;
  /** The watch path for all namespaces, e.g. /apis/apps/v1/deployments. */
  path: string;
  labelSelector?: string;
  /** Called after the cached set changed (an object added, changed or removed). */
  onChange: () => void;
  logger: Logger;
  relistIntervalMs?: number;
  backoff?: { initialMs: number; maxMs: number };
  /** Drives the backoff, the relist interval and the busy-loop guard; tests pass a FakeClock. */
  clock?: Clock;
}

/** `nodes` for /api/v1/nodes, `deployments.apps` for /apis/apps/v1/deployments: as RBAC names them. */
function resourceOf(path: string): string {
  const parts = path.split("/").filter(Boolean);
  const resource = parts.at(-1) ?? path;
  return parts[0] === "apis" && parts[1] ? `${resource}.${parts[1]}` : resource;
}

function forbiddenMessage(path: string, err: unknown): string {
  return `the agent may not list ${resourceOf(path)} (${describeApiError(err)}): grant it fleet/agent's ClusterRole rlark-agent (kubectl apply -k fleet/agent, or bind that ClusterRole to the agent's identity)`;
}

const key = (o: KubernetesObject): string => `${o.metadata?.namespace ?? ""}/${o.metadata?.name ?? ""}`;

export class WatchedCollection<T extends KubernetesObject> {
  readonly #options: CollectionOptions;
  readonly #clock: Clock;
  readonly #objects: KubernetesObjectApi;
  readonly #items = new Map<string, T>();
  #resourceVersion = "";
  #stopped = false;
  #abort: AbortController | undefined;
  #wake: (() => void) | undefined;
  #synced: Promise<void>;
  #markSynced: () => void = () => undefined;
  #failSynced: (err: Error) => void = () => undefined;
  #hasSynced = false;
  /** Lists done so far: the first, then one per relist. */
  lists = 0;
  /** Watch connections that ended in 410 Gone. */
  gone = 0;

  constructor(options: CollectionOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#objects = KubernetesObjectApi.makeApiClient(options.kubeConfig);
    this.#synced = new Promise((resolve, reject) => {
      this.#markSynced = resolve;
      this.#failSynced = reject;
    });
    // rejected only for whoever waits for it; nobody waiting is no crash
    this.#synced.catch(() => undefined);
  }

  /** Resolves once the first list is in; rejects when RBAC forbids that list (the collection stops). */
  get synced(): Promise<void> {
    return this.#synced;
  }

  values(): IterableIterator<T> {
    return this.#items.values();
  }

  get(namespace: string, name: string): T | undefined {
    return this.#items.get(`${namespace}/${name}`);
  }

  start(): void {
    void this.#run();
  }

  stop(): void {
    this.#stopped = true;
    this.#abort?.abort();
    this.#wake?.();
  }

  /**
   * Watches again from `resourceVersion`, as after a long disconnection; an expired one gets the
   * server's 410 Gone and so a relist. For tests of that path.
   */
  rewatchFrom(resourceVersion: string): void {
    this.#resourceVersion = resourceVersion;
    this.#abort?.abort();
  }

  /** Relist now (tests use it to check that a relist changes nothing). */
  relist(): void {
    this.#relistRequested = true;
    this.#abort?.abort();
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = this.#clock.setTimeout(resolve, ms);
      this.#wake = () => {
        this.#clock.clearTimeout(timer);
        resolve();
      };
    });
  }

  #backoff(failures: number): number {
    const { initialMs, maxMs } = this.#options.backoff ?? { initialMs: 500, maxMs: 30_000 };
    const ms = Math.min(maxMs, initialMs * 2 ** Math.max(0, failures - 1));
    return ms / 2 + Math.random() * (ms / 2);
  }

  async #list(): Promise<void> {
    const { apiVersion, kind, labelSelector } = this.#options;
    const fresh = new Map<string, T>();
    let continueToken: string | undefined;
    let resourceVersion = "";
    do {
      const page = await this.#objects.list<T>(
        apiVersion,
        kind,
        undefined,
        undefined,
        undefined,
        undefined,
        undefined,
        labelSelector,
        500,
        continueToken,
      );
      for (const item of page.items) fresh.set(key(item), item);
      resourceVersion = page.metadata?.resourceVersion ?? resourceVersion;
      continueToken = page.metadata?._continue || undefined;
    } while (continueToken);
    let changed = fresh.size !== this.#items.size;
    for (const [k, item] of fresh) {
      if (this.#items.get(k)?.metadata?.resourceVersion !== item.metadata?.resourceVersion) changed = true;
    }
    this.#items.clear();
    for (const [k, item] of fresh) this.#items.set(k, item);
    this.#resourceVersion = resourceVersion;
    this.lists += 1;
    if (changed) this.#options.onChange();
  }

  /** One watch connection; resolves "gone" on 410, "error" on a failure, "closed" otherwise. */
  #watch(): Promise<"gone" | "error" | "closed"> {
    return new Promise((resolve) => {
      let outcome: "gone" | "error" | "closed" = "closed";
      const query: Record<string, string | boolean | number> = {
        resourceVersion: this.#resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds: 300,
      };
      if (this.#options.labelSelector) query.labelSelector = this.#options.labelSelector;
      const onEvent = (type: string, obj: unknown) => {
        const object = obj as T & { code?: number };
        if (type === "ERROR") {
          outcome = object.code === 410 ? "gone" : "error";
          this.#abort?.abort();
          return;
        }
        const rv = object.metadata?.resourceVersion;
        if (rv) this.#resourceVersion = rv;
        if (type === "BOOKMARK") return;
        const k = key(object);
        if (type === "DELETED") {
          if (this.#items.delete(k)) this.#options.onChange();
          return;
        }
        if (this.#items.get(k)?.metadata?.resourceVersion === rv) return;
        this.#items.set(k, object);
        this.#options.onChange();
      };
      const onDone = (err: unknown) => {
        if (err && outcome === "closed") {
          const code = apiErrorCode(err);
          const timeout = err instanceof Error && err.name === "TimeoutError";
          const aborted = err instanceof Error && err.name === "AbortError";
          if (code === 410) outcome = "gone";
          else if (!timeout && !aborted) {
            outcome = "error";
            this.#options.logger.warn("watch failed", {
              kind: this.#options.kind,
              error: describeApiError(err),
            });
          }
        }
        resolve(outcome);
      };
      new Watch(this.#options.kubeConfig)
        .watch(this.#options.path, query, onEvent, onDone)
        .then((abort) => {
          this.#abort = abort;
          if (this.#stopped) abort.abort();
        })
        .catch(onDone);
    });
  }

  async #run(): Promise<void> {
    let failures = 0;
    const interval = this.#options.relistIntervalMs ?? 600_000;
    while (!this.#stopped) {
      try {
        await this.#list();
        this.#hasSynced = true;
        this.#markSynced();
        failures = 0;
      } catch (err) {
        if (!this.#hasSynced && apiErrorCode(err) === 403) {
          this.#stopped = true;
          this.#failSynced(new Error(forbiddenMessage(this.#options.path, err)));
          return;
        }
        failures += 1;
        this.#options.logger.warn("list failed", {
          kind: this.#options.kind,
          error: describeApiError(err),
        });
        await this.#sleep(this.#backoff(failures));
        continue;
      }
      const relistAt = this.#clock.now() + interval * (0.9 + Math.random() * 0.2);
      while (!this.#stopped && this.#clock.now() < relistAt) {
        const began = this.#clock.now();
        const outcome = await this.#watch();
        if (this.#relistRequested) {
          this.#relistRequested = false;
          break;
        }
        if (outcome === "gone") {
          this.gone += 1;
          break;
        }
        if (outcome === "error") {
          failures += 1;
          await this.#sleep(this.#backoff(failures));
          continue;
        }
        failures = 0;
        // a server that closes watches at once must not turn this loop into a busy one
        if (this.#clock.now() - began < 1000) await this.#sleep(1000);
      }
    }
  }

  #relistRequested = false;
}
