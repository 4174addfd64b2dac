// The agent's answer to a plan's `dry-run` request: a server-side apply with dryRun=All under
// the agent's own field manager and credentials. The API server validates and admits the object
// as it would for real and persists nothing; its refusal message goes back to the plan as is.
import { ApiException, type KubeConfig, KubernetesObjectApi, PatchStrategy } from "@kubernetes/client-node";
import { AGENT_FIELD_MANAGER } from "../../../api/index.ts";
import { clipDryRunMessage, type DryRunAnswer, type DryRunRequest } from "../../../lib/tunnel/index.ts";

/** The `message` of the Status the API server answered with (the client hands over its text). */
function messageOf(body: unknown): string | undefined {
  let status: unknown = body;
  if (typeof body === "string") {
    try {
      status = JSON.parse(body);
    } catch {
      return undefined;
    }
  }
  const message = (status as { message?: unknown } | null)?.message;
  return typeof message === "string" && message !== "" ? clipDryRunMessage(message) : undefined;
}

export function kubernetesDryRun(kubeConfig: KubeConfig): (request: DryRunRequest) => Promise<DryRunAnswer> {
  const objects = KubernetesObjectApi.makeApiClient(kubeConfig);
  return async ({ object }) => {
    try {
      await objects.patch(object, undefined, "All", AGENT_FIELD_MANAGER, true, PatchStrategy.ServerSideApply);
      return { state: "passed" };
    } catch (err) {
      // 4xx is the API server judging the object (invalid, namespace missing, denied by
      // admission); 401 and 5xx are about the agent or the server, not the object.
      if (err instanceof ApiException && err.code >= 400 && err.code < 500 && err.code !== 401) {
        return { state: "failed", message: messageOf(err.body) ?? `HTTP ${err.code}` };
      }
      const detail =
        err instanceof ApiException ? (messageOf(err.body) ?? `HTTP ${err.code}`) : (err as Error).message;
      return { state: "error", message: `the agent could not reach its API server: ${detail}` };
    }
  };
}
