// GET /api/v1/storage/storageclass?clusters=<id>[,<id>…] (seed 000 §14): the StorageClasses a
// Task's volumeClaimTemplate may name, as each cluster's agent last reported them (Cluster
// status.storageClasses; agentless clusters report through their in-hub agent the same way).
// Without `clusters`, every cluster's. A cluster that has not reported yet lists none.
import type { ServerResponse } from "node:http";
import type { Cluster, ClusterStorageClass } from "../../api/index.ts";
import { type Route, route, sendJson, sendStatus } from "../../lib/http/index.ts";
import type { Store } from "../../lib/store/index.ts";

const STORAGE_CLASS_PATH = "/api/v1/storage/storageclass";

/** One StorageClass of one cluster. */
type ClusterStorageClassItem = ClusterStorageClass & { cluster: string };

/** The clusters asked for: `clusters=a,b` and `clusters=a&clusters=b` alike; none asks for all. */
function askedClusters(query: URLSearchParams): string[] | undefined {
  const names = query
    .getAll("clusters")
    .flatMap((value) => value.split(","))
    .map((name) => name.trim())
    .filter(Boolean);
  return names.length > 0 ? [...new Set(names)] : undefined;
}

async function serveStorageClasses(store: Store, query: URLSearchParams, res: ServerResponse) {
  const asked = askedClusters(query);
  const clusters = (await store.list("Cluster", {})).items as Cluster[];
  const byName = new Map(clusters.map((c) => [c.metadata.name, c]));
  const missing = (asked ?? []).filter((name) => !byName.has(name));
  if (missing.length > 0)
    return sendStatus(res, 404, "NotFound", `no Cluster ${missing.map((n) => `"${n}"`).join(", ")}`);
  const names = asked ?? [...byName.keys()].sort();
  const items: ClusterStorageClassItem[] = names.flatMap((cluster) =>
    (byName.get(cluster)?.status?.storageClasses ?? []).map((c) => ({ cluster, ...c })),
  );
  return sendJson(res, 200, { kind: "StorageClassList", items });
}

export function storageClassRoute(store: Store): Route {
  return route({
    method: ["GET", "HEAD"],
    methodRefused: "the API is read-only: change objects through git",
    path: STORAGE_CLASS_PATH,
    role: "viewer",
    handle: ({ res, url }) => serveStorageClasses(store, url.searchParams, res),
  });
}
