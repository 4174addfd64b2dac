// What a controller is: a name, the kind it reconciles, a reconcile function over keys, and
// the other kinds whose changes map to keys of that kind.

import type { Clock } from "../clock.ts";
import type { Logger } from "../logger.ts";
import type { KubeObject, SelectorInput, Store, WatchEventType } from "../store/index.ts";

/** Which object to reconcile. `key` is "namespace/name", or "name" when cluster-scoped. */
export interface ReconcileRequest {
  key: string;
  namespace: string;
  name: string;
}

export interface ReconcileResult {
  /** Reconcile this key again after so many milliseconds (e.g. to poll a deadline). */
  requeueAfter?: number;
}

// biome-ignore lint/suspicious/noConfusingVoidType: a reconcile that returns nothing is `() => void` / `Promise<void>`.
export type ReconcileOutcome = ReconcileResult | undefined | void;

export interface ReconcileContext {
  store: Store;
  clock: Clock;
  logger: Logger;
  /** The controller's name. */
  controller: string;
  /** Queue keys of this controller (e.g. siblings a reconcile decided are affected). */
  enqueue(key: string, afterMs?: number): void;
}

/** Maps a changed object of a watched kind to keys of the controller's primary kind. */
export type MapToKeys = (object: KubeObject, type: WatchEventType) => Iterable<string>;

export interface WatchSpec {
  kind: string;
  mapToKeys: MapToKeys;
  namespace?: string;
  labelSelector?: SelectorInput;
}

export interface Controller {
  /** Unique per manager; the `controller` label of its metrics. */
  name: string;
  /** The primary kind: every change of an object of this kind queues its key. */
  kind: string;
  /**
   * Brings the world in line with the object named by the request (which may be gone: then
   * clean up). Level-triggered: read what you need, never trust the event that queued you.
   * Throwing retries the key with exponential backoff (5 ms doubling to 1000 s); returning
   * resets the backoff.
   */
  reconcile(
    request: ReconcileRequest,
    context: ReconcileContext,
  ): ReconcileOutcome | Promise<ReconcileOutcome>;
  /** Other kinds whose changes queue keys of the primary kind (see ownerKeys / watchOwned). */
  watches?: readonly WatchSpec[];
  /** Restrict the primary watch. */
  namespace?: string;
  labelSelector?: SelectorInput;
  /** Parallel reconciles (never two for one key). Default: the manager's, 2. */
  workers?: number;
  /** Queue every object of the primary kind this often (ms); 0 disables. Default: the manager's, 10 min. */
  resyncPeriod?: number;
}
