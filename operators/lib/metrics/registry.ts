// A small Prometheus registry: counters, gauges and histograms with labels, rendered in the
// text exposition format 0.0.4. Collect hooks fill values that are cheaper to read at scrape
// time (queue depth, store size) than to keep current.

export const contentType = "text/plain; version=0.0.4; charset=utf-8";

export type Labels = Readonly<Record<string, string>>;

const metricName = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const labelName = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export interface MetricOptions {
  name: string;
  help: string;
  labelNames?: readonly string[];
}

export interface HistogramOptions extends MetricOptions {
  /** Upper bounds, ascending; +Inf is implied. Default: Prometheus' default buckets (seconds). */
  buckets?: readonly number[];
}

export const defaultBuckets: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export function formatNumber(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Number.POSITIVE_INFINITY) return "+Inf";
  if (value === Number.NEGATIVE_INFINITY) return "-Inf";
  return String(value);
}

function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

function escapeHelp(help: string): string {
  return help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

function renderLabels(pairs: readonly (readonly [string, string])[]): string {
  if (pairs.length === 0) return "";
  return `{${pairs.map(([k, v]) => `${k}="${escapeLabelValue(v)}"`).join(",")}}`;
}

abstract class Metric<Child> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  protected children = new Map<string, { values: string[]; child: Child }>();

  constructor(options: MetricOptions) {
    if (!metricName.test(options.name)) throw new Error(`metric name "${options.name}" is not valid`);
    for (const l of options.labelNames ?? []) {
      if (!labelName.test(l) || l.startsWith("__") || l === "le") {
        throw new Error(`metric ${options.name}: label name "${l}" is not valid`);
      }
    }
    this.name = options.name;
    this.help = options.help;
    this.labelNames = [...(options.labelNames ?? [])];
  }

  abstract readonly type: "counter" | "gauge" | "histogram";
  protected abstract newChild(): Child;
  protected abstract renderChild(values: readonly string[], child: Child): string[];

  /** The series for these label values (every label name, nothing else). */
  labels(labels: Labels = {}): Child {
    const keys = Object.keys(labels);
    if (keys.length !== this.labelNames.length || !this.labelNames.every((n) => Object.hasOwn(labels, n))) {
      throw new Error(
        `metric ${this.name} takes labels [${this.labelNames.join(", ")}], got [${keys.join(", ")}]`,
      );
    }
    const values = this.labelNames.map((n) => labels[n] as string);
    const id = JSON.stringify(values);
    let entry = this.children.get(id);
    if (!entry) {
      entry = { values, child: this.newChild() };
      this.children.set(id, entry);
    }
    return entry.child;
  }

  /** Forgets every series (e.g. before a collect hook refills them). */
  reset(): void {
    this.children.clear();
  }

  /** Forgets one series. */
  remove(labels: Labels): void {
    this.children.delete(JSON.stringify(this.labelNames.map((n) => labels[n] ?? "")));
  }

  protected pairs(values: readonly string[]): [string, string][] {
    return this.labelNames.map((n, i) => [n, values[i] ?? ""]);
  }

  render(): string {
    const lines = [`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} ${this.type}`];
    const entries = [...this.children.values()].sort((a, b) =>
      JSON.stringify(a.values) < JSON.stringify(b.values) ? -1 : 1,
    );
    for (const { values, child } of entries) lines.push(...this.renderChild(values, child));
    return lines.join("\n");
  }
}

export interface CounterChild {
  inc(value?: number): void;
  get(): number;
}

export class Counter extends Metric<CounterChild> {
  readonly type = "counter" as const;

  protected newChild(): CounterChild {
    let total = 0;
    const name = this.name;
    return {
      inc(value = 1) {
        if (!(value >= 0)) throw new Error(`counter ${name} can only go up (got ${value})`);
        total += value;
      },
      get: () => total,
    };
  }

  protected renderChild(values: readonly string[], child: CounterChild): string[] {
    return [`${this.name}${renderLabels(this.pairs(values))} ${formatNumber(child.get())}`];
  }

  inc(value = 1): void {
    this.labels().inc(value);
  }
}

export interface GaugeChild {
  set(value: number): void;
  inc(value?: number): void;
  dec(value?: number): void;
  get(): number;
}

export class Gauge extends Metric<GaugeChild> {
  readonly type = "gauge" as const;

  protected newChild(): GaugeChild {
    let current = 0;
    return {
      set(value) {
        current = value;
      },
      inc(value = 1) {
        current += value;
      },
      dec(value = 1) {
        current -= value;
      },
      get: () => current,
    };
  }

  protected renderChild(values: readonly string[], child: GaugeChild): string[] {
    return [`${this.name}${renderLabels(this.pairs(values))} ${formatNumber(child.get())}`];
  }

  set(value: number): void {
    this.labels().set(value);
  }
}

export interface HistogramChild {
  observe(value: number): void;
  /** Cumulative counts per bucket (the last is +Inf), sum and count. */
  get(): { buckets: number[]; sum: number; count: number };
}

export class Histogram extends Metric<HistogramChild> {
  readonly type = "histogram" as const;
  readonly buckets: readonly number[];

  constructor(options: HistogramOptions) {
    super(options);
    const buckets = [...(options.buckets ?? defaultBuckets)];
    if (buckets.some((b, i) => i > 0 && b <= (buckets[i - 1] as number))) {
      throw new Error(`histogram ${options.name}: buckets must ascend`);
    }
    this.buckets = buckets.filter((b) => b !== Number.POSITIVE_INFINITY);
  }

  protected newChild(): HistogramChild {
    const bounds = this.buckets;
    const counts = new Array<number>(bounds.length + 1).fill(0);
    let sum = 0;
    let count = 0;
    return {
      observe(value) {
        let i = bounds.findIndex((b) => value <= b);
        if (i === -1) i = bounds.length;
        counts[i] = (counts[i] ?? 0) + 1;
        sum += value;
        count++;
      },
      get() {
        let running = 0;
        return { buckets: counts.map((c) => (running += c)), sum, count };
      },
    };
  }

  protected renderChild(values: readonly string[], child: HistogramChild): string[] {
    const { buckets, sum, count } = child.get();
    const base = this.pairs(values);
    const lines = [...this.buckets, Number.POSITIVE_INFINITY].map(
      (le, i) => `${this.name}_bucket${renderLabels([...base, ["le", formatNumber(le)]])} ${buckets[i] ?? 0}`,
    );
    lines.push(`${this.name}_sum${renderLabels(base)} ${formatNumber(sum)}`);
    lines.push(`${this.name}_count${renderLabels(base)} ${count}`);
    return lines;
  }

  observe(value: number): void {
    this.labels().observe(value);
  }
}

export type CollectHook = () => void | Promise<void>;

/** Holds metrics by name; `text()` runs the collect hooks and renders everything. */
export class Registry {
  #metrics = new Map<string, Counter | Gauge | Histogram>();
  #hooks: CollectHook[] = [];

  #register<M extends Counter | Gauge | Histogram>(metric: M): M {
    const existing = this.#metrics.get(metric.name);
    if (existing) {
      if (existing.type !== metric.type || existing.labelNames.join() !== metric.labelNames.join()) {
        throw new Error(`metric ${metric.name} is already registered with another type or labels`);
      }
      return existing as M;
    }
    this.#metrics.set(metric.name, metric);
    return metric;
  }

  /** A counter (its name should end in `_total`). Registering the same name again returns it. */
  counter(options: MetricOptions): Counter {
    return this.#register(new Counter(options));
  }

  gauge(options: MetricOptions): Gauge {
    return this.#register(new Gauge(options));
  }

  histogram(options: HistogramOptions): Histogram {
    return this.#register(new Histogram(options));
  }

  /** Runs before every render; returns a function that removes the hook. */
  onCollect(hook: CollectHook): () => void {
    this.#hooks.push(hook);
    return () => {
      this.#hooks = this.#hooks.filter((h) => h !== hook);
    };
  }

  /** The exposition text (serve with `contentType`). A failing hook leaves its metrics as they were. */
  async text(): Promise<string> {
    await Promise.allSettled(this.#hooks.map(async (hook) => hook()));
    return `${[...this.#metrics.values()].map((m) => m.render()).join("\n")}\n`;
  }
}
