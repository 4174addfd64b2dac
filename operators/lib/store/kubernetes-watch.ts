// A store watch over apiserver watches: the initial list (when no resourceVersion is given),
// then one watch stream after another, each resumed from the last resourceVersion seen
// (events or bookmarks), so the apiserver's periodic stream timeouts are invisible. A 410
// (the resourceVersion was compacted away) ends the store watch with ExpiredError: the client
// relists, as with the SQLite event log.

import type { KubeHttp, KubeStatus, Query } from "../kube-http.ts";
import { KubeHttpError } from "../kube-http.ts";
import { ExpiredError } from "./errors.ts";
import type { ResourceMap } from "./kubernetes-resources.ts";
import { storeErrorOf } from "./kubernetes-resources.ts";
import { everything } from "./label-selector.ts";
import type { KubeObject, WatchEventType, WatchHandler } from "./types.ts";
import { Watcher } from "./watchers.ts";

interface RawEvent {
  type: WatchEventType | "BOOKMARK" | "ERROR";
  object: KubeObject & KubeStatus;
}

export interface KubeWatchOptions {
  http: KubeHttp;
  resources: ResourceMap;
  kind: string;
  namespace: string | undefined;
  /** Already formatted and checked. */
  labelSelector: string | undefined;
  /** Seconds a single stream may last before the apiserver ends it and we resume. */
  streamSeconds: number;
  /** Lists (paginated) for the initial state; returns items and the list's resourceVersion. */
  list: () => Promise<{ items: KubeObject[]; resourceVersion: string }>;
}

export async function startKubeWatch(
  options: KubeWatchOptions,
  from: string | undefined,
  handler: WatchHandler<KubeObject>,
  onStop: (watcher: Watcher) => void,
): Promise<Watcher> {
  let stopStream: (() => void) | undefined;
  const watcher = new Watcher(
    options.kind,
    { namespace: options.namespace, selector: everything },
    handler,
    (w) => {
      stopStream?.();
      onStop(w);
    },
    0,
  );
  let resourceVersion = from;
  if (resourceVersion === undefined || resourceVersion === "" || resourceVersion === "0") {
    const list = await options.list();
    for (const object of list.items) watcher.push("ADDED", JSON.stringify(object));
    resourceVersion = list.resourceVersion;
  }
  let stopped = false;
  void watcher.closed.then(() => {
    stopped = true;
  });
  const path = options.resources.collection(options.kind, options.namespace);
  const open = async (): Promise<void> => {
    const query: Query = {
      watch: true,
      allowWatchBookmarks: true,
      resourceVersion,
      labelSelector: options.labelSelector,
      timeoutSeconds: options.streamSeconds,
    };
    stopStream = await options.http.stream(
      path,
      query,
      (value) => {
        const event = value as RawEvent;
        if (event.type === "ERROR") {
          const status = event.object;
          const error =
            status.code === 410
              ? new ExpiredError(status.message ?? "the watch's resourceVersion is too old", {
                  kind: options.kind,
                })
              : storeErrorOf(new KubeHttpError(status.code ?? 500, status, "watch error"), {
                  kind: options.kind,
                });
          watcher.close(error instanceof Error ? error : new Error(String(error)));
          return;
        }
        const rv = event.object?.metadata?.resourceVersion;
        if (rv) resourceVersion = rv;
        if (event.type === "BOOKMARK") return;
        watcher.push(event.type, JSON.stringify(options.resources.fromServed(event.object)));
      },
      (error) => {
        if (stopped) return;
        if (error) {
          watcher.close(error);
          return;
        }
        // The apiserver ended the stream (timeoutSeconds): resume where it stopped.
        open().catch((e: unknown) => watcher.close(asError(storeErrorOf(e, { kind: options.kind }))));
      },
    );
    if (stopped) stopStream();
  };
  try {
    await open();
  } catch (error) {
    watcher.stop();
    throw storeErrorOf(error, { kind: options.kind });
  }
  return watcher;
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
