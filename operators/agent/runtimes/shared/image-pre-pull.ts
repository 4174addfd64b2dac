// Image pre-pull (seed 001 §4.1, node agent; docs/adr/0012-image-pre-pull.md): the images of the
// Tasks placed on a node are pulled onto it ahead of their pods, through whatever the runtime
// pulls with (a pull pod pinned to the node, the Docker engine). This module is the part every
// runtime shares: which (node, image) pairs are wanted, a bounded number of pulls at a time, a
// failed pull retried with doubling backoff, and the result per image for the hub's Node. It
// never holds a pod back: the runtimes start their pods whether or not a pre-pull finished.

import type { ImagePull } from "../../../api/index.ts";
import { type Clock, systemClock, type TimerId } from "../../../lib/clock.ts";
import { type Logger, silentLogger } from "../../../lib/logger.ts";
import { type BackoffPolicy, restartDelay } from "../process/crash-loop-backoff.ts";

/** Pulls one image onto one node; rejects with the runtime's own message. Aborted when no longer wanted. */
export type PullImage = (node: string, image: string, signal: AbortSignal) => Promise<void>;

export interface ImagePrePullOptions {
  pull: PullImage;
  /** Pulls under way at once, across all nodes. Default 2. */
  concurrency?: number;
  /** Images followed per node; further ones are not pre-pulled (the pods pull them). Default 64, the schema's bound. */
  maxImagesPerNode?: number;
  /** Delay before retrying a failed pull, doubling per failure in a row. Default 10 s to 5 min. */
  backoff?: Partial<Pick<BackoffPolicy, "initialMs" | "maxMs">>;
  /** Called when any node's results change. */
  onChange?: () => void;
  clock?: Clock;
  logger?: Logger;
}

/** The schema's bound on ImagePull.message. */
export const MAX_PULL_MESSAGE = 1024;
/** The schema's bound on ImagePull.image: a longer reference is not followed. */
export const MAX_IMAGE_REFERENCE = 512;

interface Entry {
  node: string;
  image: string;
  phase: ImagePull["phase"];
  message?: string;
  attempts: number;
  since: string;
  /** When a Failed pull may be tried again (ms since the epoch). */
  retryAt: number;
  /** Set while its pull runs. */
  running?: AbortController;
}

/** Control characters out (a runtime's message goes to terminals and the dashboard), cut to the bound. */
export function pullMessage(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: removing them is the point
  const clean = text.replace(/[\u0000-\u001f\u007f]+/g, " ").trim();
  return clean.length <= MAX_PULL_MESSAGE ? clean : `${clean.slice(0, MAX_PULL_MESSAGE - 1)}…`;
}

const keyOf = (node: string, image: string) => `${node}\u0000${image}`;

export class ImagePrePuller {
  readonly #pull: PullImage;
  readonly #concurrency: number;
  readonly #maxPerNode: number;
  readonly #backoff: BackoffPolicy;
  readonly #onChange: () => void;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #entries = new Map<string, Entry>();
  readonly #pulls = new Set<Promise<void>>();
  #timer: TimerId | undefined;
  #stopped = false;

  constructor(options: ImagePrePullOptions) {
    this.#pull = options.pull;
    this.#concurrency = Math.max(1, options.concurrency ?? 2);
    this.#maxPerNode = Math.max(0, options.maxImagesPerNode ?? 64);
    this.#backoff = { initialMs: 10_000, maxMs: 300_000, resetAfterMs: 0, ...options.backoff };
    this.#onChange = options.onChange ?? (() => undefined);
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? silentLogger;
  }

  /**
   * The images wanted on each node (the whole set each time). New pairs start Pulling; pairs no
   * longer wanted are forgotten, and their pull, if running, is aborted.
   */
  want(wanted: ReadonlyMap<string, readonly string[]>): void {
    if (this.#stopped) return;
    const keep = new Set<string>();
    let changed = false;
    for (const [node, images] of wanted) {
      const unique = [...new Set(images)].filter((i) => i !== "" && i.length <= MAX_IMAGE_REFERENCE).sort();
      for (const image of unique.slice(0, this.#maxPerNode)) {
        const key = keyOf(node, image);
        keep.add(key);
        if (this.#entries.has(key)) continue;
        this.#entries.set(key, {
          node,
          image,
          phase: "Pulling",
          attempts: 0,
          since: this.#now(),
          retryAt: 0,
        });
        changed = true;
      }
    }
    for (const [key, entry] of this.#entries) {
      if (keep.has(key)) continue;
      entry.running?.abort();
      this.#entries.delete(key);
      changed = true;
    }
    if (changed) this.#onChange();
    this.#pump();
  }

  /** The results on `node`, sorted by image; undefined when nothing is wanted there. */
  images(node: string): ImagePull[] | undefined {
    const out: ImagePull[] = [];
    for (const entry of this.#entries.values()) {
      if (entry.node !== node) continue;
      out.push({
        image: entry.image,
        phase: entry.phase,
        ...(entry.message ? { message: entry.message } : {}),
        attempts: entry.attempts,
        lastTransitionTime: entry.since,
      });
    }
    return out.length > 0 ? out.sort((a, b) => (a.image < b.image ? -1 : 1)) : undefined;
  }

  /** Aborts every pull and waits for them to end. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) this.#clock.clearTimeout(this.#timer);
    for (const entry of this.#entries.values()) entry.running?.abort();
    await Promise.allSettled([...this.#pulls]);
  }

  #now(): string {
    return new Date(this.#clock.now()).toISOString();
  }

  /** Starts what may start now; wakes up for the earliest retry otherwise. */
  #pump(): void {
    if (this.#stopped) return;
    if (this.#timer) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    const now = this.#clock.now();
    let running = [...this.#entries.values()].filter((e) => e.running).length;
    // never-tried pairs first, then the failures whose backoff is longest over
    const ready = [...this.#entries.values()]
      .filter((e) => !e.running && e.phase !== "Present" && e.retryAt <= now)
      .sort((a, b) => a.retryAt - b.retryAt);
    for (const entry of ready) {
      if (running >= this.#concurrency) break;
      running++;
      this.#start(entry);
    }
    const next = Math.min(
      ...[...this.#entries.values()].filter((e) => e.phase === "Failed" && !e.running).map((e) => e.retryAt),
    );
    if (Number.isFinite(next) && running < this.#concurrency)
      this.#timer = this.#clock.setTimeout(() => this.#pump(), Math.max(0, next - now));
  }

  #start(entry: Entry): void {
    const controller = new AbortController();
    entry.running = controller;
    if (entry.phase !== "Pulling") {
      entry.phase = "Pulling";
      entry.since = this.#now();
      this.#onChange();
    }
    const pull = this.#pull(entry.node, entry.image, controller.signal).then(
      () => this.#settle(entry, controller, undefined),
      (error: unknown) => this.#settle(entry, controller, error),
    );
    this.#pulls.add(pull);
    void pull.finally(() => {
      this.#pulls.delete(pull);
      this.#pump();
    });
  }

  #settle(entry: Entry, controller: AbortController, error: unknown): void {
    entry.running = undefined;
    // forgotten (no longer wanted) or stopped: nothing to report
    if (controller.signal.aborted || this.#entries.get(keyOf(entry.node, entry.image)) !== entry) return;
    if (error === undefined) {
      entry.phase = "Present";
      entry.attempts = 0;
      delete entry.message;
    } else {
      entry.phase = "Failed";
      entry.attempts++;
      entry.message = pullMessage(error instanceof Error ? error.message : String(error));
      entry.retryAt = this.#clock.now() + restartDelay(this.#backoff, entry.attempts);
      this.#logger.info("image pre-pull failed", {
        node: entry.node,
        image: entry.image,
        attempts: entry.attempts,
        error: entry.message,
      });
    }
    entry.since = this.#now();
    this.#onChange();
  }
}
