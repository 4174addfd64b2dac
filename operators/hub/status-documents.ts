import { renderStatusYaml, type StatusDocument, statusDocumentPath } from "../feedback/index.ts";
import type { KubeObject, Store } from "../lib/store/index.ts";

/** The kinds whose status the hub writes back to git (issue: Jobs, Workflows, Domains, Addons, Clusters, Nodes). */
export const STATUS_KINDS = ["Job", "Workflow", "Domain", "Addon", "Cluster", "Node"] as const;

/** One `status/<kind>/<name>.yaml` per object that has a status: identity, source and status only. */
export async function statusDocuments(store: Store): Promise<StatusDocument[]> {
  const documents: StatusDocument[] = [];
  for (const kind of STATUS_KINDS) {
    for (const object of (await store.list(kind)).items) {
      if (object.status === undefined) continue;
      documents.push({
        path: statusDocumentPath(kind, object.metadata.name, object.metadata.namespace),
        content: renderStatusYaml(statusView(object)),
      });
    }
  }
  return documents.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
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
      ...(annotations?.["rlark.io/source-file"] ? { source: annotations["rlark.io/source-file"] } : {}),
    },
    status: object.status,
  };
}
