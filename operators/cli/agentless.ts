// Runs the hub's agentless clusters (operators/agent/agentless) next to it once it leads: only
// the leader serves the agent tunnel the in-process agents connect to. Composed here because the
// hub may not import the agent (docs/adr/0010-agentless-clusters.md).
import path from "node:path";
import type { AgentlessOptions } from "../agent/agentless/index.ts";
import type { ClusterTestAnswer, Hub } from "../hub/index.ts";
import type { Logger } from "../lib/logger.ts";

export interface AgentlessRun {
  stop(): Promise<void>;
}

/** `tuning`: shorter retries and a runtime instance, for tests on a shared cluster. */
export async function runAgentlessClusters(
  hub: Hub,
  dataDir: string,
  logger: Logger,
  tuning: Pick<AgentlessOptions, "retryIntervalMs" | "reportIntervalMs" | "runtime"> = {},
): Promise<AgentlessRun & { clusters(): string[] }> {
  const { AgentlessClusters, NotAgentlessError } = await import("../agent/agentless/index.ts");
  const clusters = new AgentlessClusters({
    store: hub.store,
    keyring: hub.sealKeys,
    hub,
    createToken: async (cluster) =>
      (await hub.pki.enrollment.createToken({ cluster, ttlMs: 10 * 60_000 })).token,
    dir: path.join(dataDir, "agentless"),
    logger,
    ...tuning,
  });
  let started: Promise<void> | undefined;
  let stopped = false;
  // a standby starts them when it takes over (losing the lead ends the process)
  hub.onLeading(() => {
    if (stopped) return;
    started = clusters.start();
    hub.setClusterTester(async (name): Promise<ClusterTestAnswer> => {
      try {
        return { tested: true, ...(await clusters.test(name)) };
      } catch (error) {
        if (!(error instanceof NotAgentlessError)) throw error;
        return {
          tested: false,
          reason: error.notFound ? "NotFound" : "NotAgentless",
          message: error.message,
        };
      }
    });
  });
  return {
    clusters: () => clusters.clusters,
    async stop() {
      stopped = true;
      hub.setClusterTester(undefined);
      await started?.catch(() => undefined);
      await clusters.stop();
    },
  };
}
