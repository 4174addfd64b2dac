// Keeps the Nodes as git's overlays say (node-overlays.ts makes each patch): on every
// applyNodeOverlays, and again shortly after the Nodes change, so an admin's kubectl label does
// not undo git's. A pass that failed is tried again with backoff (lib/controller's ApplyLoop).
import {
  type KubernetesObject,
  type KubernetesObjectApi,
  PatchStrategy,
  type V1Node,
} from "@kubernetes/client-node";
import { AGENT_FIELD_MANAGER } from "../../../../api/index.ts";
import type { Clock } from "../../../../lib/clock.ts";
import { ApplyLoop } from "../../../../lib/controller/loop/index.ts";
import type { Logger } from "../../../../lib/logger.ts";
import type { NodeOverlay } from "../../types.ts";
import { describeApiError } from "../api-error.ts";
import type { WatchedCollection } from "../watch/watched-collection.ts";
import { hasOverlayRecord, type NodeFields, overlayPatch } from "./node-overlays.ts";

export interface NodeOverlaySyncOptions {
  /** The first retry's delay (doubling to a minute). Default 5 s. */
  retryIntervalMs?: number | undefined;
  clock?: Clock | undefined;
}

/** How long Node changes gather before the overlays are checked again. */
const NODES_CHANGED_DELAY_MS = 200;

export class NodeOverlaySync {
  readonly #objects: KubernetesObjectApi;
  readonly #nodes: WatchedCollection<V1Node>;
  readonly #logger: Logger;
  readonly #loop: ApplyLoop<readonly NodeOverlay[]>;

  constructor(
    objects: KubernetesObjectApi,
    nodes: WatchedCollection<V1Node>,
    logger: Logger,
    options: NodeOverlaySyncOptions = {},
  ) {
    this.#objects = objects;
    this.#nodes = nodes;
    this.#logger = logger;
    this.#loop = new ApplyLoop({
      name: "node overlays",
      run: (overlays) => this.#sync(overlays),
      baseMs: options.retryIntervalMs ?? 5000,
      logger,
      describeError: (err) => describeApiError(err),
      ...(options.clock ? { clock: options.clock } : {}),
    });
  }

  /** Resolves once the Nodes carry `overlays`; rejects naming the Nodes that failed (retried). */
  apply(overlays: readonly NodeOverlay[]): Promise<void> {
    return this.#loop.set(overlays);
  }

  /** Node changes re-check the overlays (an admin's kubectl label must not undo git's). */
  nodesChanged(): void {
    this.#loop.kick(NODES_CHANGED_DELAY_MS);
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }

  async #sync(overlays: readonly NodeOverlay[]): Promise<void> {
    const wanted = new Map(overlays.map((o) => [o.name, o]));
    const failures: string[] = [];
    for (const node of this.#nodes.values()) {
      const name = node.metadata?.name ?? "";
      const fields: NodeFields = {
        labels: node.metadata?.labels ?? {},
        annotations: node.metadata?.annotations ?? {},
        unschedulable: node.spec?.unschedulable === true,
      };
      const overlay = wanted.get(name);
      if (!overlay && !hasOverlayRecord(fields)) continue;
      const patch = overlayPatch(fields, overlay);
      if (!patch) continue;
      try {
        await this.#objects.patch(
          // merge patch: null removes a key; the client's types do not know that
          {
            apiVersion: "v1",
            kind: "Node",
            ...patch,
            metadata: { ...patch.metadata, name },
          } as unknown as KubernetesObject,
          undefined,
          undefined,
          AGENT_FIELD_MANAGER,
          undefined,
          PatchStrategy.MergePatch,
        );
      } catch (err) {
        failures.push(`${name}: ${describeApiError(err)}`);
      }
    }
    for (const name of wanted.keys()) {
      if (!this.#nodes.get("", name))
        this.#logger.warn("node overlay for a node the cluster does not have", { node: name });
    }
    if (failures.length > 0) throw new Error(`node overlays: ${failures.join("; ")}`);
  }
}
