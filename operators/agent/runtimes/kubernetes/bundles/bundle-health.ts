// An object's health as a Bundle reports it (docs/bundles.md), from the live object: workloads by
// their rollout (addon-rollout.ts, as `kubectl rollout status`), a Job by its Complete or Failed
// condition, a Pod by its phase; any other kind is healthy once it exists. Pure.
import type { KubernetesObject } from "@kubernetes/client-node";
import type { ObservedBundleObject } from "../../types.ts";
import { ROLLOUT_KINDS, rolloutProblem } from "../addons/addon-rollout.ts";

interface Conditioned {
  status?: { phase?: string; conditions?: { type?: string; status?: string; message?: string }[] };
}

export function bundleHealth(live: KubernetesObject): Pick<ObservedBundleObject, "health" | "message"> {
  const kind = live.kind ?? "";
  if (ROLLOUT_KINDS.has(kind)) {
    const problem = rolloutProblem(live);
    return problem ? { health: "Progressing", message: problem } : { health: "Healthy" };
  }
  const status = (live as Conditioned).status ?? {};
  if (kind === "Job") {
    const holds = (type: string) => status.conditions?.find((c) => c.type === type && c.status === "True");
    const failed = holds("Failed");
    if (failed) return { health: "Degraded", message: `failed: ${failed.message ?? "no message"}` };
    return holds("Complete") ? { health: "Healthy" } : { health: "Progressing", message: "not complete" };
  }
  if (kind === "Pod") {
    if (status.phase === "Running" || status.phase === "Succeeded") return { health: "Healthy" };
    if (status.phase === "Failed") return { health: "Degraded", message: "pod failed" };
    return { health: "Progressing", message: `pod ${status.phase ?? "Pending"}` };
  }
  return { health: "Healthy" };
}
