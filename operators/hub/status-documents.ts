import { SOURCE_FILE_ANNOTATION } from "../api/index.ts";
import { renderStatusYaml, type StatusDocument, statusDocumentPath } from "../feedback/index.ts";
import type { KubeObject, Store } from "../lib/store/index.ts";

/** The kinds whose status the hub writes back to git (Jobs, Workflows, Domains, Addons, Bundles, Clusters, Nodes). */
export const STATUS_KINDS = ["Job", "Workflow", "Domain", "Addon", "Bundle", "Cluster", "Node"] as const;

/**
 * Heartbeats and gauges: they change every few seconds on an idle hub, so writing them to git
 * would make a commit each time. They stay in the API (`rlark status`, the dashboard); the status
 * branch records what a person would care about (phases, conditions, placements, versions).
 */
const GAUGES: readonly RegExp[] = [
  /^status\.lastHeartbeatTime$/,
  /^status\.lastTestedAt$/,
  /^status\.disk$/,
  // image pre-pull results: a failing pull flips Pulling/Failed at every retry (ADR 0012)
  /^status\.images$/,
  /^status\.conditions\[\d+\]\.(lastHeartbeatTime|lastProbeTime)$/,
];

const isGauge = (_key: string, path: string) => GAUGES.some((gauge) => gauge.test(path));

/** One `status/<kind>/<name>.yaml` per object that has a status: identity, source and status only. */
export function statusDocuments(store: Store): Promise<StatusDocument[]> {
  return createStatusDocuments(store)();
}

/**
 * statusDocuments for a writer that asks on every commit: an object is rendered again only when its
 * resourceVersion moved. Rendering is what 100,000 objects cost (~0.2–0.7 ms each on this machine,
 * tens of seconds for all); listing them is a fraction of that (docs/benchmarks/status-branch.md).
 */
export function createStatusDocuments(store: Store): () => Promise<StatusDocument[]> {
  let rendered = new Map<string, { resourceVersion: string | undefined; document: StatusDocument }>();
  return async () => {
    const next: typeof rendered = new Map();
    const documents: StatusDocument[] = [];
    for (const kind of STATUS_KINDS) {
      for (const object of (await store.list(kind)).items) {
        if (object.status === undefined) continue;
        const key = `${kind}/${object.metadata.namespace ?? ""}/${object.metadata.name}`;
        const { resourceVersion } = object.metadata;
        let entry = rendered.get(key);
        if (!entry || resourceVersion === undefined || entry.resourceVersion !== resourceVersion)
          entry = {
            resourceVersion,
            document: {
              path: statusDocumentPath(kind, object.metadata.name, object.metadata.namespace),
              content: renderStatusYaml(statusView(object), { dropKey: isGauge }),
            },
          };
        next.set(key, entry);
        documents.push(entry.document);
      }
    }
    rendered = next;
    return documents.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  };
}
function statusView(object: KubeObject) {
  const { name, namespace, generation, annotations } = object.metadata;
  return {
    apiVersion: object.apiVersion,
    kind: object.kind,
    metadata: {
      name,
      ...(namespace ? { namespace } : {}),
      ...(generation ? { generation } : {}),
      ...(annotations?.[SOURCE_FILE_ANNOTATION] ? { source: annotations[SOURCE_FILE_ANNOTATION] } : {}),
    },
    status: object.status,
  };
}
