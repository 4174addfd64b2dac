// A test hub's "local" cluster served by an in-process agent on the process runtime, up to the
// first pod that git's workloads start there Running: the setup of the tests that reach a pod
// through the hub (its logs, the HTTP and WebSocket proxies).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Test } from "tap";
import { ProcessRuntime, type ProcessRuntimeOptions } from "../../operators/agent/runtimes/process/index.ts";
import type { Hub } from "../../operators/hub/hub.ts";
import { silentLogger } from "../../operators/lib/logger.ts";
import type { KubeObject } from "../../operators/lib/store/index.ts";
import { startAgentOnHub } from "./agent-on-hub.ts";
import { type HubOnGitOptions, startHubOnGit } from "./hub-on-git.ts";
import { clusterYaml, rawJobYaml } from "./job-yaml.ts";
import { onRealServers, waitFor } from "./wait-for.ts";

/**
 * Waits for the Cluster "local" from git, runs its agent, and returns its first Running pod
 * (`what` names it in a timeout). Teardowns run last-in, first-out: the runtime stops with its
 * pods, then the agent, then the state dir goes.
 */
export async function runningProcessPod(
  t: Test,
  hub: Hub,
  what: string,
  runtimeOptions: Omit<ProcessRuntimeOptions, "stateDir" | "logger"> = {},
): Promise<KubeObject> {
  await waitFor("cluster from git", async () => hub.store.get("Cluster", undefined, "local"), onRealServers);
  const dir = await mkdtemp(path.join(tmpdir(), "rlark-process-pod-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const runtime = await ProcessRuntime.open({
    stateDir: path.join(dir, "runtime"),
    logger: silentLogger,
    ...runtimeOptions,
  });
  await startAgentOnHub(t, hub, "local", { runtime, runtimeKind: "process", reportIntervalMs: 500 });
  // Registered after the agent's, so it runs first: agent.stop() stops the runtime leaving its
  // pods running (for the next agent to adopt), after which terminatePods would find nothing.
  t.teardown(() => runtime.stop({ terminatePods: true }));
  return waitFor(
    `${what} Running`,
    async () =>
      (await hub.store.list("Pod", { namespace: "agent-local" })).items.find(
        (p) => (p.status as { phase?: string }).phase === "Running",
      ),
    onRealServers,
  );
}

/**
 * A hub whose git holds the "local" cluster and a Deployment `job` running `command` (a server the
 * test reaches through the hub), with that Deployment's Running pod.
 */
export async function serverPodOnHub(
  t: Test,
  job: string,
  command: string[],
  options: Omit<HubOnGitOptions, "files"> = {},
): Promise<{ hub: Hub; pod: KubeObject }> {
  const { hub } = await startHubOnGit(t, {
    ...options,
    files: {
      "cluster.yaml": clusterYaml("local"),
      [`${job}.yaml`]: rawJobYaml({ name: job, kind: "Deployment", command }),
    },
  });
  return { hub, pod: await runningProcessPod(t, hub, `the ${job} pod`) };
}
