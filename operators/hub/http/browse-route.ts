// GET /api/v1/clusters/{cluster}/browse/{resource}?namespace=&limit=&continue=: read-only
// browsing of a registered cluster, answered by its agent over the tunnel (lib/tunnel/browse.ts).
// Every authenticated principal may browse, viewers included: what comes back is inventory
// (names, images, env as written, ConfigMap data), never a Secret value (docs/clusters.md).
import type { ServerResponse } from "node:http";
import { sendJson, sendStatus } from "../../lib/http/index.ts";
import type { Store } from "../../lib/store/index.ts";
import {
  BROWSE_PURPOSE,
  type BrowseRequest,
  BrowseRequestError,
  MAX_BROWSE_ANSWER_BYTES,
  parseBrowseAnswer,
  parseBrowseRequest,
  type TunnelServer,
} from "../../lib/tunnel/index.ts";

export interface BrowseRouteOptions {
  store: Store;
  tunnel: Pick<TunnelServer, "request">;
}

/** The request the query asks for, checked as the agent will check it. */
function requestFrom(resource: string, query: URLSearchParams): BrowseRequest {
  const limit = query.get("limit");
  const namespace = query.get("namespace");
  const next = query.get("continue");
  return parseBrowseRequest({
    resource,
    ...(namespace !== null ? { namespace } : {}),
    ...(limit !== null ? { limit: /^\d{1,4}$/.test(limit) ? Number(limit) : limit } : {}),
    ...(next !== null ? { continue: next } : {}),
  });
}

export async function serveBrowse(
  options: BrowseRouteOptions,
  cluster: string,
  resource: string,
  query: URLSearchParams,
  res: ServerResponse,
): Promise<void> {
  let request: BrowseRequest;
  try {
    request = requestFrom(resource, query);
  } catch (error) {
    if (error instanceof BrowseRequestError) return sendStatus(res, 400, "BadRequest", error.message);
    throw error;
  }
  if (!(await options.store.get("Cluster", undefined, cluster)))
    return sendStatus(res, 404, "NotFound", `no Cluster "${cluster}"`);
  let answer: unknown;
  try {
    answer = await options.tunnel.request(cluster, BROWSE_PURPOSE, request, {
      maxResponseBytes: MAX_BROWSE_ANSWER_BYTES,
      timeoutMs: 20_000,
    });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const refused = / could not open browse: /.test(message);
    return sendStatus(
      res,
      refused ? 501 : 503,
      refused ? "NotImplemented" : "ServiceUnavailable",
      refused ? `the agent of ${cluster} has no cluster API to browse (runtime process)` : message,
    );
  }
  try {
    return sendJson(res, 200, parseBrowseAnswer(answer, request));
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return sendStatus(
      res,
      502,
      "BadGateway",
      /longer than/.test(message) ? `${message}: ask for fewer items (limit)` : message,
    );
  }
}
