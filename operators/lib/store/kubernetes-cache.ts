// A shared informer cache of one kind on a kube-apiserver: one paginated list, then one watch
// (with bookmarks) resumed stream after stream, keeping every object of the kind in memory with
// indexes by namespace and by label. The store serves get and list from it, so the hub's
// controllers, which read on every reconcile, send no request per read.
//
// Freshness: `resourceVersion` is the last one the cache has seen (list, event or bookmark); it
// is etcd's revision, one counter across kinds, so it compares as a number. A reader that needs
// its own writes waits (`fresh`) until the cache has seen the resourceVersion of its last write
// of this kind: that write's own watch event brings it there. A 410 (the watch's resourceVersion
// was compacted) relists; a lost connection resumes after a pause, meanwhile `fresh` waits and
// the store falls back to the apiserver after a bound. The list and the watch run on an ApplyLoop
// (lib/controller/loop): a list or a watch request that fails backs off, doubling with jitter from
// retryMs; a stream that was open and broke resumes after retryMs.

import { ApplyLoop, type RunResult } from "../controller/loop/index.ts";
import type { KubeHttp, KubeStatus } from "../kube-http.ts";
import type { Logger } from "../logger.ts";
import type { ResourceMap } from "./kubernetes-resources.ts";
import { indexableRequirement, matches, type Selector } from "./label-selector.ts";
import type { KubeObject, WatchEventType } from "./types.ts";

interface RawEvent {
  type: WatchEventType | "BOOKMARK" | "ERROR";
  object: KubeObject & KubeStatus;
}

interface ServedList {
  metadata: { resourceVersion: string; continue?: string };
  items: KubeObject[];
}

export interface KindCacheOptions {
  http: KubeHttp;
  resources: ResourceMap;
  kind: string;
  pageSize: number;
  streamSeconds: number;
  logger: Logger;
  /** Pause before a lost list or watch is tried again (the first; failures in a row double it). */
  retryMs?: number;
}

/** The longest pause between failed list or watch requests. */
const MAX_RETRY_MS = 30_000;

const keyOf = (namespace: string | undefined, name: string) => `${namespace ?? ""}/${name}`;

/** A resourceVersion as a number; "" and non-numbers count as 0 (never fresher than anything). */
export function revision(resourceVersion: string | undefined): bigint {
  return resourceVersion && /^\d+$/.test(resourceVersion) ? BigInt(resourceVersion) : 0n;
}

export class KindCache {
  readonly kind: string;
  #o: KindCacheOptions;
  #objects = new Map<string, KubeObject>();
  #byNamespace = new Map<string, Set<string>>();
  /** `key=value` → object keys, for every label of every object. */
  #byLabel = new Map<string, Set<string>>();
  #resourceVersion = 0n;
  #synced = false;
  #waiters = new Set<{ rv: bigint; resolve: (fresh: boolean) => void }>();
  #stopStream: (() => void) | undefined;
  /** Ends the open stream's wait (a stopped stream calls no end callback). */
  #endStream: ((error: Error | undefined) => void) | undefined;
  /** The next run lists first: at the start, and after a 410. */
  #needsList = true;
  readonly #loop: ApplyLoop<void>;
  #stopped = false;

  constructor(options: KindCacheOptions) {
    this.kind = options.kind;
    this.#o = options;
    this.#loop = new ApplyLoop<void>({
      name: `store cache ${options.kind}`,
      run: () => this.#listAndWatch(),
      baseMs: options.retryMs ?? 1000,
      maxMs: MAX_RETRY_MS,
    });
    // a failed run is logged by #listAndWatch and tried again by the loop
    this.#loop.set().catch(() => undefined);
  }

  get resourceVersion(): string {
    return String(this.#resourceVersion);
  }

  get size(): number {
    return this.#objects.size;
  }

  /**
   * Resolves true once the cache is listed and has seen `rv` (or later), false if that did not
   * happen within `timeoutMs` (the apiserver unreachable, the watch being re-established).
   */
  fresh(rv: bigint, timeoutMs: number): Promise<boolean> {
    if (this.#synced && this.#resourceVersion >= rv) return Promise.resolve(true);
    if (this.#stopped) return Promise.resolve(false);
    return new Promise((resolve) => {
      const waiter = {
        rv,
        resolve: (fresh: boolean) => {
          clearTimeout(timer);
          this.#waiters.delete(waiter);
          resolve(fresh);
        },
      };
      const timer = setTimeout(() => waiter.resolve(false), timeoutMs);
      this.#waiters.add(waiter);
    });
  }

  /** A copy of the object (the caller's to mutate), or undefined. */
  get(namespace: string | undefined, name: string): KubeObject | undefined {
    const object = this.#objects.get(keyOf(namespace, name));
    return object && structuredClone(object);
  }

  /** Copies of the matching objects, unsorted. */
  list(namespace: string | undefined, selector: Selector): KubeObject[] {
    let keys: Iterable<string>;
    const indexed = indexableRequirement(selector);
    if (indexed) {
      const union = new Set<string>();
      for (const value of indexed.values) {
        for (const key of this.#byLabel.get(`${indexed.key}=${value}`) ?? []) union.add(key);
      }
      keys = union;
    } else if (namespace !== undefined) keys = this.#byNamespace.get(namespace) ?? [];
    else keys = this.#objects.keys();
    const out: KubeObject[] = [];
    for (const key of keys) {
      const object = this.#objects.get(key);
      if (!object) continue;
      if (namespace !== undefined && (object.metadata.namespace ?? "") !== namespace) continue;
      if (!matches(selector, object.metadata.labels)) continue;
      out.push(structuredClone(object));
    }
    return out;
  }

  stop(): void {
    this.#stopped = true;
    void this.#loop.stop();
    this.#stopStream?.();
    this.#endStream?.(undefined);
    for (const waiter of [...this.#waiters]) waiter.resolve(false);
  }

  // ---- list and watch ------------------------------------------------------------------------

  /** One run of the loop: a list when one is needed, then a watch until its stream ends. */
  async #listAndWatch(): Promise<RunResult | undefined> {
    let streamError: Error | undefined;
    try {
      if (this.#needsList) await this.#relist();
      if (this.#stopped) return undefined;
      streamError = await this.#watch();
    } catch (error) {
      this.#warn(error);
      throw error;
    }
    if (this.#stopped) return undefined;
    if (!streamError) return { requeueAfter: 0 }; // ended by the apiserver (timeoutSeconds): resume now
    this.#warn(streamError);
    return { requeueAfter: this.#o.retryMs ?? 1000 };
  }

  async #relist(): Promise<void> {
    const path = this.#o.resources.collection(this.kind, undefined);
    const objects: KubeObject[] = [];
    let resourceVersion = "";
    let next: string | undefined;
    do {
      const page = await this.#o.http.request<ServedList>("GET", path, {
        query: { limit: this.#o.pageSize, continue: next },
      });
      // Every page of a paginated list is read at the first page's resourceVersion.
      if (resourceVersion === "") resourceVersion = page.metadata.resourceVersion;
      for (const item of page.items) {
        item.kind ??= this.kind;
        objects.push(this.#o.resources.fromServed(item));
      }
      next = page.metadata.continue || undefined;
    } while (next);
    if (this.#stopped) return;
    this.#objects.clear();
    this.#byNamespace.clear();
    this.#byLabel.clear();
    for (const object of objects) this.#put(object);
    this.#synced = true;
    this.#needsList = false;
    this.#advance(revision(resourceVersion));
  }

  /** Opens a watch from the cache's resourceVersion; resolves when it ends, with its error if any. */
  async #watch(): Promise<Error | undefined> {
    const path = this.#o.resources.collection(this.kind, undefined);
    let end: (error: Error | undefined) => void = () => undefined;
    const ended = new Promise<Error | undefined>((resolve) => {
      end = resolve;
    });
    this.#endStream = end;
    this.#stopStream = await this.#o.http.stream(
      path,
      {
        watch: true,
        allowWatchBookmarks: true,
        resourceVersion: this.resourceVersion,
        timeoutSeconds: this.#o.streamSeconds,
      },
      (value) => {
        const event = value as RawEvent;
        if (event.type === "ERROR") {
          if (event.object.code !== 410) {
            throw new Error(event.object.message ?? `watch error ${event.object.code}`);
          }
          // The resourceVersion was compacted away and events were missed: list again. (A
          // stream stopped from here does not call its end callback.)
          this.#needsList = true;
          this.#stopStream?.();
          end(undefined);
          return;
        }
        if (event.type !== "BOOKMARK") {
          const object = this.#o.resources.fromServed(event.object);
          object.kind ??= this.kind;
          if (event.type === "DELETED") this.#remove(object);
          else this.#put(object);
        }
        this.#advance(revision(event.object.metadata?.resourceVersion));
      },
      (error) => end(error),
    );
    if (this.#stopped) {
      this.#stopStream();
      return undefined;
    }
    return ended;
  }

  #warn(error: unknown): void {
    if (this.#stopped) return;
    this.#o.logger.warn("store cache: list or watch failed; trying again", {
      kind: this.kind,
      error: error instanceof Error ? error.message : String(error),
    });
  }

  #advance(rv: bigint): void {
    if (rv > this.#resourceVersion) this.#resourceVersion = rv;
    if (!this.#synced) return;
    for (const waiter of [...this.#waiters]) {
      if (this.#resourceVersion >= waiter.rv) waiter.resolve(true);
    }
  }

  #put(object: KubeObject): void {
    const key = keyOf(object.metadata.namespace, object.metadata.name);
    const old = this.#objects.get(key);
    if (old) this.#unindex(key, old);
    this.#objects.set(key, object);
    const ns = object.metadata.namespace ?? "";
    addTo(this.#byNamespace, ns, key);
    for (const [label, value] of Object.entries(object.metadata.labels ?? {})) {
      addTo(this.#byLabel, `${label}=${value}`, key);
    }
  }

  #remove(object: KubeObject): void {
    const key = keyOf(object.metadata.namespace, object.metadata.name);
    const old = this.#objects.get(key);
    if (!old) return;
    this.#unindex(key, old);
    this.#objects.delete(key);
  }

  #unindex(key: string, object: KubeObject): void {
    const ns = object.metadata.namespace ?? "";
    const names = this.#byNamespace.get(ns);
    names?.delete(key);
    if (names?.size === 0) this.#byNamespace.delete(ns);
    for (const [label, value] of Object.entries(object.metadata.labels ?? {})) {
      const entry = `${label}=${value}`;
      const keys = this.#byLabel.get(entry);
      keys?.delete(key);
      if (keys?.size === 0) this.#byLabel.delete(entry);
    }
  }
}

function addTo(index: Map<string, Set<string>>, entry: string, key: string): void {
  const keys = index.get(entry);
  if (keys) keys.add(key);
  else index.set(entry, new Set([key]));
}
