// What an API server has counted (its /metrics, read as the fleet's admin): lets a test wait for
// a number of polling rounds instead of for a stretch of time.
import { get, type RequestOptions } from "node:https";
import type { KubeConfig } from "@kubernetes/client-node";

/** Node proxy requests the API server has served so far (its apiserver_request_total counter). */
export async function nodeProxyRequests(kc: KubeConfig): Promise<number> {
  const options: RequestOptions = {};
  await kc.applyToHTTPSOptions(options);
  const server = new URL(kc.getCurrentCluster()?.server ?? "");
  const text = await new Promise<string>((resolve, reject) => {
    get({ ...options, hostname: server.hostname, port: server.port, path: "/metrics" }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        body += chunk;
        if (body.length > 64 << 20) res.destroy(new Error("/metrics is larger than 64 MiB"));
      });
      res.on("end", () => resolve(body));
      res.on("error", reject);
    }).on("error", reject);
  });
  let n = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith("apiserver_request_total{")) continue;
    if (line.includes('resource="nodes"') && line.includes('subresource="proxy"'))
      n += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return n;
}
