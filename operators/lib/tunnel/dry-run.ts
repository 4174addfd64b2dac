// The `dry-run` stream purpose: the hub asks a cluster's agent to server-side apply one workload
// with dryRun=All, and the agent answers whether its API server would take it. The agent does
// the request with its own client and credentials; the hub only sees this answer.

export const DRY_RUN_PURPOSE = "dry-run";

/** The workloads a plan renders; the agent dry-runs nothing else. */
export const DRY_RUN_KINDS: Readonly<Record<string, readonly string[]>> = {
  "apps/v1": ["Deployment", "StatefulSet", "DaemonSet"],
  "batch/v1": ["Job"],
};

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
}

export type DryRunAnswer =
  | { state: "passed" }
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
  if (!DRY_RUN_KINDS[object.apiVersion]?.includes(object.kind)) {
    throw new Error(
      `dry-run request: ${object.apiVersion} ${object.kind} is not a workload this agent dry-runs`,
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
  };
}

export const clipDryRunMessage = (message: string): string =>
  message.length > MAX_DRY_RUN_MESSAGE ? `${message.slice(0, MAX_DRY_RUN_MESSAGE)}…` : message;

/** Checks an agent's answer; `{error}` is how the request stream reports a failed handler. */
export function parseDryRunAnswer(value: unknown): DryRunAnswer {
  if (!isRecord(value)) throw new Error("dry-run answer: not an object");
  if (value.state === "passed") return { state: "passed" };
  if ((value.state === "failed" || value.state === "error") && typeof value.message === "string") {
    return { state: value.state, message: clipDryRunMessage(value.message) };
  }
  if (value.state === undefined && typeof value.error === "string") {
    return { state: "error", message: clipDryRunMessage(value.error) };
  }
  throw new Error("dry-run answer: expected {state: passed | failed | error, message}");
}
