// The peers state for the cluster's nodeservers: the Secret rlark-domain-peers in the agent's
// namespace, written from the DomainPeers the agent holds (docs/networking-kubernetes.md). A
// Secret, not a ConfigMap: each DomainPeer carries its Domain's private key. The nodeserver reads
// it with `rlark nodeserver --peers-secret <ns>/rlark-domain-peers` (network/peers-from-secret.ts).
//
// Data: one key, peers.json, whose value is the JSON of the nodeserver's PeersState (api/
// peers-state.ts, the same the process runtime's peers.json file holds), Domains in name order,
// so an unchanged set is byte-identical and is not written again.
import {
  type CoreV1Api,
  type KubernetesObjectApi,
  PatchStrategy,
  type V1Secret,
} from "@kubernetes/client-node";
import {
  AGENT_FIELD_MANAGER,
  AGENT_INSTANCE_LABEL,
  MANAGED_BY_AGENT,
  MANAGED_BY_LABEL,
  type PeersState,
} from "../../../../api/index.ts";
import type { Clock } from "../../../../lib/clock.ts";
import { ApplyLoop, type RunResult } from "../../../../lib/controller/loop/index.ts";
import type { Logger } from "../../../../lib/logger.ts";
import { describeApiError } from "../api-error.ts";
import { ensureNamespace } from "../namespace.ts";

export const DOMAIN_PEERS_SECRET = "rlark-domain-peers";
export const DOMAIN_PEERS_KEY = "peers.json";

/** The Secret holding `state`, in `namespace`. */
export function domainPeersSecret(namespace: string, state: PeersState, instance?: string): V1Secret {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: DOMAIN_PEERS_SECRET,
      namespace,
      labels: {
        [MANAGED_BY_LABEL]: MANAGED_BY_AGENT,
        ...(instance ? { [AGENT_INSTANCE_LABEL]: instance } : {}),
      },
    },
    type: "Opaque",
    data: { [DOMAIN_PEERS_KEY]: Buffer.from(JSON.stringify(state)).toString("base64") },
  };
}

export interface DomainPeersWriterOptions {
  objects: KubernetesObjectApi;
  core: CoreV1Api;
  namespace: string;
  instance?: string | undefined;
  logger: Logger;
  /** The first retry's delay (doubling to a minute). Default 5 s. */
  retryIntervalMs?: number | undefined;
  clock?: Clock | undefined;
}

/**
 * Keeps the Secret equal to the latest peers handed to {@link write}: one write at a time, each of
 * the newest set, nothing sent when the content is what was last written, retried after a failure
 * with backoff.
 */
export class DomainPeersWriter {
  readonly #options: DomainPeersWriterOptions;
  readonly #loop: ApplyLoop<V1Secret>;
  #written: string | undefined;

  constructor(options: DomainPeersWriterOptions) {
    this.#options = options;
    this.#loop = new ApplyLoop({
      name: "Domain peers Secret",
      run: (secret) => this.#writeOnce(secret),
      baseMs: options.retryIntervalMs ?? 5000,
      ...(options.clock ? { clock: options.clock } : {}),
    });
  }

  /** Resolves once the Secret holds `state` (or the write failed and a retry is scheduled). */
  write(state: PeersState): Promise<void> {
    return this.#loop.set(domainPeersSecret(this.#options.namespace, state, this.#options.instance));
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }

  /** Failures are logged here and retried: write() callers are not failed by them. */
  async #writeOnce(secret: V1Secret): Promise<RunResult | undefined> {
    const content = secret.data?.[DOMAIN_PEERS_KEY];
    if (content === this.#written) return undefined;
    const { objects, core, namespace, logger } = this.#options;
    try {
      await ensureNamespace(core, namespace);
      await objects.patch(
        secret,
        undefined,
        undefined,
        AGENT_FIELD_MANAGER,
        true,
        PatchStrategy.ServerSideApply,
      );
      this.#written = content;
      return undefined;
    } catch (err) {
      logger.warn("could not write the Domain peers Secret", {
        secret: `${namespace}/${DOMAIN_PEERS_SECRET}`,
        error: describeApiError(err),
      });
      return { retry: true };
    }
  }
}
