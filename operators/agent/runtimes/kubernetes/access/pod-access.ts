// The agent's last check before it opens a pod's exec (sessions, files), port-forward or logs (seed 002): the hub
// has authorized the user, but only the agent knows whether the pod is one of its Tasks' pods
// (the labels it reports pods by) and whether it runs. A pod of another agent, or of nobody, in
// the same cluster is refused even though the agent's RBAC could reach it.
import type { V1Pod } from "@kubernetes/client-node";
import { owns } from "../watch/snapshot.ts";

export type PodVerb = "session" | "files" | "forward" | "logs";

export interface PodLookup {
  get(namespace: string, name: string): V1Pod | undefined;
}

/** The container the request names, or the pod's first; throws saying why it cannot be served. */
export function checkPodAccess(
  pods: PodLookup,
  instance: string | undefined,
  pod: { namespace: string; name: string; container?: string },
  verb: PodVerb,
): string {
  const key = `${pod.namespace}/${pod.name}`;
  const found = pods.get(pod.namespace, pod.name);
  if (!found || !owns(found, instance)) throw new Error(`pod ${key} is not one of this agent's pods`);
  const containers = found.spec?.containers ?? [];
  const container = pod.container ?? containers[0]?.name;
  if (!container || !containers.some((c) => c.name === container))
    throw new Error(`pod ${key} has no container ${pod.container ?? "(none)"}`);
  // logs are read after the pod ran too (previous, a finished Job)
  if (verb === "logs") return container;
  const phase = found.status?.phase ?? "Unknown";
  if (found.metadata?.deletionTimestamp || phase !== "Running")
    throw new Error(`pod ${key} is not running (${phase})`);
  if (verb === "session" || verb === "files") {
    const state = found.status?.containerStatuses?.find((s) => s.name === container)?.state;
    if (!state?.running) throw new Error(`container ${container} of pod ${key} is not running`);
  }
  return container;
}
