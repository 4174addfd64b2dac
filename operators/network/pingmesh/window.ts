// A fixed-size window of one pair's last probes: the memory a pair costs is its size, however long
// the mesh runs. A lost probe is kept as NaN, so loss is counted over the same window as the RTTs.

export interface PairFigures {
  /** Probes in the window (at most its size). */
  samples: number;
  /** Share of them that got no answer within the probe timeout, 0..1. */
  loss: number;
  /** Median RTT over the answered probes, ms; absent when none answered. */
  p50Ms?: number;
  p99Ms?: number;
  /** Mean absolute difference between consecutive answered RTTs (RFC 3550's idea, unsmoothed), ms. */
  jitterMs?: number;
}

export class ProbeWindow {
  readonly #values: Float64Array;
  #next = 0;
  #count = 0;

  constructor(size: number) {
    if (!Number.isInteger(size) || size < 1)
      throw new Error(`window size must be a positive integer, got ${size}`);
    this.#values = new Float64Array(size);
  }

  /** One probe's outcome: its RTT in ms, or undefined when it was lost. */
  record(rttMs: number | undefined): void {
    this.#values[this.#next] = rttMs === undefined ? Number.NaN : rttMs;
    this.#next = (this.#next + 1) % this.#values.length;
    if (this.#count < this.#values.length) this.#count++;
  }

  get samples(): number {
    return this.#count;
  }

  /** The window's figures, oldest to newest; undefined before the first probe. */
  figures(): PairFigures | undefined {
    if (this.#count === 0) return undefined;
    const size = this.#values.length;
    const start = this.#count < size ? 0 : this.#next;
    const answered: number[] = [];
    let jitterSum = 0;
    let previous: number | undefined;
    for (let i = 0; i < this.#count; i++) {
      const value = this.#values[(start + i) % size] as number;
      if (Number.isNaN(value)) continue;
      if (previous !== undefined) jitterSum += Math.abs(value - previous);
      previous = value;
      answered.push(value);
    }
    const figures: PairFigures = {
      samples: this.#count,
      loss: (this.#count - answered.length) / this.#count,
    };
    if (answered.length === 0) return figures;
    answered.sort((a, b) => a - b);
    figures.p50Ms = round(rank(answered, 0.5));
    figures.p99Ms = round(rank(answered, 0.99));
    if (answered.length > 1) figures.jitterMs = round(jitterSum / (answered.length - 1));
    return figures;
  }
}

/** Nearest-rank percentile of sorted values. */
function rank(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number;
}

const round = (ms: number): number => Math.round(ms * 1000) / 1000;
