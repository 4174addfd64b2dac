// Objects as the hub's controllers, git and agents write them, for the agent-sync unit tests,
// and a logger that keeps what it was told.

import type { Logger } from "../../operators/lib/logger.ts";
import type { KubeObject } from "../../operators/lib/store/index.ts";

const apiVersion = "rlinf.io/v1alpha1";

/** A Task the Job controller placed on `cluster` (a Raw process, `python train.py`). */
export function task(cluster: string, name: string, extra: Partial<KubeObject["metadata"]> = {}): KubeObject {
  return {
    apiVersion,
    kind: "Task",
    metadata: { name, namespace: `agent-${cluster}`, labels: { "rlinf.io/job": "train" }, ...extra },
    spec: {
      job: "train",
      task: name,
      run: 1,
      role: "Actor",
      agentType: "Raw",
      raw: { command: ["python", "train.py"] },
    },
  };
}

/** A Pod mirror as an agent reports it, running `taskName`. */
export function pod(cluster: string, name: string, taskName: string): KubeObject {
  return {
    apiVersion,
    kind: "Pod",
    metadata: { name, namespace: `agent-${cluster}` },
    spec: { job: "train", task: taskName, node: `${cluster}-node-1` },
    status: { phase: "Running" },
  };
}

/** A Node as an agent reports it. */
export function node(cluster: string, name: string, labels: Record<string, string> = {}): KubeObject {
  return {
    apiVersion,
    kind: "Node",
    metadata: { name, namespace: `agent-${cluster}`, labels },
    status: { phase: "Online" },
  };
}

export function cluster(name: string, labels: Record<string, string> = {}): KubeObject {
  return { apiVersion, kind: "Cluster", metadata: { name, labels }, spec: { runtime: "process" } };
}

export interface LogLine {
  level: "info" | "warn" | "error";
  message: string;
  fields: Record<string, unknown> | undefined;
}

export function recordingLogger(): Logger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  const log = (level: LogLine["level"]) => (message: string, fields?: Record<string, unknown>) => {
    lines.push({ level, message, fields });
  };
  return { lines, info: log("info"), warn: log("warn"), error: log("error") };
}
