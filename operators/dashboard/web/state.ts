// The browser's copy of the hub's objects, kept by the event stream.
import type { KubeObject } from "../../lib/store/types.ts";

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
  source: SourceStatus | null = null;
  repoWeb: RepoWeb | null = null;
  principal: Snapshot["principal"] | null = null;

  load(snapshot: Snapshot): void {
    this.#byKind.clear();
    for (const object of snapshot.objects) this.apply({ type: "ADDED", object });
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
    const key = `${object.metadata.namespace ?? ""}/${object.metadata.name}`;
    if (event.type === "DELETED") kind.delete(key);
    else kind.set(key, object);
  }

  /** Sorted by namespace, then name. */
  list<T extends KubeObject>(kind: string): T[] {
    const items = [...(this.#byKind.get(kind)?.values() ?? [])] as T[];
    return items.sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
  }

  get<T extends KubeObject>(kind: string, namespace: string | undefined, name: string): T | undefined {
    return this.#byKind.get(kind)?.get(`${namespace ?? ""}/${name}`) as T | undefined;
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
