import { createServer, type IncomingMessage } from "node:http";
import { type AddressInfo, connect } from "node:net";
import t from "tap";
import { createTunnelDryRunner, type RenderedWorkload } from "../../../operators/feedback/plan/index.ts";

const workload: RenderedWorkload = {
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "train-trainer", namespace: "rlark-work", labels: { "rlinf.io/job": "train" } },
  spec: { replicas: 1 },
};

t.test(
  "the dry-run is a server-side apply with dryRun=All through the agent's kube-api stream",
  async (t) => {
    const seen: { method?: string; url?: string; type?: string; body: unknown }[] = [];
    let answer: { status: number; body: unknown } = { status: 200, body: { kind: "Deployment" } };
    // Stands in for the cluster's API server at the far end of the tunnel.
    const api = createServer((req: IncomingMessage, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        seen.push({
          method: req.method,
          url: req.url,
          type: req.headers["content-type"],
          body: JSON.parse(Buffer.concat(chunks).toString()),
        });
        res.writeHead(answer.status, { "content-type": "application/json" });
        res.end(JSON.stringify(answer.body));
      });
    });
    await new Promise<void>((resolve) => api.listen(0, "127.0.0.1", resolve));
    t.teardown(() => new Promise<void>((resolve) => api.close(() => resolve())));
    const port = (api.address() as AddressInfo).port;
    const opened: string[] = [];
    const runner = createTunnelDryRunner({
      openStream: async (cluster) => {
        opened.push(cluster);
        if (cluster === "away") throw new Error("cluster away has no agent connected for streams");
        return connect({ host: "127.0.0.1", port });
      },
    });

    t.same(await runner.dryRun("beijing", workload), { state: "passed" });
    t.equal(seen[0]?.method, "PATCH");
    t.equal(
      seen[0]?.url,
      "/apis/apps/v1/namespaces/rlark-work/deployments/train-trainer?dryRun=All&fieldManager=rlark-agent&force=true",
    );
    t.equal(seen[0]?.type, "application/apply-patch+yaml");
    t.same(seen[0]?.body, workload);

    answer = {
      status: 422,
      body: {
        kind: "Status",
        status: "Failure",
        message: 'Deployment.apps "train-trainer" is invalid: spec.template',
      },
    };
    t.same(await runner.dryRun("beijing", workload), {
      state: "failed",
      message: 'Deployment.apps "train-trainer" is invalid: spec.template',
    });

    const away = await runner.dryRun("away", workload);
    t.equal(away.state, "offline");
    t.match(away, { message: /^cluster offline, not dry-run/ });
    t.same(opened, ["beijing", "beijing", "away"]);
  },
);
