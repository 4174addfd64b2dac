// PingMesh between the nodes of a kubernetes cluster (docs/pingmesh.md#nodeservers): each
// nodeserver that runs an AgentGroup member probes a sample of the group's members by TCP connect
// to their group address, where it also accepts TCP (the UDP port's number, on TCP: connections are
// closed as soon as they open, nothing is read). The sampler, the budget and the windowed figures
// are the PingMesh core's (pingmesh/); the members come from the SWIM view each interval. Alive
// and suspect members are probed, and dead ones too, so a node that went away shows as loss rather
// than vanishing; one that left (a goodbye) is dropped. Topology is the agent's to add (it reads
// the Node objects); here a peer is only a name and an address. GET /pingmesh serves report().
import net from "node:net";
import type { Clock, TimerId } from "../lib/clock.ts";
import type { AgentGroupReport } from "../lib/tunnel/index.ts";
import { type PairFigures, type Peer, PingMesh, tcpProbe } from "./pingmesh/index.ts";

export interface GroupPingMeshOptions {
  /** This node's name (its member id). */
  self: string;
  /** The group address (`ip:port`) to accept TCP probes at: --group-listen's. */
  listen: string;
  /** The AgentGroup view now (group-member.ts's report()). */
  group(): AgentGroupReport | undefined;
  clock: Clock;
  /** Each sampled member probed once per interval. */
  intervalMs: number;
  /** Members probed at most: the probe budget (probes per interval). */
  budget: number;
  timeoutMs?: number;
}

export interface GroupPingMeshReport {
  source: string;
  budget: number;
  intervalMs: number;
  probesSent: number;
  pairs: { target: string; figures: PairFigures }[];
}

/** Connections the probe listener holds at once at most (each lives one tick). */
const MAX_PROBE_CONNECTIONS = 256;

export class GroupPingMesh {
  readonly #options: GroupPingMeshOptions;
  readonly #mesh: PingMesh;
  #server: net.Server | undefined;
  #timer: TimerId | undefined;
  #peers = "";

  constructor(options: GroupPingMeshOptions) {
    this.#options = options;
    this.#mesh = new PingMesh({
      self: { name: options.self, topology: {} },
      clock: options.clock,
      probe: tcpProbe(options.clock, options.timeoutMs ?? Math.min(1_000, options.intervalMs)),
      intervalMs: options.intervalMs,
      budget: options.budget,
    });
  }

  async start(): Promise<void> {
    const at = this.#options.listen.lastIndexOf(":");
    const server = net.createServer((socket) => socket.destroy());
    server.maxConnections = MAX_PROBE_CONNECTIONS;
    await new Promise<void>((resolve, reject) => {
      server.once("error", (error) => reject(new Error(`TCP ${this.#options.listen}: ${error.message}`)));
      server.listen(Number(this.#options.listen.slice(at + 1)), this.#options.listen.slice(0, at), () =>
        resolve(),
      );
    });
    this.#server = server;
    this.#refresh();
    this.#mesh.start();
  }

  /** The members to probe, from the group's view now; a new set redraws the sample. */
  #refresh(): void {
    const view = this.#options.group();
    const peers: Peer[] = [];
    for (const m of view?.members ?? []) {
      if (m.id === this.#options.self || m.state === "left") continue;
      const at = m.address.lastIndexOf(":");
      const port = Number(m.address.slice(at + 1));
      if (at <= 0 || !Number.isInteger(port) || port < 1 || port > 65535) continue;
      peers.push({ name: m.id, host: m.address.slice(0, at), port, topology: {} });
    }
    const key = JSON.stringify(peers);
    if (key !== this.#peers) {
      this.#peers = key;
      this.#mesh.setPeers(peers);
    }
    this.#timer = this.#options.clock.setTimeout(() => this.#refresh(), this.#options.intervalMs);
  }

  report(): GroupPingMeshReport {
    return {
      source: this.#options.self,
      budget: this.#options.budget,
      intervalMs: this.#options.intervalMs,
      probesSent: this.#mesh.stats().probesSent,
      pairs: this.#mesh.results().map((r) => ({ target: r.target, figures: r.figures })),
    };
  }

  async close(): Promise<void> {
    this.#mesh.stop();
    if (this.#timer) this.#options.clock.clearTimeout(this.#timer);
    const server = this.#server;
    this.#server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
