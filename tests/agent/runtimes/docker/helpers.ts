// A docker runtime on the test's own engine, and Docker Tasks to hand it.
import { randomUUID } from "node:crypto";
import type { Test } from "tap";
import {
  DockerRuntime,
  type DockerRuntimeOptions,
} from "../../../../operators/agent/runtimes/docker/index.ts";
import type { DockerWorkload, ObservedPod, RuntimeTask } from "../../../../operators/agent/runtimes/types.ts";
import type { Dockerd } from "../../../helpers/dockerd.ts";
import { type WaitOptions, waitFor } from "../../../helpers/wait-for.ts";

export const NAMESPACE = "agent-edge";

/** Containers come and go on a real engine, on a busy machine. */
export const onEngine: WaitOptions = { attempts: 600, everyMs: 100 };

export async function openDockerRuntime(
  t: Test,
  engine: Dockerd,
  options: Partial<DockerRuntimeOptions> = {},
): Promise<DockerRuntime> {
  const runtime = await DockerRuntime.open({
    dockerHost: engine.host,
    nodeName: "robot",
    terminationGracePeriodMs: 2000,
    pollIntervalMs: 200,
    backoff: { initialMs: 200, maxMs: 1000 },
    ...options,
  });
  t.teardown(() => runtime.stop());
  return runtime;
}

export function dockerTask(
  name: string,
  docker: Partial<DockerWorkload>,
  options: { job?: string; uid?: string } = {},
): RuntimeTask {
  return {
    metadata: { name, namespace: NAMESPACE, uid: options.uid ?? randomUUID(), generation: 1 },
    spec: {
      job: options.job ?? "job",
      task: name,
      agentType: "Docker",
      docker: { image: "rlark-test/busybox:1", ...docker },
    },
  };
}

export function podOf(runtime: DockerRuntime, name: string): ObservedPod | undefined {
  return runtime.observe().pods.find((p) => p.name === name && p.namespace === NAMESPACE);
}

export function waitForPod(
  runtime: DockerRuntime,
  name: string,
  what: string,
  check: (pod: ObservedPod) => boolean,
): Promise<ObservedPod> {
  return waitFor(
    `pod ${name} ${what}`,
    () => {
      const pod = podOf(runtime, name);
      return pod && check(pod) ? pod : undefined;
    },
    onEngine,
  );
}

/** The engine's containers for one pod, by its labels: never more than one. */
export async function containersOf(engine: Dockerd, pod: string) {
  return engine.client.listContainers({
    all: true,
    filters: { label: [`rlinf.io/pod=${pod}`, `rlinf.io/namespace=${NAMESPACE}`] },
  });
}
