// The hub's dry-runner: asks the agent of the cluster, over the tunnel's `dry-run` request
// stream, to server-side apply the workload with dryRun=All using its own client and
// credentials. The hub has no network path to any API server. An agent that is away, or that
// could not ask its API server, makes the result "offline", never an error of the PR.
import { type DryRunObject, type DryRunRequest, parseDryRunAnswer } from "../../lib/tunnel/index.ts";
import type { BundleDryRunner, BundleDryRunOutcome } from "./bundle-plan.ts";
import {
  type DryRunOutcome,
  OFFLINE_MESSAGE,
  type RenderedWorkload,
  type WorkloadDryRunner,
} from "./dry-run.ts";

export interface TunnelDryRunnerOptions {
  /** Sends one request to the cluster's agent, e.g. `(c, body) => tunnel.request(c, DRY_RUN_PURPOSE, body)`. */
  request: (cluster: string, body: DryRunRequest) => Promise<unknown>;
}

export function createTunnelDryRunner(options: TunnelDryRunnerOptions): WorkloadDryRunner & BundleDryRunner {
  return {
    /** The same stream, with `bundle: true`: the agent answers the live object and the dry-run's result. */
    async dryRunBundleObject(cluster: string, object: Record<string, unknown>): Promise<BundleDryRunOutcome> {
      let answer: ReturnType<typeof parseDryRunAnswer>;
      try {
        answer = parseDryRunAnswer(
          await options.request(cluster, { object: object as unknown as DryRunObject, bundle: true }),
        );
      } catch (error) {
        return {
          state: "offline",
          message: `${OFFLINE_MESSAGE} (${error instanceof Error ? error.message : String(error)})`,
        };
      }
      if (answer.state === "error")
        return { state: "offline", message: `${OFFLINE_MESSAGE} (${answer.message})` };
      return answer;
    },
    async dryRun(cluster: string, workload: RenderedWorkload): Promise<DryRunOutcome> {
      let answer: ReturnType<typeof parseDryRunAnswer>;
      try {
        answer = parseDryRunAnswer(await options.request(cluster, { object: workload }));
      } catch (error) {
        return {
          state: "offline",
          message: `${OFFLINE_MESSAGE} (${error instanceof Error ? error.message : String(error)})`,
        };
      }
      if (answer.state === "error")
        return { state: "offline", message: `${OFFLINE_MESSAGE} (${answer.message})` };
      return answer;
    },
  };
}
