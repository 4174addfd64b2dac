// A second agent in a worker thread that sends status reports at a fixed rate, over the SSH
// tunnel or over plain TCP, so the hub side under test receives them while the benchmark's own
// thread only measures round trips.
import { connect } from "node:net";
import { parentPort, workerData } from "node:worker_threads";
import {
  type AgentCredentials,
  type AgentMessage,
  createTunnelClient,
  type HubMessage,
  MessageChannel,
  parseHubMessage,
  type Report,
} from "../../../operators/lib/tunnel/index.ts";
import { statusReport } from "./payloads.ts";

export interface LoadWorkerData {
  mode: "ssh" | "tcp";
  /** host:port */
  address: string;
  /** For ssh. */
  credentials?: AgentCredentials;
  ratePerSecond: number;
}

export type LoadWorkerMessage = { type: "ready" } | { type: "stopped"; sent: number };

const data = workerData as LoadWorkerData;
const port = parentPort;
if (!port) throw new Error("load-worker.ts runs as a worker thread");
const report = statusReport();
const hello = {
  agentVersion: "bench",
  bootId: "load",
  runtime: "kubernetes" as const,
  capabilities: [],
};

let send: (r: Omit<Report, "type">) => void;
let close: () => Promise<void> | void;
if (data.mode === "ssh") {
  if (!data.credentials) throw new Error("ssh mode needs credentials");
  const client = createTunnelClient({
    hub: data.address,
    credentials: data.credentials,
    hello,
    autoRenew: false,
  });
  client.once("connected", () => port.postMessage({ type: "ready" } satisfies LoadWorkerMessage));
  client.start();
  send = (r) => client.report(r);
  close = () => client.stop();
} else {
  const [host, portText] = data.address.split(":") as [string, string];
  const socket = connect({ host, port: Number(portText), noDelay: true });
  const channel = new MessageChannel<HubMessage, AgentMessage>(socket, { parse: parseHubMessage });
  socket.once("connect", () => {
    channel.send({ type: "hello", cluster: "load", ...hello });
    port.postMessage({ type: "ready" } satisfies LoadWorkerMessage);
  });
  // As the tunnel client does: a newer report replaces one still waiting for the socket.
  send = (r) => channel.send({ type: "report", ...r }, (q) => q.type === "report");
  close = () => {
    channel.close();
    socket.destroy();
  };
}

let ticker: NodeJS.Timeout | undefined;
let sent = 0;
port.on("message", async (message: "start" | "stop") => {
  if (message === "start") {
    const started = performance.now();
    // Catch up on every tick: timers are coarse, the rate must hold on average.
    ticker = setInterval(() => {
      const due = Math.floor(((performance.now() - started) * data.ratePerSecond) / 1000);
      for (; sent < due; sent++) send(report);
    }, 5);
  } else {
    clearInterval(ticker);
    await close();
    port.postMessage({ type: "stopped", sent } satisfies LoadWorkerMessage);
    port.close();
  }
});
