// One process of simulated agents for the agents-at-scale benchmark: each agent enrolls through
// the hub's real enrollment subsystem, then holds a real tunnel (createTunnelClient: ssh2, its
// jittered reconnect backoff, heartbeats) and sends its status report every 10 s. What it sees
// (connects, drops, probe Tasks arriving in a delta) goes back to the benchmark over IPC.
import {
  backoffDelay,
  createTunnelClient,
  enrollAgent,
  type TunnelClient,
} from "../../../operators/lib/tunnel/index.ts";
import type { WorkerReply, WorkerRequest } from "./hub-messages.ts";
import { clusterReport, wallNow } from "./payloads.ts";

const REPORT_EVERY_MS = 10_000;
const reply = (message: WorkerReply) => process.send?.(message);
const clients: TunnelClient[] = [];
const timers: NodeJS.Timeout[] = [];
let reports = 0;
/** Probes already reported: a snapshot after a reconnect holds them again. */
const probes = new Set<string>();

async function start(request: Extract<WorkerRequest, { type: "start" }>): Promise<void> {
  const started = performance.now();
  const credentials = [];
  const failures = new Map<string, number>();
  for (const { token } of request.agents) {
    // As a real agent's restart would: try again after a jittered backoff (a hub at MaxStartups
    // drops handshakes at random), and never twice with the same key pair.
    for (let attempt = 0; ; attempt++) {
      try {
        credentials.push(
          await enrollAgent({ hub: request.hub, token, caHash: request.caHash, timeoutMs: 60_000 }),
        );
        break;
      } catch (error) {
        const message = (error as Error).message;
        failures.set(message, (failures.get(message) ?? 0) + 1);
        if (attempt >= 20) throw error;
        await new Promise((r) => setTimeout(r, backoffDelay(attempt, { initialMs: 200, maxMs: 5000 })));
      }
    }
  }
  reply({
    type: "enrolled",
    count: credentials.length,
    ms: performance.now() - started,
    failures: Object.fromEntries(failures),
  });
  for (const creds of credentials) {
    const cluster = creds.cluster;
    const report = clusterReport(cluster);
    const client = createTunnelClient({
      hub: request.hub,
      credentials: creds,
      hello: { agentVersion: "bench", bootId: `bench-${cluster}`, runtime: "kubernetes", capabilities: [] },
      // The certificates outlive the run: renewal is not what this measures.
      autoRenew: false,
    });
    client.on("connected", () => reply({ type: "connected", cluster, at: wallNow() }));
    client.on("disconnected", () => reply({ type: "disconnected", cluster, at: wallNow() }));
    // A probe written while the agent connects arrives in its snapshot instead of a delta.
    const seen = (objects: Array<{ metadata: { name: string } }>) => {
      const at = wallNow();
      for (const object of objects)
        if (object.metadata.name.startsWith("probe-") && !probes.has(object.metadata.name)) {
          probes.add(object.metadata.name);
          reply({ type: "probe", name: object.metadata.name, at });
        }
    };
    client.on("delta", (delta) => seen(delta.upserts));
    client.on("snapshot", (snapshot) => seen(snapshot.objects));
    client.report(report);
    client.start();
    // Agents of a fleet come up over time, not in one instant (the restart storm below is the
    // instant): a few hundred handshakes at once would only measure MaxStartups twice.
    await new Promise((r) => setTimeout(r, 20));
    clients.push(client);
    // Each agent reports on its own phase of the 10 s period, as agents started at different times do.
    const phase = Math.random() * REPORT_EVERY_MS;
    timers.push(
      setTimeout(() => {
        timers.push(
          setInterval(() => {
            reports++;
            client.report(report);
          }, REPORT_EVERY_MS),
        );
      }, phase),
    );
  }
}

process.on("message", (request: WorkerRequest) => {
  if (request.type === "start")
    start(request).catch((error: Error) => reply({ type: "error", message: error.stack ?? String(error) }));
  else {
    for (const timer of timers) clearTimeout(timer);
    reply({ type: "reports", sent: reports });
    void Promise.all(clients.map((c) => c.stop())).then(() => {
      reply({ type: "stopped" });
      process.disconnect();
    });
  }
});
