// A store watch that outlives its streams: when a watch ends by itself (the kubernetes store lost
// its stream to the apiserver, a resourceVersion expired, the handler threw), it is opened again
// from the store's current resourceVersion after a pause (1 s doubling to 30 s), and `onResync`
// is called, since whatever changed between the two watches came as no event. The controllers'
// runner (lib/controller/runner.ts) does the same for its own watches; this is for the watchers
// outside a controller: the agent sync's deltas and the status branch's writer, which otherwise
// fell silent for good after one apiserver restart (found by the chaos soak).
//
//   const watch = await keepWatching(store, "Task", (e) => changed(e.object), { logger, onResync });
//   watch.stop();

import { type Logger, silentLogger } from "../logger.ts";
import type { KubeObject, Store, WatchEvent } from "./types.ts";

export interface KeepWatchingOptions {
  logger?: Logger;
  /** Called after the watch was opened again: events may have been missed meanwhile. */
  onResync?: () => void;
  /** Where the first watch starts (default: the store's current resourceVersion). */
  resourceVersion?: string;
  /** The first pause before a watch is opened again. Default 1 s (doubling to 30 s). */
  retryMs?: number;
}

export interface KeptWatch {
  stop(): void;
}

const MAX_RETRY_MS = 30_000;

/** Watches `kind` until stop(); the first watch is open when this resolves. */
export async function keepWatching(
  store: Store,
  kind: string,
  handler: (event: WatchEvent<KubeObject>) => void,
  options: KeepWatchingOptions,
): Promise<KeptWatch> {
  let stopped = false;
  const logger = options.logger ?? silentLogger;
  const from = options.resourceVersion ?? (await store.resourceVersion());
  let current = await store.watch(kind, { resourceVersion: from }, handler);
  let wake: (() => void) | undefined;
  const loop = async () => {
    let failures = 0;
    while (!stopped) {
      const error = await current.closed;
      if (stopped) return;
      const pause = Math.min(MAX_RETRY_MS, (options.retryMs ?? 1000) * 2 ** Math.min(failures, 10));
      logger.warn("store watch ended; watching again", {
        kind,
        ...(error ? { error: error.message } : {}),
        retryInMs: pause,
      });
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, pause);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = undefined;
      if (stopped) return;
      try {
        current = await store.watch(kind, { resourceVersion: await store.resourceVersion() }, handler);
        // stopped while it was being opened
        if (stopped) {
          current.stop();
          return;
        }
        failures = 0;
        logger.info("store watch opened again", { kind });
        options.onResync?.();
      } catch (err) {
        failures++;
        logger.warn("store watch could not be opened again", {
          kind,
          error: err instanceof Error ? err.message : String(err),
        });
        // try again after the next pause
        current = { stop() {}, closed: Promise.resolve(err instanceof Error ? err : new Error(String(err))) };
      }
    }
  };
  void loop();
  return {
    stop() {
      stopped = true;
      current.stop();
      wake?.();
    },
  };
}
