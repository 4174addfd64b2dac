// The hub of the agents-at-scale benchmark, in a process of its own so its CPU and memory are its
// own and it can be stopped and started again on the same ports and data directory (the reconnect
// storm). Driven by the benchmark over the IPC channel (hub-messages.ts). Not a test: no asserts.
import { startHub } from "../../../operators/hub/index.ts";
import { silentLogger } from "../../../operators/lib/logger.ts";
import type { BatchOp } from "../../../operators/lib/store/index.ts";
import type { HubReply, HubRequest } from "./hub-messages.ts";
import { probeTask, wallNow } from "./payloads.ts";

const [dataDir, httpPort, sshPort] = process.argv.slice(2);
if (!dataDir || !httpPort || !sshPort || !process.send) {
  throw new Error("hub-process.ts DATA_DIR HTTP_PORT SSH_PORT, forked with an IPC channel");
}
const reply = (message: HubReply) => process.send?.(message);

const hub = await startHub({
  dataDir,
  http: `127.0.0.1:${httpPort}`,
  ssh: `127.0.0.1:${sshPort}`,
  logger: silentLogger,
  // Tasks are written straight into agent namespaces: no Job controller is needed to place them.
  controllers: () => [],
  // Every simulated agent dials from 127.0.0.1, where a real fleet dials from 1,000 addresses: the
  // per-address cap on handshakes in flight (3) would stand for one NAT gateway, not a fleet.
  // MaxStartups (the cap over all addresses) keeps its default: the storm meets it.
  sshLimits: { maxUnauthenticatedPerAddress: 100_000 },
});
const cpuAtStart = process.cpuUsage();

process.on("message", async (request: HubRequest) => {
  try {
    switch (request.type) {
      case "setup": {
        const ops: BatchOp[] = [];
        for (const cluster of request.clusters) {
          if (await hub.store.get("Cluster", undefined, cluster)) continue;
          ops.push({
            op: "create",
            object: {
              apiVersion: "rlinf.io/v1alpha1",
              kind: "Cluster",
              metadata: { name: cluster },
              spec: { runtime: "kubernetes" },
            },
          });
        }
        for (let i = 0; i < ops.length; i += 500) await hub.store.applyBatch(ops.slice(i, i + 500));
        // The real enrollment API, once per agent: a bootstrap token bound to its cluster.
        const tokens: string[] = [];
        for (const cluster of request.clusters)
          tokens.push((await hub.pki.enrollment.createToken({ cluster, ttlMs: 3_600_000 })).token);
        return reply({ type: "setup", tokens, caHash: hub.caFingerprint, ssh: hub.sshAddress });
      }
      case "probe": {
        const sentAt = wallNow();
        await hub.store.create(probeTask(request.cluster, request.name));
        return reply({ type: "probe", name: request.name, sentAt });
      }
      case "stats": {
        const cpu = process.cpuUsage(cpuAtStart);
        return reply({
          type: "stats",
          cpuMicros: cpu.user + cpu.system,
          rssBytes: process.memoryUsage().rss,
          heapBytes: process.memoryUsage().heapUsed,
          connected: hub.tunnel.clusters.length,
          at: wallNow(),
        });
      }
      case "stop": {
        await hub.stop();
        reply({ type: "stopped" });
        process.disconnect();
        return;
      }
    }
  } catch (error) {
    reply({ type: "error", message: (error as Error).stack ?? String(error) });
  }
});
reply({ type: "ready", at: wallNow() });
