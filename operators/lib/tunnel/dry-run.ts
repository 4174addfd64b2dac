// The `dry-run` stream purpose: the hub asks a cluster's agent to server-side apply one workload
// with dryRun=All, and the agent answers whether its API server would take it. The agent does
// the request with its own client and credentials; the hub only sees this answer.

export const DRY_RUN_PURPOSE = "dry-run";

/** The workloads a plan renders; the agent dry-runs nothing else. */
export const DRY_RUN_KINDS: Readonly<Record<string, readonly string[]>> = {
  "apps/v1": ["Deployment", "StatefulSet", "DaemonSet"],
  "batch/v1": ["Job"],
};

/**
 * The kinds a Bundle may hold (api/kubernetes-objects.ts BUNDLE_KINDS; a test keeps the two the
 * same), which a plan dry-runs with `bundle: true` to show their diff against the live cluster.
 * Never Secret.
 */
export const BUNDLE_DRY_RUN_KINDS: Readonly<Record<string, readonly string[]>> = {
  v1: ["ConfigMap", "PersistentVolumeClaim", "Pod", "Service", "ServiceAccount"],
  "apps/v1": ["DaemonSet", "Deployment", "StatefulSet"],
  "autoscaling/v2": ["HorizontalPodAutoscaler"],
  "batch/v1": ["CronJob", "Job"],
  "networking.k8s.io/v1": ["Ingress", "NetworkPolicy"],
  "policy/v1": ["PodDisruptionBudget"],
  "rbac.authorization.k8s.io/v1": ["Role", "RoleBinding"],
};

/** The two objects of a Bundle dry-run answer, together, at most: a larger pair is not diffed. */
export const MAX_BUNDLE_DIFF_BYTES = 256 * 1024;
/** The dry-run stream's answers: room for a Bundle object's live and planned forms. */
export const MAX_DRY_RUN_ANSWER_BYTES = MAX_BUNDLE_DIFF_BYTES + 16 * 1024;

/** API server messages can quote a whole object; a plan comment needs the first few lines. */
export const MAX_DRY_RUN_MESSAGE = 4096;

/** A namespaced workload; fields beyond these go to the API server unread. */
export interface DryRunObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; labels?: Record<string, string> };
  spec?: unknown;
}

export interface DryRunRequest {
  object: DryRunObject;
  /**
   * A Bundle's object (a plan's diff against the live cluster): applied with the Bundle's field
   * manager, and the answer carries the live object and the dry-run's result to diff.
   */
  bundle?: boolean;
}

/** What a Bundle dry-run saw: the object as it is (null: not there) and as the apply would leave it. */
export interface BundleDryRunObjects {
  live: Record<string, unknown> | null;
  planned: Record<string, unknown>;
}

export type DryRunAnswer =
  | ({ state: "passed" } & Partial<BundleDryRunObjects> & {
        /** The pair was over MAX_BUNDLE_DIFF_BYTES: no objects. */
        tooLarge?: boolean;
        /** Violations of the cluster's own OpenAPI schema (`/pointer: message`), when it was fetched. */
        schema?: string[];
      })
  /** The API server refused the object: its own message. */
  | { state: "failed"; message: string }
  /** The agent could not ask (API server unreachable, bad request): not the object's fault. */
  | { state: "error"; message: string };

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const nonEmpty = (v: unknown): v is string => typeof v === "string" && v !== "";

/** Checks a request from the hub field by field; throws naming the field. */
export function parseDryRunRequest(value: unknown): DryRunRequest {
  if (!isRecord(value) || !isRecord(value.object))
    throw new Error("dry-run request: object must be an object");
  const object = value.object;
  if (!nonEmpty(object.apiVersion) || !nonEmpty(object.kind)) {
    throw new Error("dry-run request: object.apiVersion and object.kind must be non-empty strings");
  }
  if (value.bundle !== undefined && typeof value.bundle !== "boolean")
    throw new Error("dry-run request: bundle must be a boolean");
  const bundle = value.bundle === true;
  const kinds = bundle ? BUNDLE_DRY_RUN_KINDS : DRY_RUN_KINDS;
  if (!kinds[object.apiVersion]?.includes(object.kind)) {
    throw new Error(
      `dry-run request: ${object.apiVersion} ${object.kind} is not ${bundle ? "a Bundle kind" : "a workload"} this agent dry-runs`,
    );
  }
  const metadata = object.metadata;
  if (!isRecord(metadata) || !nonEmpty(metadata.name) || !nonEmpty(metadata.namespace)) {
    throw new Error(
      "dry-run request: object.metadata.name and object.metadata.namespace must be non-empty strings",
    );
  }
  const { apiVersion, kind } = object;
  return {
    object: {
      ...object,
      apiVersion,
      kind,
      metadata: { ...metadata, name: metadata.name, namespace: metadata.namespace },
    },
    ...(bundle ? { bundle } : {}),
  };
}

export const clipDryRunMessage = (message: string): string =>
  message.length > MAX_DRY_RUN_MESSAGE ? `${message.slice(0, MAX_DRY_RUN_MESSAGE)}…` : message;

/** Checks an agent's answer; `{error}` is how the request stream reports a failed handler. */
export function parseDryRunAnswer(value: unknown): DryRunAnswer {
  if (!isRecord(value)) throw new Error("dry-run answer: not an object");
  if (value.state === "passed") return parsePassed(value);
  if ((value.state === "failed" || value.state === "error") && typeof value.message === "string") {
    return { state: value.state, message: clipDryRunMessage(value.message) };
  }
  if (value.state === undefined && typeof value.error === "string") {
    return { state: "error", message: clipDryRunMessage(value.error) };
  }
  throw new Error("dry-run answer: expected {state: passed | failed | error, message}");
}

/** A passed answer, with a Bundle dry-run's objects and schema findings when they are well formed. */
function parsePassed(value: Record<string, unknown>): DryRunAnswer {
  const schema = Array.isArray(value.schema)
    ? value.schema
        .filter((v): v is string => typeof v === "string")
        .slice(0, 32)
        .map(clipDryRunMessage)
    : undefined;
  const extra = {
    ...(value.tooLarge === true ? { tooLarge: true } : {}),
    ...(schema?.length ? { schema } : {}),
  };
  if (isRecord(value.planned) && (value.live === null || isRecord(value.live)))
    return { state: "passed", live: value.live, planned: value.planned, ...extra };
  return { state: "passed", ...extra };
}
