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
} from "../../../api/index.ts";
import type { Logger } from "../../../lib/logger.ts";
import { describeApiError } from "./api-error.ts";
import { ensureNamespace } from "./namespace.ts";

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
  retryIntervalMs?: number | undefined;
}

/**
 * Keeps the Secret equal to the latest peers handed to {@link write}: one write at a time, each of
 * the newest set, nothing sent when the content is what was last written, retried after a failure.
 */
export class DomainPeersWriter {
  readonly #options: DomainPeersWriterOptions;
  #wanted: string | undefined;
  #wantedSecret: V1Secret | undefined;
  #written: string | undefined;
  #writing: Promise<void> = Promise.resolve();
  #retry: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(options: DomainPeersWriterOptions) {
    this.#options = options;
  }

  /** Resolves once the Secret holds `state` (or the write failed and a retry is scheduled). */
  write(state: PeersState): Promise<void> {
    const secret = domainPeersSecret(this.#options.namespace, state, this.#options.instance);
    this.#wantedSecret = secret;
    this.#wanted = secret.data?.[DOMAIN_PEERS_KEY];
    const next = this.#writing.then(() => this.#writeOnce());
    this.#writing = next;
    return next;
  }

  stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#retry);
    return this.#writing;
  }

  async #writeOnce(): Promise<void> {
    const secret = this.#wantedSecret;
    const content = this.#wanted;
    if (this.#stopped || !secret || content === this.#written) return;
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
    } catch (err) {
      logger.warn("could not write the Domain peers Secret", {
        secret: `${namespace}/${DOMAIN_PEERS_SECRET}`,
        error: describeApiError(err),
      });
      if (!this.#retry && !this.#stopped)
        this.#retry = setTimeout(() => {
          this.#retry = undefined;
          this.#writing = this.#writing.then(() => this.#writeOnce());
        }, this.#options.retryIntervalMs ?? 5000);
    }
  }
}
