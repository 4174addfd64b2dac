// PingMesh between clusters (docs/pingmesh.md#between-clusters): each nodeserver probes every other
// cluster of its Domains, through the path a connection to their pods really takes: a CONNECT on
// the Domain's pooled HTTP/2 connection to the hub's relay, checked by the hub and forwarded on the
// target cluster's reverse link, answered there by its nodeserver (PROBE_HEADER: no pod is
// touched). Each interval: the targets (the hub names the clusters it can reach), then one probe
// per cluster; a window of the last probes per cluster, so memory is bounded however long it runs.
import type { Clock, TimerId } from "../lib/clock.ts";
import { type PairFigures, ProbeWindow } from "./pingmesh/index.ts";

/** Clusters probed at most (the Cluster schema's clusterPairs bound). */
export const MAX_PROBED_CLUSTERS = 1024;

export interface ClusterProbeTarget {
  /** The other cluster's name. */
  cluster: string;
  /** One probe: its round trip in ms; rejects when it is lost or refused. */
  run(): Promise<number>;
}

export interface ClusterProberOptions {
  /** The clusters to probe now, each once (a failure: none this interval). */
  targets(): Promise<ClusterProbeTarget[]>;
  intervalMs: number;
  windowSize: number;
  clock: Clock;
}

export interface ClusterProbeFigures {
  target: string;
  figures: PairFigures;
}

export class ClusterProber {
  readonly #options: ClusterProberOptions;
  readonly #windows = new Map<string, ProbeWindow>();
  #timer: TimerId | undefined;
  #stopped = false;
  /** Probes sent since start: the budget is one per cluster per interval. */
  sent = 0;

  constructor(options: ClusterProberOptions) {
    if (!(options.intervalMs > 0))
      throw new Error(`cluster probe interval must be positive, got ${options.intervalMs}`);
    this.#options = options;
  }

  start(): void {
    this.#round();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer) this.#options.clock.clearTimeout(this.#timer);
  }

  /** Each probed cluster's figures, sorted by cluster. */
  figures(): ClusterProbeFigures[] {
    return [...this.#windows]
      .flatMap(([target, window]) => {
        const figures = window.figures();
        return figures ? [{ target, figures }] : [];
      })
      .sort((a, b) => (a.target < b.target ? -1 : a.target > b.target ? 1 : 0));
  }

  #round(): void {
    if (this.#stopped) return;
    const { clock, intervalMs } = this.#options;
    this.#timer = clock.setTimeout(() => this.#round(), intervalMs);
    this.#options.targets().then(
      (targets) => this.#probe(targets.slice(0, MAX_PROBED_CLUSTERS)),
      // the hub unreachable: the probes of this interval are lost, the windows say so
      () => {
        for (const window of this.#windows.values()) window.record(undefined);
      },
    );
  }

  #probe(targets: readonly ClusterProbeTarget[]): void {
    if (this.#stopped) return;
    const wanted = new Set(targets.map((t) => t.cluster));
    // a cluster no longer in any Domain here is no longer measured: its window goes
    for (const cluster of this.#windows.keys()) if (!wanted.has(cluster)) this.#windows.delete(cluster);
    for (const target of targets) {
      let window = this.#windows.get(target.cluster);
      if (!window) {
        window = new ProbeWindow(this.#options.windowSize);
        this.#windows.set(target.cluster, window);
      }
      const into = window;
      this.sent++;
      target.run().then(
        (ms) => into.record(ms),
        () => into.record(undefined),
      );
    }
  }
}
