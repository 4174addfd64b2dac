// A plan's dry-run of one Bundle object (docs/bundles.md, "The plan"): the live object, and the
// server-side apply of the manifest with dryRun=All under the Bundle's field manager, forced, as
// the agent would apply it. The hub diffs the two; only fields the manifest sets can differ, as for
// drift. Both are stripped of bookkeeping (managedFields, resourceVersion, status, ...), and a pair
// larger than MAX_BUNDLE_DIFF_BYTES goes back without objects: the answer stays bounded.
//
// An object that exists without the Bundle's label was not created by it: the apply would be
// refused, and so is the dry-run, naming it. A namespace the cluster does not have yet is judged
// in the agent's own namespace, as for a Job's workloads (workloads/dry-run.ts).
import type { KubernetesObject, KubernetesObjectApi } from "@kubernetes/client-node";
import { PatchStrategy } from "@kubernetes/client-node";
import { BUNDLE_FIELD_MANAGER, BUNDLE_LABEL } from "../../../../api/index.ts";
import {
  clipDryRunMessage,
  type DryRunAnswer,
  type DryRunRequest,
  MAX_BUNDLE_DIFF_BYTES,
} from "../../../../lib/tunnel/index.ts";
import { apiErrorCode } from "../api-error.ts";
import { comparable } from "./drift.ts";

const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";

/** What the hub diffs: no bookkeeping, no last-applied copy (it repeats the object). */
export function diffable(object: KubernetesObject): Record<string, unknown> {
  const out = comparable(object) as { metadata: { annotations?: Record<string, string> } };
  const annotations = out.metadata.annotations;
  if (annotations && LAST_APPLIED in annotations) {
    const { [LAST_APPLIED]: _, ...rest } = annotations;
    out.metadata = { ...out.metadata, annotations: rest };
    if (Object.keys(rest).length === 0) delete out.metadata.annotations;
  }
  return out;
}

export interface BundleDryRunContext {
  objects: KubernetesObjectApi;
  /** Whether the namespace is certainly missing (404). */
  namespaceMissing(name: string): Promise<boolean>;
  /** The agent's own namespace: where an object of a namespace not there yet is judged. */
  agentNamespace: string;
  /** Asks the API server; 4xx other than 401 is "failed", anything else "error" (workloads/dry-run.ts). */
  ask(call: () => Promise<unknown>): Promise<DryRunAnswer>;
  /** Violations of the cluster's own OpenAPI schema, when it could be fetched (openapi-check.ts). */
  checkSchema?(object: Record<string, unknown>): Promise<string[]>;
}

export async function bundleDryRun(
  context: BundleDryRunContext,
  { object }: DryRunRequest,
): Promise<DryRunAnswer> {
  const manifest = object as unknown as KubernetesObject;
  const { namespace, name } = object.metadata;
  const bundle = object.metadata.labels?.[BUNDLE_LABEL];
  if (!bundle) return { state: "error", message: `a Bundle object needs the label ${BUNDLE_LABEL}` };
  const schema = (await context.checkSchema?.(object as unknown as Record<string, unknown>)) ?? [];
  const missing = await context.namespaceMissing(namespace);
  let live: KubernetesObject | null = null;
  if (!missing) {
    try {
      live = await context.objects.read({
        apiVersion: object.apiVersion,
        kind: object.kind,
        metadata: { name, namespace },
      });
    } catch (err) {
      if (apiErrorCode(err) !== 404) return context.ask(() => Promise.reject(err));
    }
  }
  if (live && live.metadata?.labels?.[BUNDLE_LABEL] !== bundle) {
    return {
      state: "failed",
      message: `${object.kind} ${namespace}/${name} exists on the cluster and was not created by Bundle "${bundle}": it would be left alone and the release fail`,
    };
  }
  const judged = missing
    ? { ...manifest, metadata: { ...manifest.metadata, namespace: context.agentNamespace } }
    : manifest;
  let result: KubernetesObject | undefined;
  const answer = await context.ask(async () => {
    result = await context.objects.patch(
      judged,
      undefined,
      "All",
      BUNDLE_FIELD_MANAGER,
      true,
      PatchStrategy.ServerSideApply,
    );
  });
  if (answer.state !== "passed" || !result) {
    // Server-side apply answers a wrong type with a 500 (it cannot build the typed patch): with the
    // cluster's schema naming the field, that is the object's fault, not the agent's.
    if (answer.state === "error" && schema.length > 0)
      return {
        state: "failed",
        message: clipDryRunMessage(`${schema.join("; ")} (the API server: ${answer.message})`),
      };
    if (answer.state !== "failed") return answer;
    const where = missing
      ? ` (judged in the Namespace ${context.agentNamespace}: ${namespace} does not exist yet and is created when the Bundle is applied)`
      : "";
    const findings = schema.length > 0 ? `; ${schema.join("; ")}` : "";
    return { state: "failed", message: clipDryRunMessage(`${answer.message}${where}${findings}`) };
  }
  const planned = diffable(result);
  if (missing) (planned.metadata as Record<string, unknown>).namespace = namespace;
  const pair = { live: live ? diffable(live) : null, planned };
  const extra = schema.length > 0 ? { schema } : {};
  if (Buffer.byteLength(JSON.stringify(pair)) > MAX_BUNDLE_DIFF_BYTES)
    return { state: "passed", tooLarge: true, ...extra };
  return { state: "passed", ...pair, ...extra };
}
