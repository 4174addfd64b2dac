// `rlark agent --pingmesh FILE`: this machine's PingMesh from a static config (docs/pingmesh.md):
// a port peers' probes connect to (accepted and closed, nothing read), the peers to probe with
// their topology, and this node's own topology on top of what its labels and hostname say. Its
// figures go into every report as Cluster status.pingMesh.
//
//   { "listen": "0.0.0.0:5702", "topology": { "rack": "r4" }, "intervalMs": 10000, "budget": 16,
//     "peers": [{ "name": "gpu-2", "host": "10.1.0.12", "port": 5702, "topology": { "rack": "r5" } }] }

import { readFile } from "node:fs/promises";
import net from "node:net";
import { hostname } from "node:os";
import type { PingMeshStatus } from "../api/index.ts";
import type { Clock } from "../lib/clock.ts";
import type { Logger } from "../lib/logger.ts";
import { rlarkNetPath } from "../network/index.ts";
import {
  mergeTopology,
  meshStatus,
  type Peer,
  PingMesh,
  startIcmpProber,
  tcpProbe,
  topologyFromConfig,
  topologyFromLabels,
} from "../network/pingmesh/index.ts";

/** Probe connections held open at once at most: each is closed as soon as it is accepted. */
const MAX_PROBE_CONNECTIONS = 256;
const MAX_PEERS = 4096;

export interface AgentPingMesh {
  /** host:port the probe port listens on. */
  address?: string;
  status(): PingMeshStatus | undefined;
  stop(): Promise<void>;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

function positive(config: Record<string, unknown>, key: string, where: string): number | undefined {
  const value = config[key];
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1)
    throw new Error(`${where}: ${key} must be a positive integer`);
  return value;
}

function hostPort(text: unknown, where: string): { host: string; port: number } {
  const at = typeof text === "string" ? text.lastIndexOf(":") : -1;
  const port = Number(typeof text === "string" ? text.slice(at + 1) : Number.NaN);
  if (typeof text !== "string" || at <= 0 || !Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`${where}: listen must be host:port, got ${JSON.stringify(text)}`);
  return { host: text.slice(0, at), port };
}

function parsePeers(value: unknown, where: string): Peer[] {
  if (!Array.isArray(value) || value.length > MAX_PEERS)
    throw new Error(`${where}: peers must be a list of at most ${MAX_PEERS}`);
  const names = new Set<string>();
  return value.map((peer, i) => {
    const at = `${where}: peers[${i}]`;
    if (!isObject(peer)) throw new Error(`${at} must be an object`);
    const { name, host, port } = peer;
    if (typeof name !== "string" || !name || name.length > 253)
      throw new Error(`${at}: name must be a node name`);
    if (names.has(name)) throw new Error(`${at}: name ${name} is there twice`);
    names.add(name);
    if (typeof host !== "string" || !host) throw new Error(`${at}: host must be an address`);
    if (typeof port !== "number" || !Number.isInteger(port) || port < 1 || port > 65535)
      throw new Error(`${at}: port must be 1..65535`);
    return {
      name,
      host,
      port,
      topology: peer.topology === undefined ? {} : topologyFromConfig(peer.topology, `${at}`),
    };
  });
}

export async function startAgentPingMesh(options: {
  file: string;
  nodeName: string;
  nodeLabels: Readonly<Record<string, string>>;
  clock: Clock;
  logger: Logger;
}): Promise<AgentPingMesh> {
  const where = options.file;
  let config: unknown;
  try {
    config = JSON.parse(await readFile(options.file, "utf8"));
  } catch (error) {
    throw new Error(`${where}: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (!isObject(config)) throw new Error(`${where}: the PingMesh config must be a JSON object`);
  const known = ["listen", "topology", "peers", "intervalMs", "budget", "windowSize", "timeoutMs", "icmp"];
  for (const key of Object.keys(config))
    if (!known.includes(key))
      throw new Error(`${where}: unknown field ${JSON.stringify(key)} (one of ${known.join(", ")})`);
  const self = {
    name: options.nodeName,
    topology: mergeTopology(
      config.topology === undefined ? {} : topologyFromConfig(config.topology, where),
      topologyFromLabels(options.nodeLabels),
      { hostname: hostname() },
    ),
  };
  const peers = parsePeers(config.peers ?? [], where);
  const timeoutMs = positive(config, "timeoutMs", where) ?? 1000;
  const intervalMs = positive(config, "intervalMs", where);
  const budget = positive(config, "budget", where);
  const windowSize = positive(config, "windowSize", where);
  if (config.icmp !== undefined && typeof config.icmp !== "boolean")
    throw new Error(`${where}: icmp must be true or false`);
  let server: net.Server | undefined;
  let address: string | undefined;
  if (config.listen !== undefined) {
    const { host, port } = hostPort(config.listen, where);
    const listening = net.createServer((socket) => socket.destroy());
    listening.maxConnections = MAX_PROBE_CONNECTIONS;
    await new Promise<void>((resolve, reject) => {
      listening.once("error", reject);
      listening.listen(port, host, () => resolve());
    });
    server = listening;
    address = `${host}:${(listening.address() as net.AddressInfo).port}`;
  }
  // ICMP echoes beside the TCP probes, sent by rlark-net (CAP_NET_RAW): "TCP fails, ICMP works"
  const icmp = config.icmp === true ? startIcmpProber(rlarkNetPath(), timeoutMs) : undefined;
  const mesh = new PingMesh({
    self,
    clock: options.clock,
    probe: tcpProbe(options.clock, timeoutMs),
    ...(icmp ? { icmpProbe: (host: string) => icmp.probe(host) } : {}),
    ...(intervalMs ? { intervalMs } : {}),
    ...(budget ? { budget } : {}),
    ...(windowSize ? { windowSize } : {}),
  });
  mesh.setPeers(peers);
  mesh.start();
  options.logger.info("PingMesh started", {
    peers: peers.length,
    sampled: mesh.stats().sampled,
    ...(address ? { listen: address } : {}),
  });
  return {
    ...(address ? { address } : {}),
    status: () => meshStatus(self, mesh.results(), new Date(options.clock.now()).toISOString()),
    async stop() {
      mesh.stop();
      icmp?.close();
      await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    },
  };
}
