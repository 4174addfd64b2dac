// The store on a kube-apiserver: every object is a custom resource of the CRDs `rlark crds`
// emits. The apiserver (etcd) gives uid, resourceVersion (etcd's revision: one growing counter),
// generation, finalizers, the status subresource, label selection and watches; its garbage
// collector (kube-controller-manager) collects dependents by ownerReferences, asynchronously.
// What it cannot give is a transaction across objects: applyBatch checks every operation
// against the current state first, then applies them in order (docs/adr/0008-kubernetes-store.md
// says why that is enough for the revision apply). Namespaced kinds live in real namespaces,
// created on first use.
//
// Reads (get, list, countByKind) are served from a shared informer cache per kind
// (kubernetes-cache.ts), once it has seen this store's last write of that kind: read-your-writes
// holds, and a controller's read costs no request. Until the cache is there (or when it lags
// past a bound) reads go to the apiserver, with paginated lists.

import type { KubeConfig } from "@kubernetes/client-node";
import { KubeHttp, KubeHttpError } from "../kube-http.ts";
import { type Logger, silentLogger } from "../logger.ts";
import {
  AlreadyExistsError,
  ConflictError,
  describe,
  InvalidError,
  NotFoundError,
  StoreError,
} from "./errors.ts";
import { KindCache, revision } from "./kubernetes-cache.ts";
import { type KubernetesResource, ResourceMap, storeErrorOf } from "./kubernetes-resources.ts";
import { startKubeWatch } from "./kubernetes-watch.ts";
import { formatSelector, type Selector, toSelector } from "./label-selector.ts";
import { listWindow } from "./list-window.ts";
import { checkObject, namespaceOf } from "./object-rules.ts";
import type {
  BatchOp,
  DeleteOptions,
  KubeObject,
  ListOptions,
  ListResult,
  Store,
  Watch,
  WatchHandler,
  WatchOptions,
} from "./types.ts";
import type { Watcher } from "./watchers.ts";

export type { KubernetesResource } from "./kubernetes-resources.ts";

export interface KubernetesStoreOptions {
  kubeConfig: KubeConfig;
  /** Every kind the store serves, with its CRD's plural and scope. */
  resources: readonly KubernetesResource[];
  /** The objects' apiVersion in the store, e.g. "rlinf.io/v1alpha1". */
  apiVersion: string;
  /** The CRDs' group on the apiserver when it is not the apiVersion's own (tests, tenants). */
  servedGroup?: string;
  /** Objects per list page. Default 500. */
  pageSize?: number;
  /** Seconds before the apiserver ends a watch stream and the store resumes it. Default 300. */
  watchStreamSeconds?: number;
  /** Operations of a batch in flight at once (each a request). Default 16. */
  batchConcurrency?: number;
  /** Attempts of a read-modify-write (batch `apply`) that meets Conflicts. Default 5. */
  applyAttempts?: number;
  /** Serve reads from an informer cache per kind (default true); false: every read is a request. */
  cache?: boolean;
  /** How long a read waits for the cache to catch up before it asks the apiserver. Default 5 s. */
  cacheWaitMs?: number;
  logger?: Logger;
}

interface ServedList {
  metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number };
  items: KubeObject[];
}

const deleteOptionsKind = { apiVersion: "v1", kind: "DeleteOptions" };

export class KubernetesStore implements Store {
  readonly resources: ResourceMap;
  #http: KubeHttp;
  #pageSize: number;
  #streamSeconds: number;
  #applyAttempts: number;
  #batchConcurrency: number;
  #watches = new Set<Watcher>();
  #knownNamespaces = new Set<string>();
  #closed = false;
  #useCache: boolean;
  #cacheWaitMs: number;
  #logger: Logger;
  #caches = new Map<string, KindCache>();
  /** Per kind, the highest resourceVersion this store wrote: reads wait for the cache to see it. */
  #written = new Map<string, bigint>();

  constructor(options: KubernetesStoreOptions) {
    this.resources = new ResourceMap(options.resources, options.apiVersion, options.servedGroup);
    this.#http = new KubeHttp({ kubeConfig: options.kubeConfig });
    this.#pageSize = options.pageSize ?? 500;
    this.#streamSeconds = options.watchStreamSeconds ?? 300;
    this.#applyAttempts = options.applyAttempts ?? 5;
    this.#batchConcurrency = options.batchConcurrency ?? 16;
    this.#useCache = options.cache ?? true;
    this.#cacheWaitMs = options.cacheWaitMs ?? 5_000;
    this.#logger = options.logger ?? silentLogger;
  }

  get server(): string {
    return this.#http.server.href;
  }

  /** Requests this store sent to the apiserver, by verb (WATCH: watch streams). */
  get requestsSent(): Readonly<Record<string, number>> {
    return this.#http.sent;
  }

  // ---- reads -------------------------------------------------------------------------------

  async get<T extends KubeObject = KubeObject>(
    kind: string,
    namespace: string | undefined,
    name: string,
  ): Promise<T | undefined> {
    this.#open();
    const cache = await this.#freshCache(kind);
    if (cache) {
      this.resources.item(kind, namespace, name); // a namespaced kind without namespace is Invalid
      return cache.get(this.#namespaceFor(kind, namespace), name) as T | undefined;
    }
    return this.#getDirect(kind, namespace, name);
  }

  async #getDirect<T extends KubeObject = KubeObject>(
    kind: string,
    namespace: string | undefined,
    name: string,
  ): Promise<T | undefined> {
    try {
      const object = await this.#http.request<T>("GET", this.resources.item(kind, namespace, name));
      return this.resources.fromServed(object);
    } catch (error) {
      if (error instanceof KubeHttpError && error.code === 404) return undefined;
      throw storeErrorOf(error, { kind, namespace, name });
    }
  }

  async list<T extends KubeObject = KubeObject>(
    kind: string,
    options: ListOptions = {},
  ): Promise<ListResult<T>> {
    this.#open();
    const labelSelector = selectorString(options);
    const cache = await this.#freshCache(kind);
    if (cache) {
      const namespace = this.resources.resource(kind).namespaced ? options.namespace : undefined;
      const selector: Selector = toSelector(options.labelSelector);
      // Read with the items, no event in between: a watch from it misses and repeats nothing.
      const resourceVersion = cache.resourceVersion;
      const items = cache.list(namespace, selector) as T[];
      return { items: listWindow(items.sort(byNamespaceAndName), options), resourceVersion };
    }
    const path = this.resources.collection(kind, options.namespace);
    const items: T[] = [];
    let resourceVersion = "";
    let next: string | undefined;
    do {
      let page: ServedList;
      try {
        page = await this.#http.request<ServedList>("GET", path, {
          query: { limit: this.#pageSize, continue: next, labelSelector },
        });
      } catch (error) {
        throw storeErrorOf(error, { kind });
      }
      // Every page of a paginated list is read at the first page's resourceVersion.
      if (resourceVersion === "") resourceVersion = page.metadata.resourceVersion;
      for (const item of page.items) {
        item.kind ??= kind;
        items.push(this.resources.fromServed(item as T));
      }
      next = page.metadata.continue || undefined;
    } while (next);
    if (!this.resources.resource(kind).namespaced || options.namespace === undefined) {
      items.sort(byNamespaceAndName);
    }
    return { items: listWindow(items, options), resourceVersion };
  }

  async countByKind(): Promise<Record<string, number>> {
    this.#open();
    const counts: Record<string, number> = {};
    for (const { kind } of this.resources.resources) {
      const cache = await this.#freshCache(kind);
      if (cache) {
        if (cache.size > 0) counts[kind] = cache.size;
        continue;
      }
      const page = await this.#http.request<ServedList>("GET", this.resources.collection(kind, undefined), {
        query: { limit: 1 },
      });
      const count = page.items.length + (page.metadata.remainingItemCount ?? 0);
      if (count > 0) counts[kind] = count;
    }
    return counts;
  }

  async resourceVersion(): Promise<string> {
    this.#open();
    // A list read from etcd (no resourceVersion given) carries its current revision.
    const first = this.resources.resources[0];
    if (!first) return "0";
    const page = await this.#http.request<ServedList>(
      "GET",
      this.resources.collection(first.kind, undefined),
      {
        query: { limit: 1 },
      },
    );
    return page.metadata.resourceVersion;
  }

  // ---- writes ------------------------------------------------------------------------------

  async create<T extends KubeObject>(object: T): Promise<T & KubeObject> {
    this.#open();
    checkObject(object, true);
    const served = this.resources.toServed(object);
    const status = served.status;
    delete served.status;
    const ns = namespaceOf(served);
    const subject = { kind: object.kind, namespace: ns, name: object.metadata.name };
    let created: KubeObject;
    try {
      created = await this.#createServed(served);
    } catch (error) {
      throw storeErrorOf(error, subject);
    }
    // The status subresource ignores status on create; the contract keeps it, so it is a
    // second write (the object exists with no status for a moment).
    this.#wrote(created);
    if (status !== undefined) {
      created.status = status;
      try {
        created = await this.#http.request<KubeObject>("PUT", `${this.#itemOf(created)}/status`, {
          body: created,
        });
      } catch (error) {
        throw storeErrorOf(error, subject);
      }
      this.#wrote(created);
    }
    return this.resources.fromServed(created) as T & KubeObject;
  }

  async #createServed(served: KubeObject): Promise<KubeObject> {
    const ns = served.metadata.namespace;
    const path = this.resources.collection(served.kind, ns);
    try {
      return await this.#http.request<KubeObject>("POST", path, { body: served });
    } catch (error) {
      if (!(ns && error instanceof KubeHttpError && error.code === 404 && !this.#knownNamespaces.has(ns))) {
        throw error;
      }
      await this.#ensureNamespace(ns);
      return await this.#http.request<KubeObject>("POST", path, { body: served });
    }
  }

  async #ensureNamespace(name: string): Promise<void> {
    try {
      await this.#http.request("POST", "/api/v1/namespaces", {
        body: {
          apiVersion: "v1",
          kind: "Namespace",
          metadata: { name, labels: { "app.kubernetes.io/managed-by": "rlark" } },
        },
      });
    } catch (error) {
      if (!(error instanceof KubeHttpError && error.code === 409)) throw error;
    }
    this.#knownNamespaces.add(name);
  }

  update<T extends KubeObject>(object: T): Promise<T & KubeObject> {
    return this.#put(object, "") as Promise<T & KubeObject>;
  }

  updateStatus<T extends KubeObject>(object: T): Promise<T & KubeObject> {
    return this.#put(object, "/status") as Promise<T & KubeObject>;
  }

  async #put(object: KubeObject, subresource: "" | "/status"): Promise<KubeObject> {
    this.#open();
    checkObject(object, false);
    const served = this.resources.toServed(object);
    const ns = namespaceOf(served);
    const subject = { kind: object.kind, namespace: ns, name: object.metadata.name };
    const path = `${this.#itemOf(served)}${subresource}`;
    const unconditional = !served.metadata.resourceVersion;
    for (let attempt = 1; ; attempt++) {
      // The status subresource refuses updates without a resourceVersion: an unconditional one
      // is the current resourceVersion, read again (from the apiserver: the cache may lag
      // another writer) if another write slips in between.
      if (unconditional) {
        const current =
          attempt === 1
            ? await this.get(object.kind, ns, object.metadata.name)
            : await this.#getDirect(object.kind, ns, object.metadata.name);
        if (!current)
          throw new NotFoundError(`${describe(object.kind, ns, object.metadata.name)} not found`, subject);
        served.metadata.resourceVersion = current.metadata.resourceVersion;
      }
      try {
        const written = await this.#http.request<KubeObject>("PUT", path, { body: served });
        // Removing the last finalizer of a deleted object deletes it, and the answer carries the
        // object as it was, not the deletion's resourceVersion.
        if (served.metadata.deletionTimestamp) await this.#wroteNow(object.kind);
        else this.#wrote(written);
        return this.resources.fromServed(written);
      } catch (error) {
        const mapped = storeErrorOf(error, subject);
        const retry = unconditional && mapped instanceof StoreError && mapped.code === "Conflict";
        if (!retry || attempt >= this.#applyAttempts) throw mapped;
      }
    }
  }

  async delete(
    kind: string,
    namespace: string | undefined,
    name: string,
    options: DeleteOptions = {},
  ): Promise<KubeObject> {
    this.#open();
    const propagation = options.propagation ?? "Background";
    if (!["Background", "Foreground", "Orphan"].includes(propagation)) {
      throw new InvalidError(
        `propagation must be Background, Foreground or Orphan, not ${String(propagation)}`,
      );
    }
    const subject = { kind, namespace, name };
    try {
      const out = await this.#http.request<KubeObject & { kind: string }>(
        "DELETE",
        this.resources.item(kind, namespace, name),
        {
          body: {
            ...deleteOptionsKind,
            propagationPolicy: propagation,
            preconditions: options.preconditions,
          },
        },
      );
      // The answer carries the object as it was before, not the deletion's resourceVersion.
      await this.#wroteNow(kind);
      if (out.kind === "Status") {
        return {
          apiVersion: this.resources.apiVersion,
          kind,
          metadata: { name, ...(namespace ? { namespace } : {}) },
        };
      }
      return this.resources.fromServed(out);
    } catch (error) {
      throw storeErrorOf(error, subject);
    }
  }

  /**
   * Not a transaction: every operation is first checked against the current objects (and the
   * batch's own earlier operations), so a batch that would fail on a missing or existing object
   * or a stale resourceVersion changes nothing; then the operations are applied, several at once
   * (`batchConcurrency`), in order for any one object. A concurrent writer or a crash between the
   * check and the last write can leave part of it applied: callers must be idempotent and
   * resumable (the git source's revision apply is). The first failure stops the batch: nothing
   * more is started, and it rejects once what was in flight has ended.
   */
  async applyBatch(ops: readonly BatchOp[]): Promise<KubeObject[]> {
    this.#open();
    await this.#check(ops);
    // One lane per object, in batch order; lanes run concurrently.
    const lanes = new Map<string, number[]>();
    for (const [index, op] of ops.entries()) {
      const key = op.op === "delete" ? `${op.kind}/${op.namespace ?? ""}/${op.name}` : objectLane(op.object);
      const lane = lanes.get(key);
      if (lane) lane.push(index);
      else lanes.set(key, [index]);
    }
    const out: KubeObject[] = new Array(ops.length);
    const pending = [...lanes.values()];
    let failure: unknown;
    const worker = async () => {
      for (let lane = pending.shift(); lane && failure === undefined; lane = pending.shift()) {
        for (const index of lane) {
          if (failure !== undefined) return;
          const op = ops[index]!;
          try {
            out[index] = await this.#applyOne(op);
          } catch (error) {
            failure ??= inBatch(error, index, op);
          }
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.#batchConcurrency, lanes.size) }, worker));
    if (failure !== undefined) throw failure;
    return out;
  }

  async #check(ops: readonly BatchOp[]): Promise<void> {
    const state = new Map<string, KubeObject | undefined>();
    const read = async (kind: string, namespace: string | undefined, name: string) => {
      const key = `${kind}/${namespace ?? ""}/${name}`;
      if (!state.has(key)) state.set(key, await this.get(kind, namespace, name));
      return { key, current: state.get(key) };
    };
    for (const [index, op] of ops.entries()) {
      try {
        if (op.op === "delete") {
          const { key, current } = await read(op.kind, op.namespace, op.name);
          if (!current) throw new NotFoundError(`${describe(op.kind, op.namespace, op.name)} not found`);
          const pre = op.options?.preconditions;
          if (pre?.uid !== undefined && pre.uid !== current.metadata.uid)
            throw new ConflictError(
              `${describe(op.kind, op.namespace, op.name)}: precondition failed on uid`,
            );
          if (pre?.resourceVersion !== undefined && pre.resourceVersion !== current.metadata.resourceVersion)
            throw new ConflictError(
              `${describe(op.kind, op.namespace, op.name)}: precondition failed on resourceVersion`,
            );
          if (!(current.metadata.finalizers ?? []).length) state.set(key, undefined);
          continue;
        }
        const object = op.object;
        checkObject(object, op.op === "create");
        this.resources.resource(object.kind);
        const where = describe(object.kind, object.metadata.namespace, object.metadata.name);
        if (op.op === "create" && !object.metadata.name) continue;
        const { key, current } = await read(object.kind, object.metadata.namespace, object.metadata.name);
        if (op.op === "create") {
          if (current) throw new AlreadyExistsError(`${where} already exists`);
          state.set(key, object);
        } else if (op.op === "update" || op.op === "updateStatus") {
          if (!current) throw new NotFoundError(`${where} not found`);
          const rv = object.metadata.resourceVersion;
          if (rv && current.metadata.resourceVersion && rv !== current.metadata.resourceVersion) {
            throw new ConflictError(
              `${where} was modified (resourceVersion ${rv} is stale): read it again and retry`,
            );
          }
        } else if (!current) state.set(key, object);
      } catch (error) {
        throw inBatch(error, index, op);
      }
    }
  }

  #applyOne(op: BatchOp): Promise<KubeObject> {
    switch (op.op) {
      case "create":
        return this.create(op.object);
      case "update":
        return this.update(op.object);
      case "updateStatus":
        return this.updateStatus(op.object);
      case "apply":
        return this.#upsert(op.object);
      case "delete":
        return this.delete(op.kind, op.namespace, op.name, op.options);
      default:
        throw new InvalidError(`unknown batch operation ${JSON.stringify((op as { op: unknown }).op)}`);
    }
  }

  /** The batch `apply`: create, or replace spec, labels and annotations keeping the rest. */
  async #upsert(input: KubeObject): Promise<KubeObject> {
    for (let attempt = 1; ; attempt++) {
      // A retry reads the apiserver: the cache may not have seen another writer's change yet.
      const current =
        attempt === 1
          ? await this.get(input.kind, input.metadata.namespace, input.metadata.name)
          : await this.#getDirect(input.kind, input.metadata.namespace, input.metadata.name);
      try {
        if (!current) {
          const fresh = { ...input, metadata: { ...input.metadata } };
          delete fresh.metadata.resourceVersion;
          return await this.create(fresh);
        }
        const next: KubeObject = { ...current, metadata: { ...current.metadata } };
        for (const key of ["labels", "annotations"] as const) {
          if (input.metadata[key]) next.metadata[key] = input.metadata[key];
          else delete next.metadata[key];
        }
        if (input.spec === undefined) delete next.spec;
        else next.spec = input.spec;
        return await this.update(next);
      } catch (error) {
        const retry =
          error instanceof StoreError && (error.code === "Conflict" || error.code === "AlreadyExists");
        if (!retry || attempt >= this.#applyAttempts) throw error;
      }
    }
  }

  // ---- watch -------------------------------------------------------------------------------

  async watch<T extends KubeObject = KubeObject>(
    kind: string,
    options: WatchOptions,
    handler: WatchHandler<T>,
  ): Promise<Watch> {
    this.#open();
    const labelSelector = selectorString(options);
    // A handler that reads what an event names must find it: the event is delivered once the
    // kind's cache has seen it (the watch and the cache are two streams, either may lead).
    const cached = this.#useCache ? this.#cacheOf(kind) : undefined;
    const deliver: WatchHandler<KubeObject> = cached
      ? async (event) => {
          await cached.fresh(revision(event.object.metadata.resourceVersion), this.#cacheWaitMs);
          return (handler as WatchHandler<KubeObject>)(event);
        }
      : (handler as WatchHandler<KubeObject>);
    const watcher = await startKubeWatch(
      {
        http: this.#http,
        resources: this.resources,
        kind,
        namespace: options.namespace,
        labelSelector,
        streamSeconds: this.#streamSeconds,
        list: () => this.list(kind, options),
      },
      options.resourceVersion,
      deliver,
      (w) => this.#watches.delete(w),
    );
    this.#watches.add(watcher);
    return watcher;
  }

  // ---- lifecycle ---------------------------------------------------------------------------

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const watch of [...this.#watches]) watch.stop();
    for (const cache of this.#caches.values()) cache.stop();
    this.#http.close();
  }

  /** Starts the informer cache of every kind now (a standby's warm start), without waiting. */
  warm(): void {
    if (!this.#useCache) return;
    for (const { kind } of this.resources.resources) this.#cacheOf(kind);
  }

  #cacheOf(kind: string): KindCache {
    let cache = this.#caches.get(kind);
    if (!cache) {
      this.resources.resource(kind);
      cache = new KindCache({
        http: this.#http,
        resources: this.resources,
        kind,
        pageSize: this.#pageSize,
        streamSeconds: this.#streamSeconds,
        logger: this.#logger,
      });
      this.#caches.set(kind, cache);
    }
    return cache;
  }

  /** The kind's cache once it has seen this store's last write of the kind; else undefined. */
  async #freshCache(kind: string): Promise<KindCache | undefined> {
    if (!this.#useCache) return undefined;
    const cache = this.#cacheOf(kind);
    const fresh = await cache.fresh(this.#written.get(kind) ?? 0n, this.#cacheWaitMs);
    return fresh && !this.#closed ? cache : undefined;
  }

  /** Reads of `written.kind` wait until the cache has seen this write. */
  #wrote(written: KubeObject): void {
    const rv = revision(written.metadata.resourceVersion);
    const kind = written.kind;
    if (rv > (this.#written.get(kind) ?? 0n)) this.#written.set(kind, rv);
  }

  /** Reads of `kind` wait until the cache has seen the current resourceVersion (one request). */
  async #wroteNow(kind: string): Promise<void> {
    if (!this.#useCache) return;
    this.#wrote({
      apiVersion: "",
      kind,
      metadata: { name: "", resourceVersion: await this.resourceVersion() },
    });
  }

  #namespaceFor(kind: string, namespace: string | undefined): string | undefined {
    return this.resources.resource(kind).namespaced ? namespace : undefined;
  }

  #open(): void {
    if (this.#closed) throw new Error(`store on ${this.server} is closed`);
  }

  #itemOf(object: KubeObject): string {
    return this.resources.item(object.kind, object.metadata.namespace, object.metadata.name);
  }
}

function selectorString(options: ListOptions): string | undefined {
  if (options.labelSelector === undefined) return undefined;
  const text = formatSelector(toSelector(options.labelSelector));
  return text === "" ? undefined : text;
}

function byNamespaceAndName(a: KubeObject, b: KubeObject): number {
  const an = a.metadata.namespace ?? "";
  const bn = b.metadata.namespace ?? "";
  if (an !== bn) return an < bn ? -1 : 1;
  return a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0;
}

function objectLane(object: KubeObject): string {
  return `${object.kind}/${object.metadata.namespace ?? ""}/${object.metadata.name}`;
}

function inBatch(error: unknown, index: number, op: BatchOp): unknown {
  if (error instanceof StoreError) {
    error.subject.batchIndex = index;
    error.message = `batch operation ${index} (${op.op}): ${error.message}`;
  }
  return error;
}

/** Opens a store on the apiserver of `kubeConfig`; the CRDs must be installed (see crd-check.ts). */
export function openKubernetesStore(options: KubernetesStoreOptions): KubernetesStore {
  return new KubernetesStore(options);
}
