// ObservedNode.disk: every node's kubelet Stats Summary, read through the API server's node proxy
// (it needs `nodes/proxy` get, which fleet/agent does not grant), round after round.
import type { CoreV1Api, V1Node } from "@kubernetes/client-node";
import { type Clock, systemClock } from "../../../../lib/clock.ts";
import { ApplyLoop } from "../../../../lib/controller/loop/index.ts";
import type { Logger } from "../../../../lib/logger.ts";
import { apiErrorCode, describeApiError } from "../api-error.ts";
import type { WatchedCollection } from "../watch/watched-collection.ts";
import { diskUsageFromSummary } from "./disk-usage.ts";

export interface DiskFigures {
  usedBytes: number;
  totalBytes: number;
}

export class DiskPoller {
  readonly #core: CoreV1Api;
  readonly #nodes: WatchedCollection<V1Node>;
  readonly #logger: Logger;
  readonly #onChange: () => void;
  readonly #disk = new Map<string, DiskFigures>();
  /** Nodes whose stats summary could not be read last time: said once, not every round. */
  readonly #failing = new Set<string>();
  /** nodes/proxy is forbidden: one node is asked per round (to notice a grant), the rest are not. */
  #forbidden = false;
  readonly #clock: Clock;
  #loop: ApplyLoop<void> | undefined;

  constructor(
    core: CoreV1Api,
    nodes: WatchedCollection<V1Node>,
    logger: Logger,
    onChange: () => void,
    clock: Clock = systemClock,
  ) {
    this.#core = core;
    this.#nodes = nodes;
    this.#logger = logger;
    this.#onChange = onChange;
    this.#clock = clock;
  }

  /** The last figures of each node that has any. */
  get figures(): ReadonlyMap<string, DiskFigures> {
    return this.#disk;
  }

  /**
   * Reads every node's Stats Summary, then again after `intervalMs`. A node that fails keeps its
   * last figures, or has none (a node without a kubelet, kwok's, never has any); its failure is
   * logged once, not every round, and its recovery once.
   */
  poll(intervalMs: number): void {
    const round = async () => {
      const nodes = [...this.#nodes.values()];
      const names = new Set(nodes.map((n) => n.metadata?.name ?? ""));
      for (const name of this.#disk.keys()) if (!names.has(name)) this.#disk.delete(name);
      for (const name of this.#failing) if (!names.has(name)) this.#failing.delete(name);
      for (const node of nodes) {
        const name = node.metadata?.name ?? "";
        if (this.#loop?.stopped) return;
        try {
          const text = await this.#core.connectGetNodeProxyWithPath({ name, path: "stats/summary" });
          const usage = diskUsageFromSummary(typeof text === "string" ? JSON.parse(text) : text);
          if (!usage) throw new Error("the stats summary has no node filesystem figures");
          if (this.#failing.delete(name) || this.#forbidden)
            this.#logger.info("disk figures available again", { node: name });
          this.#forbidden = false;
          const before = this.#disk.get(name);
          if (usage.usedBytes !== before?.usedBytes || usage.totalBytes !== before?.totalBytes) {
            this.#disk.set(name, usage);
            this.#onChange();
          }
        } catch (err) {
          if (apiErrorCode(err) === 403) {
            if (!this.#forbidden)
              this.#logger.info(
                "no disk figures: this agent may not get nodes/proxy (grant it to see disk use)",
                {
                  error: describeApiError(err, `nodes/${name}/proxy/stats/summary`),
                },
              );
            this.#forbidden = true;
            return;
          }
          if (this.#failing.has(name)) continue;
          this.#failing.add(name);
          this.#logger.info("no disk figures for this node (its kubelet stats summary cannot be read)", {
            node: name,
            error: describeApiError(err, `nodes/${name}/proxy/stats/summary`),
          });
        }
      }
    };
    this.#loop = new ApplyLoop<void>({
      name: "disk figures",
      run: async () => {
        await round();
        return { requeueAfter: intervalMs };
      },
      clock: this.#clock,
      logger: this.#logger,
    });
    // a failed round is logged by the loop and tried again
    this.#loop.set().catch(() => undefined);
  }

  stop(): Promise<void> {
    return this.#loop?.stop() ?? Promise.resolve();
  }
}
