// The Workflow's scheduling decision as a pure function: given the DAG and what each node's
// Job is doing in the current run, which Jobs to create, which to stop, and what to report.
// No I/O, so every combination of phases can be tried (tests/controllers/workflow/dag.test.ts).

import type { JobPhase } from "../../api/index.ts";

export interface DagNode {
  name: string;
  dependsOn?: readonly string[];
}

export type FailurePolicy = "StopAll" | "ContinueIndependent";

/** What the controller sees of one node's Job in the current run (absent: not created). */
export interface NodeObservation {
  /** undefined: created, not yet seen by the Job controller; it counts as Pending. */
  phase?: JobPhase | undefined;
  /** spec.stopped is already set on the Job. */
  stopRequested?: boolean;
}

/** A node's phase in Workflow status: its Job's phase, or Pending / Skipped before it has one. */
export type NodePhase = JobPhase | "Skipped";

export type WorkflowRunPhase = "Pending" | "Running" | "Succeeded" | "Failed";

export interface DagInput {
  nodes: readonly DagNode[];
  observed: ReadonlyMap<string, NodeObservation>;
  failurePolicy: FailurePolicy;
}

export interface DagDecision {
  /** Nodes whose Job to create now, in spec order. */
  start: string[];
  /** Nodes whose Job to stop now (set spec.stopped), in spec order. */
  stop: string[];
  /** Phase per node, for status. */
  phases: Map<string, NodePhase>;
  /** Nodes that ended without success (Failed, or stopped under them), in spec order. */
  broken: string[];
  /** The run's phase. */
  phase: WorkflowRunPhase;
}

/** Ended, or ending, without success: its dependants can never run. */
function isBroken(phase: JobPhase): boolean {
  return phase === "Failed" || phase === "Stopping" || phase === "Stopped";
}

function isActive(phase: JobPhase): boolean {
  return phase === "Pending" || phase === "Running" || phase === "Stopping";
}

/**
 * StopAll: once any node is broken nothing new starts and every Pending or Running Job is stopped;
 * nodes never created are Skipped. ContinueIndependent: a node that (transitively) depends on a
 * broken node is Skipped; everything else runs. A node starts when every dependency Succeeded.
 * A dependency naming no node of the DAG is never satisfied (the validator refuses such DAGs).
 */
export function decide(input: DagInput): DagDecision {
  const { nodes, observed } = input;
  const phaseOf = (name: string): JobPhase | undefined => {
    const seen = observed.get(name);
    return seen === undefined ? undefined : (seen.phase ?? "Pending");
  };
  const broken = nodes.filter((n) => {
    const p = phaseOf(n.name);
    return p !== undefined && isBroken(p);
  });
  const stopEverything = input.failurePolicy === "StopAll" && broken.length > 0;

  // Blocked: some dependency is broken, or is itself blocked (and so will never succeed). Memoised DFS; a cycle
  // (refused by the validator) is cut by treating an in-progress node as not blocked.
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const blocked = new Map<string, boolean>();
  const isBlocked = (name: string): boolean => {
    const known = blocked.get(name);
    if (known !== undefined) return known;
    blocked.set(name, false);
    let result = false;
    for (const dep of byName.get(name)?.dependsOn ?? []) {
      const p = phaseOf(dep);
      // A dependency that succeeded has done its part, whatever happened above it.
      if (p === "Succeeded") continue;
      if ((p !== undefined && isBroken(p)) || isBlocked(dep)) {
        result = true;
        break;
      }
    }
    blocked.set(name, result);
    return result;
  };

  const start: string[] = [];
  const stop: string[] = [];
  const phases = new Map<string, NodePhase>();
  for (const node of nodes) {
    const seen = observed.get(node.name);
    const phase = phaseOf(node.name);
    if (phase !== undefined) {
      phases.set(node.name, phase);
      if (stopEverything && (phase === "Pending" || phase === "Running") && !seen?.stopRequested)
        stop.push(node.name);
      continue;
    }
    if (stopEverything || isBlocked(node.name)) {
      phases.set(node.name, "Skipped");
      continue;
    }
    phases.set(node.name, "Pending");
    const ready = (node.dependsOn ?? []).every((dep) => phaseOf(dep) === "Succeeded");
    if (ready) start.push(node.name);
  }

  const anyActive = nodes.some((n) => {
    const p = phaseOf(n.name);
    return p !== undefined && isActive(p);
  });
  let phase: WorkflowRunPhase;
  if (!anyActive && start.length === 0) {
    const waiting = [...phases.values()].some((p) => p === "Pending");
    if (broken.length > 0 || [...phases.values()].some((p) => p === "Skipped")) phase = "Failed";
    else if (waiting) phase = "Running";
    else phase = "Succeeded";
  } else {
    const progressed = nodes.some((n) => {
      const p = phaseOf(n.name);
      return p !== undefined && p !== "Pending";
    });
    phase = progressed ? "Running" : "Pending";
  }
  return { start, stop, phases, broken: broken.map((n) => n.name), phase };
}
