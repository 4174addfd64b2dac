// The nodeserver's second source of the peers state (`rlark nodeserver --peers-secret <ns>/<name>`):
// the Secret rlark-domain-peers that the kubernetes agent writes from its DomainPeers (docs/
// networking-kubernetes.md), watched through the API server with the pod's service account (or a
// kubeconfig). Its key peers.json holds the same PeersState (api/peers-state.ts) as the process
// runtime's peers.json file. Yields the whole state at the first list and after every change; the
// Secret's absence is the empty state. A Secret whose content is not a valid state is logged,
// naming the field, and skipped: the nodeserver keeps the last good state.
import type { KubeConfig } from "@kubernetes/client-node";
import { type PeersState, parsePeersState } from "../api/index.ts";
import type { Clock } from "../lib/clock.ts";
import { ApplyLoop } from "../lib/controller/loop/index.ts";
import { type Logger, silentLogger } from "../lib/logger.ts";

/** The Secret's key (operators/agent/runtimes/kubernetes/domain-peers-secret.ts). */
export const PEERS_SECRET_KEY = "peers.json";

/** Largest peers.json taken: a Secret is at most 1 MiB anyway. */
const MAX_PEERS_BYTES = 1024 * 1024;

/** No Secret: no Domains, no routes. */
export const EMPTY_PEERS_STATE: PeersState = { globalNamespace: "", domains: [] };

export class PeersSecretError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PeersSecretError";
  }
}

/** The state a Secret's data holds; throws naming the field that is wrong. */
export function parsePeersSecret(data: Record<string, string> | undefined): PeersState {
  const encoded = data?.[PEERS_SECRET_KEY];
  if (encoded === undefined) return EMPTY_PEERS_STATE;
  const text = Buffer.from(encoded, "base64");
  if (text.length > MAX_PEERS_BYTES)
    throw new PeersSecretError(`${PEERS_SECRET_KEY} is larger than ${MAX_PEERS_BYTES} bytes`);
  try {
    return parsePeersState(text.toString("utf8"), PEERS_SECRET_KEY);
  } catch (err) {
    throw new PeersSecretError((err as Error).message);
  }
}

export interface PeersFromSecretOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  name: string;
  logger?: Logger;
  /** Ends the iteration. */
  signal?: AbortSignal;
  /**
   * Wait before watching again after the watch ended with an error. Default 1 s; lists that fail
   * in a row double it (with jitter) up to 30 s.
   */
  retryMs?: number;
  /**
   * How long a watch may carry nothing (no event, no bookmark) before the client ends it and
   * watches again; client-node's Watch's default, 30 s, when unset.
   */
  idleTimeoutMs?: number;
  clock?: Clock;
}

/** The longest wait between lists that fail. */
const MAX_RETRY_MS = 30_000;

interface SecretEvent {
  metadata?: { resourceVersion?: string };
  data?: Record<string, string>;
}

/**
 * The peers state from the Secret, as it changes: the current state first (once the watch has
 * listed), then every different state. Ends when `signal` aborts.
 */
export async function* peersFromSecret(options: PeersFromSecretOptions): AsyncGenerator<PeersState> {
  const { CoreV1Api, Watch } = await import("./kube-client.ts");
  const logger = options.logger ?? silentLogger;
  const watch = new Watch(options.kubeConfig);
  const where = `Secret ${options.namespace}/${options.name}`;
  const queue: PeersState[] = [];
  let wake: (() => void) | undefined;
  const push = (state: PeersState) => {
    queue.push(state);
    wake?.();
  };
  let last: string | undefined;
  const take = (data: Record<string, string> | undefined) => {
    let state: PeersState;
    try {
      state = parsePeersSecret(data);
    } catch (err) {
      logger.error("ignored the peers Secret: keeping the last good state", {
        secret: where,
        error: (err as Error).message,
      });
      return;
    }
    const text = JSON.stringify(state);
    if (text === last) return;
    last = text;
    push(state);
  };

  let stopped = false;
  let controller: AbortController | undefined;
  const core = options.kubeConfig.makeApiClient(CoreV1Api);
  const fieldSelector = `metadata.name=${options.name}`;
  const retryMs = options.retryMs ?? 1000;
  const failed = (err: unknown) =>
    logger.warn("watching the peers Secret failed; trying again", { secret: where, error: String(err) });
  // client-node declares its idle timeout private (30 s, also the connect timeout); set only when
  // asked (tests, which need quiet rounds sooner)
  if (options.idleTimeoutMs !== undefined)
    (watch as unknown as { requestTimeoutMs: number }).requestTimeoutMs = options.idleTimeoutMs;
  // Where the next watch starts: the list's resourceVersion, then each event's (bookmarks
  // included); undefined means list first. A list then a watch from its resourceVersion misses
  // nothing between the two, and an absent Secret is the empty state at once.
  let resourceVersion: string | undefined;
  // One run: a list when there is no resourceVersion to go on from, then a watch until it ends.
  // The client ends a watch that has carried nothing for its idle timeout (client-node's Watch:
  // 30 s, TimeoutError): for one Secret that seldom changes, that is a quiet watch, not a
  // failure, so it is watched again at once from where it was, without a list or a warning. A
  // watch that never connected, a failed list, or one the API server refuses (410 Gone: the
  // resourceVersion is too old) lists again; all but 410 are warned of and back off.
  const loop = new ApplyLoop<void>({
    name: "peers Secret",
    run: async () => {
      if (resourceVersion === undefined) {
        const list = await core
          .listNamespacedSecret({ namespace: options.namespace, fieldSelector })
          .catch((err: unknown) => {
            failed(err);
            throw err;
          });
        take(list.items[0]?.data);
        resourceVersion = list.metadata?.resourceVersion;
      }
      let ended = false;
      let connected = false;
      let gone = false;
      const err = await new Promise<unknown>((resolve, reject) => {
        watch
          .watch(
            `/api/v1/namespaces/${options.namespace}/secrets`,
            { fieldSelector, resourceVersion, allowWatchBookmarks: true },
            (phase, object: SecretEvent & { code?: number }) => {
              if (phase === "ERROR") {
                gone = object.code === 410;
                resourceVersion = undefined;
                return;
              }
              const rv = object.metadata?.resourceVersion;
              if (rv) resourceVersion = rv;
              if (phase === "ADDED" || phase === "MODIFIED") take(object.data);
              else if (phase === "DELETED") take(undefined);
            },
            (e: unknown) => {
              ended = true;
              resolve(e);
            },
          )
          .then((c) => {
            // resolved before the watch ended: the API server answered 200 and the stream is open
            if (!ended) connected = true;
            controller = c;
            if (stopped) c.abort();
          }, reject);
      }).catch((e: unknown) => e);
      if (stopped) return undefined;
      const quiet = connected && err instanceof Error && err.name === "TimeoutError";
      if (!err || quiet) return { requeueAfter: 0 };
      resourceVersion = undefined;
      if (gone || (err as { statusCode?: number }).statusCode === 410) return { requeueAfter: 0 };
      failed(err);
      return { requeueAfter: retryMs };
    },
    baseMs: retryMs,
    maxMs: MAX_RETRY_MS,
    ...(options.clock ? { clock: options.clock } : {}),
  });
  const onAbort = () => {
    stopped = true;
    void loop.stop();
    controller?.abort();
    wake?.();
  };
  options.signal?.addEventListener("abort", onAbort, { once: true });
  // a failed list is logged in the run and tried again by the loop
  loop.set().catch(() => undefined);
  try {
    while (!stopped) {
      const next = queue.shift();
      if (next) {
        yield next;
        continue;
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
      wake = undefined;
    }
  } finally {
    stopped = true;
    const stopping = loop.stop();
    controller?.abort();
    options.signal?.removeEventListener("abort", onAbort);
    await stopping;
  }
}
