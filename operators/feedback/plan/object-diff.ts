// Created, changed and deleted objects: the planned revision's manifests against the live state,
// by the same rules the hub applies a revision (operators/source/snapshot-apply.ts): objects are
// keyed kind/namespace/name, only what git controls is compared, and only objects the source
// owns are deleted.
import {
  kinds,
  MANAGED_BY_GIT,
  MANAGED_BY_LABEL,
  type ManifestObject,
  shownSealedSecretSpec,
} from "../../api/index.ts";
import { type KubeObject, kindKeyOf } from "../../lib/kube-object.ts";
import { deepEqual } from "../../lib/store/index.ts";
import { unifiedDiff } from "./line-diff.ts";
import type { ObjectChange, PlanCounts } from "./types.ts";
import { gitView, viewYaml } from "./yaml-view.ts";

const GIT_KINDS = new Set(kinds.filter((k) => k.writtenBy === "git").map((k) => k.kind));
const KIND_ORDER = [...GIT_KINDS];

/** A manifest in the shape the store would hold it (without the source's bookkeeping). */
export function manifestAsObject(manifest: ManifestObject): KubeObject {
  const source = manifest.object as Partial<KubeObject>;
  return {
    apiVersion: String(source.apiVersion ?? ""),
    kind: manifest.kind,
    metadata: {
      name: manifest.name,
      ...(manifest.namespace ? { namespace: manifest.namespace } : {}),
      ...(source.metadata?.labels ? { labels: source.metadata.labels } : {}),
      ...(source.metadata?.annotations ? { annotations: source.metadata.annotations } : {}),
    },
    ...(source.spec === undefined
      ? {}
      : { spec: manifest.kind === "SealedSecret" ? shownSealedSecretSpec(source.spec) : source.spec }),
  };
}

function compareChanges(a: ObjectChange, b: ObjectChange): number {
  const kind = KIND_ORDER.indexOf(a.kind) - KIND_ORDER.indexOf(b.kind);
  if (kind !== 0) return kind;
  if (a.namespace !== b.namespace) return a.namespace < b.namespace ? -1 : 1;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

export function diffObjects(
  desired: readonly ManifestObject[],
  live: readonly KubeObject[],
): { changes: ObjectChange[]; counts: PlanCounts } {
  const counts: PlanCounts = { create: 0, change: 0, delete: 0, unchanged: 0 };
  const changes: ObjectChange[] = [];
  const existing = new Map<string, KubeObject>();
  for (const object of live) {
    if (!GIT_KINDS.has(object.kind)) continue;
    existing.set(kindKeyOf(object), object);
  }
  const seen = new Set<string>();
  for (const manifest of desired) {
    const object = manifestAsObject(manifest);
    const key = kindKeyOf(object);
    seen.add(key);
    const file = `${manifest.document.file}:${manifest.document.start.line}`;
    const after = gitView(object);
    const current = existing.get(key);
    const base = {
      kind: object.kind,
      name: object.metadata.name,
      namespace: object.metadata.namespace ?? "",
      file,
    };
    if (!current) {
      counts.create++;
      changes.push({ ...base, action: "create", diff: unifiedDiff("", viewYaml(after)) });
      continue;
    }
    const liveNode = current.kind === "Node" && current.status !== undefined;
    const specKeys = object.spec && typeof object.spec === "object" ? Object.keys(object.spec) : [];
    const before = gitView(current, { liveNode, specKeys });
    if (deepEqual(before, after)) {
      counts.unchanged++;
      continue;
    }
    counts.change++;
    changes.push({ ...base, action: "change", diff: unifiedDiff(viewYaml(before), viewYaml(after)) });
  }
  for (const [key, current] of existing) {
    if (seen.has(key) || current.metadata.labels?.[MANAGED_BY_LABEL] !== MANAGED_BY_GIT) continue;
    if (current.metadata.deletionTimestamp) continue;
    counts.delete++;
    const liveNode = current.kind === "Node" && current.status !== undefined;
    changes.push({
      action: "delete",
      kind: current.kind,
      name: current.metadata.name,
      namespace: current.metadata.namespace ?? "",
      file: "",
      diff: unifiedDiff(viewYaml(gitView(current, { liveNode })), ""),
    });
  }
  changes.sort(compareChanges);
  return { changes, counts };
}
