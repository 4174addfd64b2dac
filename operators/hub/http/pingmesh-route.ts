// GET /api/v1/pingmesh: the RTT matrix between clusters; GET /api/v1/pingmesh/<cluster>
// [?nodes=a,b,c]: that cluster's node matrix with its suspects and, for the nodes named, whether
// they are fit to be one job (pingmesh-matrix.ts). Read from the Clusters' status.pingMesh, as
// their agents last reported it; viewers and up.
import type { Cluster } from "../../api/index.ts";
import { type Route, route, sendJson, sendStatus } from "../../lib/http/index.ts";
import type { Store } from "../../lib/store/index.ts";
import { clusterMatrix, nodeMatrix } from "./pingmesh-matrix.ts";

const READ = {
  method: ["GET", "HEAD"],
  methodRefused: "the API is read-only: change objects through git",
} as const;
/** Nodes a fit question may name at most (its pairs grow with the square). */
const MAX_FIT_NODES = 256;

export function pingMeshRoutes(store: Store): Route[] {
  return [
    route({
      ...READ,
      path: "/api/v1/pingmesh",
      role: "viewer",
      async handle({ res }) {
        sendJson(res, 200, clusterMatrix((await store.list("Cluster", {})).items as Cluster[]));
      },
    }),
    route({
      ...READ,
      path: "/api/v1/pingmesh/:cluster",
      role: "viewer",
      async handle({ res, url }, { cluster }) {
        const name = decodeURIComponent(cluster);
        const object = (await store.get("Cluster", undefined, name)) as Cluster | undefined;
        if (!object) return sendStatus(res, 404, "NotFound", `no Cluster ${JSON.stringify(name)}`);
        const wanted = [
          ...new Set(
            url.searchParams
              .getAll("nodes")
              .flatMap((v) => v.split(","))
              .map((n) => n.trim())
              .filter(Boolean),
          ),
        ];
        if (wanted.length > MAX_FIT_NODES)
          return sendStatus(
            res,
            400,
            "BadRequest",
            `nodes names ${wanted.length} nodes; at most ${MAX_FIT_NODES}`,
          );
        sendJson(res, 200, nodeMatrix(object, wanted));
      },
    }),
  ];
}
