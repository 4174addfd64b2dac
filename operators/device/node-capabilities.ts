// Publishes this node's capability files (lib/capability-status.ts: the device plugin's and the
// controllers', in the shared host directory) as conditions on this node's Node object
// (lib/capability-condition.ts), for the kubernetes agent, which runs elsewhere, to report them.
// A strategic merge patch of status.conditions (merged by type) leaves kubelet's own conditions
// alone. It needs `patch` on nodes/status and nothing else (docs/devices.md).
import { CoreV1Api, type KubeConfig, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { type CapabilityCondition, capabilityCondition } from "../lib/capability-condition.ts";
import { readCapabilityStatuses } from "../lib/capability-status.ts";
import type { Clock } from "../lib/clock.ts";
import type { Logger } from "../lib/logger.ts";

export interface NodeCapabilityOptions {
  kubeConfig: KubeConfig;
  nodeName: string;
  capabilityDir: string;
  intervalMs: number;
  clock: Clock;
  logger: Logger;
}

/**
 * Publishes at once and every intervalMs until the returned function is called, which publishes
 * one last time (the components' final states, e.g. STOPPED) and resolves when that is done.
 */
export function publishNodeCapabilities(options: NodeCapabilityOptions): () => Promise<void> {
  const api = options.kubeConfig.makeApiClient(CoreV1Api);
  const previous = new Map<string, CapabilityCondition>();
  const strategicMerge = setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch);
  let stopped = false;
  let timer: ReturnType<Clock["setTimeout"]> | undefined;
  let failing = false;
  const round = async () => {
    const now = options.clock.now();
    try {
      const capabilities = readCapabilityStatuses(options.capabilityDir, now);
      const conditions = capabilities.map((c) => capabilityCondition(c, now, previous.get(c.name)));
      if (conditions.length > 0) {
        await api.patchNodeStatus(
          { name: options.nodeName, body: { status: { conditions } } },
          strategicMerge,
        );
        capabilities.forEach((c, i) => {
          const condition = conditions[i];
          if (condition) previous.set(c.name, condition);
        });
      }
      if (failing) options.logger.info("node capabilities published again", { node: options.nodeName });
      failing = false;
    } catch (error) {
      // said once per outage, not once per round
      if (!failing)
        options.logger.warn("cannot publish node capabilities; retrying", {
          node: options.nodeName,
          error: (error as Error).message,
        });
      failing = true;
    }
    if (!stopped)
      timer = options.clock.setTimeout(() => {
        running = round();
      }, options.intervalMs);
  };
  let running = round();
  return async () => {
    stopped = true;
    if (timer) options.clock.clearTimeout(timer);
    await running;
    await round();
  };
}
