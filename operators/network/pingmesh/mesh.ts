// PingMesh on one node: probes its sampled peers, one probe every intervalMs / peers (spread over
// the round, never a burst), and keeps each pair's last `windowSize` outcomes. The cost is stated
// and bounded: at most `budget` peers, so `budget` probes per interval; `stats()` counts what was
// really sent. A probe still running when the next one of the same pair is due does not hold it
// up (a lost probe takes the whole timeout), so in-flight probes stay under
// budget × ceil(timeoutMs / intervalMs) + 1. Time comes from the injected clock; the probe is
// injected too (tcpProbe for real sockets).

import type { Clock, TimerId } from "../../lib/clock.ts";
import { type Peer, type SampleOptions, samplePeers } from "./sample.ts";
import type { Probe } from "./tcp-probe.ts";
import type { NodeTopology } from "./topology.ts";
import { type PairFigures, ProbeWindow } from "./window.ts";

export interface PingMeshOptions {
  /** This node's name and topology. */
  self: { name: string; topology: NodeTopology };
  clock: Clock;
  probe: Probe;
  /**
   * An ICMP echo of the same peer beside each TCP probe (icmp-probe.ts), when ICMP may be sent:
   * undefined a lost echo, a rejection no figure (the helper is not running).
   */
  icmpProbe?: (host: string) => Promise<number | undefined>;
  /** Each sampled peer is probed once per interval (default 10 s). */
  intervalMs?: number;
  /** Peers probed at most: the probe budget per node (default 16). */
  budget?: number;
  perRack?: number;
  /** Probes kept per pair (default 64). */
  windowSize?: number;
}

export interface PeerResult {
  target: string;
  topology: NodeTopology;
  figures: PairFigures;
  /** The ICMP echoes' figures, with icmpProbe. */
  icmp?: PairFigures;
}

export interface PingMeshStats {
  /** Probes started since start(). */
  probesSent: number;
  /** Probes running now. */
  inFlight: number;
  /** Peers in the sample. */
  sampled: number;
}

export class PingMesh {
  readonly #options: Required<Omit<PingMeshOptions, "perRack" | "icmpProbe">> &
    Pick<SampleOptions, "perRack"> &
    Pick<PingMeshOptions, "icmpProbe">;
  #peers: Peer[] = [];
  #sample: Peer[] = [];
  readonly #windows = new Map<string, ProbeWindow>();
  readonly #icmpWindows = new Map<string, ProbeWindow>();
  #cursor = 0;
  #timer: TimerId | undefined;
  #running = false;
  #probesSent = 0;
  #inFlight = 0;

  constructor(options: PingMeshOptions) {
    const intervalMs = options.intervalMs ?? 10_000;
    const budget = options.budget ?? 16;
    const windowSize = options.windowSize ?? 64;
    if (!(intervalMs > 0)) throw new Error(`PingMesh intervalMs must be positive, got ${intervalMs}`);
    if (!Number.isInteger(budget) || budget < 1)
      throw new Error(`PingMesh budget must be a positive integer, got ${budget}`);
    if (!Number.isInteger(windowSize) || windowSize < 1)
      throw new Error(`PingMesh windowSize must be a positive integer, got ${windowSize}`);
    this.#options = { ...options, intervalMs, budget, windowSize };
  }

  /** The cluster's nodes as they are now; the sample is drawn again, gone peers' windows dropped. */
  setPeers(peers: readonly Peer[]): void {
    this.#peers = [...peers];
    this.#sample = samplePeers(this.#options.self.name, this.#peers, {
      budget: this.#options.budget,
      ...(this.#options.perRack ? { perRack: this.#options.perRack } : {}),
    });
    const keep = new Set(this.#sample.map((p) => p.name));
    for (const windows of [this.#windows, this.#icmpWindows])
      for (const name of windows.keys()) if (!keep.has(name)) windows.delete(name);
    this.#cursor = 0;
    if (this.#running && this.#timer === undefined) this.#schedule();
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#schedule();
  }

  stop(): void {
    this.#running = false;
    if (this.#timer) this.#options.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #schedule(): void {
    if (!this.#running || this.#sample.length === 0) {
      this.#timer = undefined;
      return;
    }
    const spacing = this.#options.intervalMs / this.#sample.length;
    this.#timer = this.#options.clock.setTimeout(() => {
      this.#timer = undefined;
      this.#probeNext();
      this.#schedule();
    }, spacing);
  }

  #probeNext(): void {
    const peer = this.#sample[this.#cursor % this.#sample.length];
    this.#cursor = (this.#cursor + 1) % this.#sample.length;
    if (!peer) return;
    this.#probesSent++;
    this.#inFlight++;
    const sample = this.#sample;
    this.#options.probe(peer.host, peer.port).then(
      (rtt) => this.#record(this.#windows, sample, peer, rtt),
      () => this.#record(this.#windows, sample, peer, undefined),
    );
    const icmp = this.#options.icmpProbe;
    if (icmp) {
      this.#probesSent++;
      this.#inFlight++;
      icmp(peer.host).then(
        (rtt) => this.#record(this.#icmpWindows, sample, peer, rtt),
        // the helper is not running: no figure rather than a loss
        () => this.#inFlight--,
      );
    }
  }

  #record(windows: Map<string, ProbeWindow>, sample: Peer[], peer: Peer, rtt: number | undefined): void {
    this.#inFlight--;
    // a probe of a sample since redrawn without this peer is dropped, not counted anew
    if (!this.#running || (sample !== this.#sample && !this.#sample.some((p) => p.name === peer.name)))
      return;
    let window = windows.get(peer.name);
    if (!window) {
      window = new ProbeWindow(this.#options.windowSize);
      windows.set(peer.name, window);
    }
    window.record(rtt);
  }

  /** Each sampled peer's figures so far, by name; peers not yet probed are left out. */
  results(): PeerResult[] {
    const out: PeerResult[] = [];
    for (const peer of this.#sample) {
      const figures = this.#windows.get(peer.name)?.figures();
      const icmp = this.#icmpWindows.get(peer.name)?.figures();
      if (figures)
        out.push({ target: peer.name, topology: peer.topology, figures, ...(icmp ? { icmp } : {}) });
    }
    return out.sort((a, b) => (a.target < b.target ? -1 : 1));
  }

  stats(): PingMeshStats {
    return { probesSent: this.#probesSent, inFlight: this.#inFlight, sampled: this.#sample.length };
  }
}
