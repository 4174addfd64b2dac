// The nodeserver's GET /stats over TCP (`rlark nodeserver --stats-listen HOST:PORT`), for the
// kubernetes agent, which cannot reach the unix socket on another node: it polls every node's
// InternalIP (the DaemonSet runs on the host network) with the bearer token it put into the peers
// state, which only the nodeservers (the Secret's readers) learn. GET /group serves the node's
// AgentGroup view the same way (404 while no member runs), GET /pingmesh its probes of the
// group's members (404 without), GET /cluster_probes its probes of
// other clusters. Nothing else is served; nothing at all
// before the token is known (503); a wrong or missing token gets 401.
import { timingSafeEqual } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "../lib/logger.ts";

export interface StatsListenerOptions {
  /** `host:port`; port 0 picks a free one. */
  listen: string;
  /** The figures (the nodeserver's stats()). */
  stats(): unknown;
  /** The AgentGroup member's view (group-member.ts), undefined while none runs. */
  group?(): unknown;
  /** The node's PingMesh of its group's members (GET /pingmesh; group-pingmesh.ts). */
  pingMesh?(): unknown;
  /** The node's probes of other clusters (GET /cluster_probes). */
  clusterProbes?(): unknown;
  /** The token the peers state carries now; undefined until one arrived. */
  token(): string | undefined;
  logger: Logger;
}

function sameToken(given: string, wanted: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(wanted);
  return a.length === b.length && timingSafeEqual(a, b);
}

export async function listenStats(
  options: StatsListenerOptions,
): Promise<{ address: string; close(): Promise<void> }> {
  const at = options.listen.lastIndexOf(":");
  const host = options.listen.slice(0, at);
  const port = Number(options.listen.slice(at + 1));
  if (at <= 0 || !Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`--stats-listen ${JSON.stringify(options.listen)} is not host:port`);
  const server = http.createServer((req, res) => {
    const answer = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" });
      res.end(JSON.stringify(body));
    };
    // no body is read: a request that sends one is answered and closed
    req.resume();
    const wanted = options.token();
    if (!wanted) return answer(503, { error: "no stats token yet: the peers state has none" });
    const auth = req.headers.authorization ?? "";
    if (!auth.startsWith("Bearer ") || !sameToken(auth.slice(7), wanted)) {
      options.logger.warn("stats request refused", { from: req.socket.remoteAddress });
      return answer(401, { error: "a valid bearer token is required" });
    }
    if (req.method === "GET" && req.url === "/group") {
      const view = options.group?.();
      return view === undefined
        ? answer(404, { error: "no AgentGroup member runs on this node" })
        : answer(200, view);
    }
    if (req.method === "GET" && req.url === "/pingmesh") {
      const figures = options.pingMesh?.();
      return figures === undefined
        ? answer(404, { error: "this node runs no PingMesh of its group" })
        : answer(200, figures);
    }
    if (req.method === "GET" && req.url === "/cluster_probes" && options.clusterProbes)
      return answer(200, options.clusterProbes());
    if (req.method !== "GET" || req.url !== "/stats")
      return answer(404, { error: "only GET /stats, GET /group, GET /pingmesh and GET /cluster_probes" });
    answer(200, options.stats());
  });
  server.headersTimeout = 5_000;
  server.requestTimeout = 10_000;
  server.keepAliveTimeout = 5_000;
  server.maxHeadersCount = 32;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    address: `${host}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
