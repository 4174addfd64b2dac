// Where each kind lives on a kube-apiserver (its CRD's plural and scope), and the translation
// between the store's apiVersion and the served one. The served group is normally the same
// (rlinf.io); a different one lets several stores (tests, tenants) share one apiserver with
// CRDs of their own group.

import { KubeHttpError } from "../kube-http.ts";
import {
  AlreadyExistsError,
  ConflictError,
  type ErrorSubject,
  ExpiredError,
  InvalidError,
  NotFoundError,
} from "./errors.ts";
import type { KubeObject } from "./types.ts";

export interface KubernetesResource {
  kind: string;
  /** The CRD's plural, e.g. "jobs". */
  plural: string;
  /** Namespaced kinds live in real namespaces; the others are cluster-scoped. */
  namespaced: boolean;
}

export class ResourceMap {
  /** The store's apiVersion, e.g. "rlinf.io/v1alpha1". */
  readonly apiVersion: string;
  /** The apiVersion served by the apiserver, e.g. "rlinf.io/v1alpha1" or "t1.test.rlark.io/v1alpha1". */
  readonly servedApiVersion: string;
  #byKind: Map<string, KubernetesResource>;

  constructor(resources: readonly KubernetesResource[], apiVersion: string, servedGroup?: string) {
    this.apiVersion = apiVersion;
    const version = apiVersion.split("/")[1];
    this.servedApiVersion = servedGroup ? `${servedGroup}/${version}` : apiVersion;
    this.#byKind = new Map(resources.map((r) => [r.kind, r]));
  }

  get resources(): KubernetesResource[] {
    return [...this.#byKind.values()];
  }

  resource(kind: string): KubernetesResource {
    const resource = this.#byKind.get(kind);
    if (!resource) throw new InvalidError(`kind ${kind} is not served by this store (no CRD for it)`);
    return resource;
  }

  /** The collection path; `namespace` undefined (or a cluster-scoped kind) means every namespace. */
  collection(kind: string, namespace: string | undefined): string {
    const { plural, namespaced } = this.resource(kind);
    const base = `/apis/${this.servedApiVersion}`;
    return namespaced && namespace ? `${base}/namespaces/${enc(namespace)}/${plural}` : `${base}/${plural}`;
  }

  item(kind: string, namespace: string | undefined, name: string): string {
    const { namespaced } = this.resource(kind);
    if (namespaced && !namespace) throw new InvalidError(`${kind} ${name}: a namespace is required`);
    return `${this.collection(kind, namespace)}/${enc(name)}`;
  }

  /** The object as the apiserver keeps it (a copy). */
  toServed(object: KubeObject): KubeObject {
    if (object.apiVersion !== this.apiVersion) {
      throw new InvalidError(
        `${object.kind} ${object.metadata.name}: apiVersion ${object.apiVersion} is not ${this.apiVersion}`,
      );
    }
    const out = structuredClone(object);
    out.apiVersion = this.servedApiVersion;
    if (!this.resource(object.kind).namespaced) delete out.metadata.namespace;
    for (const ref of out.metadata.ownerReferences ?? []) {
      if (ref.apiVersion === this.apiVersion) ref.apiVersion = this.servedApiVersion;
    }
    return out;
  }

  /** The served object as the store hands it out (in place). */
  fromServed<T extends KubeObject>(object: T): T {
    object.apiVersion = this.apiVersion;
    for (const ref of object.metadata.ownerReferences ?? []) {
      if (ref.apiVersion === this.servedApiVersion) ref.apiVersion = this.apiVersion;
    }
    // managedFields is apiserver bookkeeping the SQLite store has no notion of.
    delete (object.metadata as unknown as Record<string, unknown>).managedFields;
    return object;
  }
}

function enc(segment: string): string {
  return encodeURIComponent(segment);
}

/** The store's typed error for an apiserver answer (or the error itself when it is not one). */
export function storeErrorOf(error: unknown, subject: ErrorSubject = {}): unknown {
  if (!(error instanceof KubeHttpError)) return error;
  switch (error.code) {
    case 404:
      return new NotFoundError(error.message, subject);
    case 409:
      return error.reason === "AlreadyExists"
        ? new AlreadyExistsError(error.message, subject)
        : new ConflictError(error.message, subject);
    case 410:
      return new ExpiredError(error.message, subject);
    case 400:
    case 422:
      return new InvalidError(error.message, subject);
    default:
      return error;
  }
}
