// A kubernetes pod's log through the apiserver's pods/log subresource, streamed: the response
// body is handed on as it is (read only as fast as the hub reads it), and destroying it ends
// the request. Plain HTTPS rather than client-node's Log class, which drops the apiserver's
// reason on refusals other than 500 and never ends its output when the response fails midway.
import http from "node:http";
import https from "node:https";
import { Readable } from "node:stream";
import type { KubeConfig } from "@kubernetes/client-node";
import type { LogStreamOptions } from "../../types.ts";

/** How much of a refusal's body (a Status JSON) is read for its message. */
const MAX_REFUSAL_BODY = 4096;
/** How long the apiserver may take to answer before the request is given up. */
const HEADERS_TIMEOUT_MS = 30_000;

export async function podLogStream(
  kubeConfig: KubeConfig,
  pod: { namespace: string; name: string; container: string },
  options: LogStreamOptions,
): Promise<Readable> {
  // the apiserver refuses limitBytes=0: nothing asked, nothing to send
  if (options.limitBytes === 0) return Readable.from([]);
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error("the kubeconfig has no current cluster");
  const what = `log of pod ${pod.namespace}/${pod.name}`;
  const url = new URL(
    `${cluster.server.replace(/\/$/, "")}/api/v1/namespaces/${encodeURIComponent(pod.namespace)}/pods/${encodeURIComponent(pod.name)}/log`,
  );
  const query = url.searchParams;
  query.set("container", pod.container);
  if (options.follow) query.set("follow", "true");
  if (options.tail !== undefined) query.set("tailLines", String(options.tail));
  if (options.limitBytes !== undefined) query.set("limitBytes", String(options.limitBytes));
  // and sinceSeconds=0, which can only mean from now on
  if (options.sinceSeconds !== undefined)
    query.set("sinceSeconds", String(Math.max(1, options.sinceSeconds)));
  if (options.previous) query.set("previous", "true");
  if (options.timestamps) query.set("timestamps", "true");
  const request: https.RequestOptions = {
    method: "GET",
    hostname: url.hostname,
    port: url.port,
    path: url.pathname + url.search,
    // a follow holds its connection as long as the reader wants: one of its own
    agent: false,
  };
  await kubeConfig.applyToHTTPSOptions(request);
  const transport = url.protocol === "https:" ? https : http;
  return new Promise((resolve, reject) => {
    const req = transport.request(request, (res) => {
      // a follow may then be quiet for as long as the pod is
      req.setTimeout(0);
      if (res.statusCode === 200) return resolve(res);
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        if (body.length < MAX_REFUSAL_BODY) body += chunk.slice(0, MAX_REFUSAL_BODY - body.length);
      });
      res.on("end", () => {
        let message = body.trim();
        try {
          const status = JSON.parse(body) as { message?: unknown };
          if (typeof status.message === "string") message = status.message;
        } catch {
          // not a Status: the text itself
        }
        reject(new Error(`${what}: the kube-apiserver answered ${res.statusCode}: ${message}`));
      });
    });
    req.setTimeout(HEADERS_TIMEOUT_MS, () => req.destroy(new Error("no answer from the kube-apiserver")));
    req.on("error", (error) => reject(new Error(`${what}: ${error.message}`)));
    req.end();
  });
}
