// Tunnel round trip: the hub sends a one-Task delta, the agent acknowledges its generation, the
// hub sees the ack. Measured over the ssh2 tunnel with real PKI and, as a baseline in the same
// run, over a plain TCP socket with the same newline-delimited JSON channel and parsers, each
// idle and while 200 status reports per second flow from a second agent or over the measured
// connection itself.
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Socket, connect as tcpConnect } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { Worker } from "node:worker_threads";
import {
  generateKeyPair,
  openCertificateAuthority,
  openHostIdentity,
} from "../../../operators/lib/pki/index.ts";
import {
  type AgentCredentials,
  type AgentMessage,
  type AgentSession,
  createTunnelClient,
  createTunnelServer,
  type Delta,
  type HubMessage,
  MessageChannel,
  parseAgentMessage,
  parseHubMessage,
  type Report,
} from "../../../operators/lib/tunnel/index.ts";
import type { LoadWorkerData, LoadWorkerMessage } from "./load-worker.ts";
import { statusReport, taskDelta } from "./payloads.ts";

export interface TunnelOptions {
  samples: number;
  ratePerSecond: number;
}

export interface LatencyRow {
  transport: "ssh" | "tcp";
  condition: string;
  samplesMs: number[];
  /** Reports the hub parsed per second while the samples were taken. */
  reportsPerSecond?: number;
}

/** One transport as seen by the benchmark: the hub's end and the measured agent's end. */
interface Transport {
  address: string;
  /** Hub → measured agent. */
  sendDelta(delta: Delta): void;
  /** Calls back with each acknowledged generation. */
  onAck: (generation: number) => void;
  /** Reports the hub received from any agent so far. */
  reports: number;
  /** The measured agent sends a report (the same-connection load). */
  agentReport(report: Omit<Report, "type">): void;
  /** Data for a second, load-only agent in a worker. */
  loadWorker: Omit<LoadWorkerData, "ratePerSecond">;
  close(): Promise<void>;
}

const HELLO = { agentVersion: "bench", bootId: "probe", runtime: "kubernetes" as const, capabilities: [] };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function waitUntil(what: string, check: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const poll = () => {
      if (check()) return resolve();
      if (Date.now() > deadline) return reject(new Error(`timed out waiting for ${what}`));
      setTimeout(poll, 5);
    };
    poll();
  });
}

async function sshTransport(dir: string): Promise<Transport> {
  const ca = openCertificateAuthority({ dataDir: dir });
  const host = openHostIdentity({ dataDir: dir, ca });
  const credentialsFor = (cluster: string): AgentCredentials => {
    const keys = generateKeyPair();
    const cert = ca.issue({ role: "agent", name: cluster, publicKey: keys.publicKeyPem, ttlMs: 3_600_000 });
    return { cluster, privateKeyPem: keys.privateKeyPem, certPem: cert.certPem, caCertPem: ca.certPem };
  };
  const sessions = new Map<string, AgentSession>();
  const transport: Transport = {
    address: "",
    sendDelta: (delta) => sessions.get("probe")?.send(delta),
    onAck: () => undefined,
    reports: 0,
    agentReport: (report) => client.report(report),
    loadWorker: { mode: "ssh", address: "", credentials: credentialsFor("load") },
    async close() {
      await client.stop();
      await server.close();
    },
  };
  const server = createTunnelServer({
    hostKey: host.privateKeyPem,
    hostCert: host.certPem,
    ca,
    onAgentSession: (session) => {
      sessions.set(session.cluster, session);
      session.on("message", (message) => {
        if (message.type === "ack") transport.onAck(message.generation);
        else if (message.type === "report") transport.reports++;
      });
    },
  });
  const { port } = await server.listen(0, "127.0.0.1");
  transport.address = `127.0.0.1:${port}`;
  transport.loadWorker.address = transport.address;
  const client = createTunnelClient({
    hub: transport.address,
    credentials: credentialsFor("probe"),
    hello: HELLO,
    onDesired: () => undefined,
    autoRenew: false,
  });
  client.start();
  await waitUntil("the probe agent's session", () => sessions.has("probe"));
  return transport;
}

async function tcpTransport(): Promise<Transport> {
  const toProbe: { channel?: MessageChannel<AgentMessage, HubMessage> } = {};
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    socket.setNoDelay(true);
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    const channel = new MessageChannel<AgentMessage, HubMessage>(socket, { parse: parseAgentMessage });
    channel.on("message", (message) => {
      if (message.type === "hello" && message.cluster === "probe") toProbe.channel = channel;
      else if (message.type === "ack") transport.onAck(message.generation);
      else if (message.type === "report") transport.reports++;
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("no TCP address");
  const agentSocket = tcpConnect({ host: "127.0.0.1", port: address.port, noDelay: true });
  const agent = new MessageChannel<HubMessage, AgentMessage>(agentSocket, { parse: parseHubMessage });
  agent.on("message", (message) => {
    // As the tunnel client does: acknowledge once the (here instant) runtime has applied it.
    if (message.type === "delta")
      void Promise.resolve().then(() => agent.send({ type: "ack", generation: message.generation }));
  });
  agentSocket.once("connect", () => agent.send({ type: "hello", cluster: "probe", ...HELLO }));
  const transport: Transport = {
    address: `127.0.0.1:${address.port}`,
    sendDelta: (delta) => toProbe.channel?.send(delta),
    onAck: () => undefined,
    reports: 0,
    agentReport: (report) => agent.send({ type: "report", ...report }, (q) => q.type === "report"),
    loadWorker: { mode: "tcp", address: `127.0.0.1:${address.port}` },
    async close() {
      agentSocket.destroy();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  await waitUntil("the probe agent's hello", () => toProbe.channel !== undefined);
  return transport;
}

let generation = 0;

async function roundTrips(transport: Transport, samples: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const delta = taskDelta(++generation);
    const started = performance.now();
    await new Promise<void>((resolve, reject) => {
      const timeout = setTimeout(
        () => reject(new Error(`no ack for generation ${delta.generation}`)),
        10_000,
      );
      transport.onAck = (acked) => {
        if (acked !== delta.generation) return;
        clearTimeout(timeout);
        resolve();
      };
      transport.sendDelta(delta);
    });
    times.push(performance.now() - started);
    // Irregular spacing, so samples do not lock onto the load's timer.
    await sleep(Math.random() * 8);
  }
  return times;
}

async function underLoad(
  transport: Transport,
  options: TunnelOptions,
  start: () => Promise<() => Promise<void>>,
): Promise<{ samplesMs: number[]; reportsPerSecond: number }> {
  const stop = await start();
  await sleep(500);
  const before = transport.reports;
  const from = performance.now();
  const samplesMs = await roundTrips(transport, options.samples);
  const reportsPerSecond = ((transport.reports - before) * 1000) / (performance.now() - from);
  await stop();
  return { samplesMs, reportsPerSecond };
}

function secondAgent(transport: Transport, ratePerSecond: number) {
  return async () => {
    const data: LoadWorkerData = { ...transport.loadWorker, ratePerSecond };
    const worker = new Worker(new URL("./load-worker.ts", import.meta.url), { workerData: data });
    const next = () =>
      new Promise<LoadWorkerMessage>((resolve, reject) => {
        worker.once("message", resolve);
        worker.once("error", reject);
      });
    await next();
    worker.postMessage("start");
    return async () => {
      const stopped = next();
      worker.postMessage("stop");
      await stopped;
      await worker.terminate();
    };
  };
}

function sameConnection(transport: Transport, ratePerSecond: number) {
  return async () => {
    const report = statusReport();
    const started = performance.now();
    let sent = 0;
    const ticker = setInterval(() => {
      const due = Math.floor(((performance.now() - started) * ratePerSecond) / 1000);
      for (; sent < due; sent++) transport.agentReport(report);
    }, 5);
    return async () => clearInterval(ticker);
  };
}

export async function runTunnelBench(options: TunnelOptions): Promise<LatencyRow[]> {
  const rows: LatencyRow[] = [];
  const dir = await mkdtemp(path.join(tmpdir(), "rlark-bench-tunnel-"));
  try {
    for (const kind of ["ssh", "tcp"] as const) {
      const transport = kind === "ssh" ? await sshTransport(dir) : await tcpTransport();
      try {
        await roundTrips(transport, 50); // warm-up: JIT, SSH window, TCP slow start
        rows.push({
          transport: kind,
          condition: "idle",
          samplesMs: await roundTrips(transport, options.samples),
        });
        const rate = options.ratePerSecond;
        rows.push({
          transport: kind,
          condition: `${rate} reports/s from a 2nd agent`,
          ...(await underLoad(transport, options, secondAgent(transport, rate))),
        });
        rows.push({
          transport: kind,
          condition: `${rate} reports/s on the same link`,
          ...(await underLoad(transport, options, sameConnection(transport, rate))),
        });
      } finally {
        await transport.close();
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return rows;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

/** The report's size on the wire, one JSON line. */
export function reportBytes(): number {
  return Buffer.byteLength(`${JSON.stringify({ type: "report", ...statusReport() })}\n`);
}
