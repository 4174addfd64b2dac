// The agent's answer to a plan's `dry-run` request: a server-side apply with dryRun=All under
// the agent's own field manager and credentials. The API server validates and admits the object
// as it would for real and persists nothing; its refusal message goes back to the plan as is.
//
// The agent creates a missing namespace before it applies a Task (namespace.ts), so a namespace
// the cluster does not have yet is dry-run too: its creation, then the object in the agent's own
// namespace, since the API server judges nothing in a namespace that does not exist.
import {
  ApiException,
  CoreV1Api,
  type KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
} from "@kubernetes/client-node";
import { AGENT_FIELD_MANAGER } from "../../../../api/index.ts";
import { clipDryRunMessage, type DryRunAnswer, type DryRunRequest } from "../../../../lib/tunnel/index.ts";
import { apiErrorCode } from "../api-error.ts";
import { type BundleDryRunContext, bundleDryRun } from "../bundles/bundle-dry-run.ts";
import { DEFAULT_NAMESPACE } from "./render.ts";

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

/** What the API server said to one dry-run call. */
async function ask(call: () => Promise<unknown>): Promise<DryRunAnswer> {
  try {
    await call();
    return { state: "passed" };
  } catch (err) {
    // 4xx is the API server judging the object (invalid, denied by admission); 401 and 5xx are
    // about the agent or the server, not the object.
    if (err instanceof ApiException && err.code >= 400 && err.code < 500 && err.code !== 401) {
      return { state: "failed", message: messageOf(err.body) ?? `HTTP ${err.code}` };
    }
    const detail =
      err instanceof ApiException ? (messageOf(err.body) ?? `HTTP ${err.code}`) : (err as Error).message;
    return { state: "error", message: `the agent could not reach its API server: ${detail}` };
  }
}

/** True when the namespace is certainly missing (404); a 403 or any other answer says nothing. */
async function namespaceMissing(core: CoreV1Api, name: string): Promise<boolean> {
  try {
    await core.readNamespace({ name });
    return false;
  } catch (err) {
    return apiErrorCode(err) === 404;
  }
}

/**
 * `agentNamespace`: the agent's own namespace (it exists: the agent keeps its identity there).
 * `checkSchema`: a Bundle object's violations of the cluster's own OpenAPI schema (openapi/).
 */
export function kubernetesDryRun(
  kubeConfig: KubeConfig,
  agentNamespace = DEFAULT_NAMESPACE,
  checkSchema?: BundleDryRunContext["checkSchema"],
): (request: DryRunRequest) => Promise<DryRunAnswer> {
  const objects = KubernetesObjectApi.makeApiClient(kubeConfig);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const apply = (object: DryRunRequest["object"]) =>
    ask(() =>
      objects.patch(object, undefined, "All", AGENT_FIELD_MANAGER, true, PatchStrategy.ServerSideApply),
    );
  const bundleContext: BundleDryRunContext = {
    objects,
    namespaceMissing: (name) => namespaceMissing(core, name),
    agentNamespace,
    ask,
    ...(checkSchema ? { checkSchema } : {}),
  };
  return async (request) => {
    if (request.bundle) return bundleDryRun(bundleContext, request);
    const { object } = request;
    const namespace = object.metadata.namespace;
    if (!(await namespaceMissing(core, namespace))) return apply(object);
    const created = await ask(() =>
      core.createNamespace({ body: { metadata: { name: namespace } }, dryRun: "All" }),
    );
    if (created.state !== "passed") {
      return {
        ...created,
        message: clipDryRunMessage(`creating the Namespace ${namespace}: ${created.message}`),
      };
    }
    const answer = await apply({ ...object, metadata: { ...object.metadata, namespace: agentNamespace } });
    if (answer.state !== "failed") return answer;
    return {
      state: "failed",
      message: clipDryRunMessage(
        `${answer.message} (judged in the Namespace ${agentNamespace}: ${namespace} does not exist yet and is created when the Task is applied)`,
      ),
    };
  };
}
