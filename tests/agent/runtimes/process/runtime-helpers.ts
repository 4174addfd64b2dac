// Opens a ProcessRuntime with every delay shortened to milliseconds, torn down with the test.
import type { Test } from "tap";
import {
  ProcessRuntime,
  type ProcessRuntimeOptions,
} from "../../../../operators/agent/runtimes/process/index.ts";
import type { ObservedPod } from "../../../../operators/agent/runtimes/types.ts";
import { onProcesses, type WaitOptions, waitFor } from "../../../helpers/wait-for.ts";
import { tempDir } from "./helpers.ts";

export const fastOptions = {
  nodeName: "test-node",
  internalIP: "127.0.0.1",
  nvidiaSmi: "/nonexistent/nvidia-smi",
  terminationGracePeriodMs: 2_000,
  backoff: { initialMs: 60, maxMs: 500, resetAfterMs: 60_000 },
  pollIntervalMs: 20,
} satisfies Omit<ProcessRuntimeOptions, "stateDir">;

export async function openRuntime(
  t: Test,
  options: Partial<ProcessRuntimeOptions> = {},
): Promise<{ runtime: ProcessRuntime; stateDir: string }> {
  const stateDir = options.stateDir ?? tempDir(t);
  const runtime = await ProcessRuntime.open({ ...fastOptions, ...options, stateDir });
  t.teardown(() => runtime.stop({ terminatePods: true }));
  return { runtime, stateDir };
}

export function pod(runtime: ProcessRuntime, name: string): ObservedPod | undefined {
  return runtime.observe().pods.find((p) => p.name === name);
}

export function waitForPod(
  runtime: ProcessRuntime,
  name: string,
  what: string,
  predicate: (pod: ObservedPod) => boolean,
  options: WaitOptions = onProcesses,
): Promise<ObservedPod> {
  return waitFor(
    `${name} ${what}`,
    () => {
      const found = pod(runtime, name);
      return found && predicate(found) ? found : undefined;
    },
    options,
  );
}
