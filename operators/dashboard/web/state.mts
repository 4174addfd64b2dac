// The browser's copy of the hub's objects, kept by the event stream: every object of the kinds
// that stay few, the Jobs (with their Tasks and Pods) the page on screen names, and a summary of
// all Jobs (docs/dashboard.md#the-event-stream).
import type { KubeObject } from "../../lib/kube-object.ts";
import type { JobSummaryView } from "../job-summary.ts";

export type { JobSummaryView, TeamSummary } from "../job-summary.ts";

/** What the stream sends only for the Jobs it names (object-cache.ts PER_JOB_KINDS). */
const PER_JOB_KINDS = ["Job", "Task"];

export interface RepoWeb {
  base: string;
  style: "github" | "gitea";
}

export interface SourceDiagnostic {
  file?: string;
  line?: number;
  column?: number;
  rule?: string;
  message?: string;
  object?: string;
}

export interface SourceStatus {
  url?: string;
  branch?: string;
  state?: string;
  lastAppliedRevision?: string | null;
  lastAppliedTime?: string | null;
  lastAttemptedRevision?: string | null;
  lastFetchTime?: string | null;
  errors?: SourceDiagnostic[];
  fetchError?: string;
  message?: string;
}

export interface Snapshot {
  objects: KubeObject[];
  summary: JobSummaryView;
  source: SourceStatus | null;
  config: { repoWeb: RepoWeb | null };
  principal: { subject: string; role: string };
}

export interface ChangeEvent {
  type: "ADDED" | "MODIFIED" | "DELETED";
  object: KubeObject;
}

export class State {
  #byKind = new Map<string, Map<string, KubeObject>>();
  /** Sorted lists, kept until the kind changes: paging 10,000 Jobs must not sort them per click. */
  #sorted = new Map<string, KubeObject[]>();
  /** Changes seen per kind: what a page fetched from the API compares to know it is stale. */
  #revisions = new Map<string, number>();
  source: SourceStatus | null = null;
  repoWeb: RepoWeb | null = null;
  principal: Snapshot["principal"] | null = null;
  /** All Jobs the principal may see, counted (the stream holds only the named ones). */
  summary: JobSummaryView | null = null;

  /** The named Jobs' objects as they are now, in place of those held (a resumed stream). */
  select(objects: KubeObject[]): void {
    for (const kind of PER_JOB_KINDS) {
      this.#byKind.delete(kind);
      this.#sorted.delete(kind);
      this.#revisions.set(kind, (this.#revisions.get(kind) ?? 0) + 1);
    }
    for (const object of objects) this.apply({ type: "ADDED", object });
  }

  load(snapshot: Snapshot): void {
    this.#byKind.clear();
    this.#sorted.clear();
    // A new snapshot may differ in anything: every kind counts as changed.
    for (const [kind, n] of this.#revisions) this.#revisions.set(kind, n + 1);
    for (const object of snapshot.objects) this.apply({ type: "ADDED", object });
    this.summary = snapshot.summary;
    this.source = snapshot.source;
    this.repoWeb = snapshot.config.repoWeb;
    this.principal = snapshot.principal;
  }

  apply(event: ChangeEvent): void {
    const { object } = event;
    let kind = this.#byKind.get(object.kind);
    if (!kind) {
      kind = new Map();
      this.#byKind.set(object.kind, kind);
    }
    this.#sorted.delete(object.kind);
    this.#revisions.set(object.kind, (this.#revisions.get(object.kind) ?? 0) + 1);
    const key = `${object.metadata.namespace ?? ""}/${object.metadata.name}`;
    if (event.type === "DELETED") kind.delete(key);
    else kind.set(key, object);
  }

  /** Sorted by namespace, then name. */
  list<T extends KubeObject>(kind: string): T[] {
    let sorted = this.#sorted.get(kind);
    if (!sorted) {
      sorted = this.#sort([...(this.#byKind.get(kind)?.values() ?? [])]);
      this.#sorted.set(kind, sorted);
    }
    return sorted as T[];
  }

  #sort(items: KubeObject[]): KubeObject[] {
    // Plain code-point order: localeCompare is too slow for 10,000 rows redrawn on every change.
    return items
      .map((item) => [keyOf(item), item] as const)
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
      .map(([, item]) => item);
  }

  get<T extends KubeObject>(kind: string, namespace: string | undefined, name: string): T | undefined {
    return this.#byKind.get(kind)?.get(`${namespace ?? ""}/${name}`) as T | undefined;
  }

  revision(kind: string): number {
    return this.#revisions.get(kind) ?? 0;
  }

  count(kind: string): number {
    return this.#byKind.get(kind)?.size ?? 0;
  }
}

function keyOf(object: KubeObject): string {
  return `${object.metadata.namespace ?? ""}/${object.metadata.name}`;
}

/** `agent-beijing` → `beijing`. */
export function clusterOf(namespace: string | undefined): string {
  return namespace?.startsWith("agent-") ? namespace.slice("agent-".length) : (namespace ?? "");
}
