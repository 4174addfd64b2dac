// The plan of a pull request (or of `rlark plan`): what merging it would do to the hub's live
// state. Plain data, sorted, so the JSON form is stable and renderers are pure functions of it.
import type { Diagnostic } from "../../api/index.ts";

export type ChangeAction = "create" | "change" | "delete";

export interface ObjectChange {
  action: ChangeAction;
  kind: string;
  name: string;
  /** "" for cluster-scoped objects. */
  namespace: string;
  /** `path:line` in the planned revision; "" for a deletion. */
  file: string;
  /** Unified diff of the object's YAML (spec, labels and annotations, keys sorted); "" when none. */
  diff: string;
}

export interface PlacedTask {
  task: string;
  cluster: string;
  /** `node×replicas`, the nodes placement counted the replicas on. */
  nodes: string[];
}

export type PlacementState = "placed" | "unschedulable" | "waiting" | "stopped" | "unavailable";

export interface JobPlacement {
  job: string;
  state: PlacementState;
  tasks: PlacedTask[];
  /** Why the Job cannot be placed or would wait for quota, or why there is no preview. */
  message: string;
}

export interface DomainImpact {
  domain: string;
  cidr: string;
  /** Addresses the range can hand out. */
  usable: number;
  /** Addresses allocated now (from the live Domain's status). */
  allocated: number;
  /** Further pods the planned Jobs in the Domain would add. */
  requested: number;
  /** usable − allocated − requested; negative means the pool runs out. */
  free: number;
  /** Allocated addresses the planned CIDR no longer holds. */
  outOfRange: number;
}

export type AddonAction = "install" | "upgrade" | "downgrade" | "reconfigure" | "uninstall";

export interface AddonImpact {
  addon: string;
  cluster: string;
  action: AddonAction;
  /** Version installed now; "" for an install. */
  from: string;
  /** Version planned; "" for an uninstall. */
  to: string;
  /** The rendered objects the cluster's agent would apply, as `Kind namespace/name`; [] for an uninstall. */
  objects: string[];
  /** Those objects as multi-document YAML, exactly as rendered; "" for an uninstall. */
  manifest: string;
}

export type DryRunState = "passed" | "failed" | "offline" | "skipped";

export interface DryRunResult {
  cluster: string;
  /** `<Kind>/<namespace>/<name>` of the rendered workload. */
  object: string;
  /** The Job and task template it was rendered from. */
  job: string;
  task: string;
  state: DryRunState;
  /** The API server's message on failure, why it was skipped, or "cluster offline, not dry-run". */
  message: string;
}

/**
 * One object of a Bundle on one target cluster, from the agent's server-side dry-run: created,
 * changed (with the diff of the live object against the dry-run's result), unchanged, deleted (it
 * leaves the Bundle and the Bundle prunes), or failed / offline / skipped with the reason.
 */
export type BundleObjectState =
  | "create"
  | "change"
  | "unchanged"
  | "delete"
  | "failed"
  | "offline"
  | "skipped";

export interface BundleObjectResult {
  bundle: string;
  cluster: string;
  /** `<Kind>/<namespace>/<name>`. */
  object: string;
  state: BundleObjectState;
  /** Unified diff, live → after the apply (YAML, keys sorted); "" when none or not computed. */
  diff: string;
  /** The API server's refusal, why it was skipped, or a finding about the object. */
  message: string;
  /** Violations of the cluster's own OpenAPI schema, as `/pointer: message`. */
  schema: string[];
}

export interface PlanCounts {
  create: number;
  change: number;
  delete: number;
  unchanged: number;
}

export interface Plan {
  /** The planned revision (a commit id), or "" for a working tree. */
  revision: string;
  /** What the plan is measured against: "live state of <hub>", "base <ref>" or "empty state". */
  against: string;
  valid: boolean;
  errors: Diagnostic[];
  warnings: Diagnostic[];
  counts: PlanCounts;
  changes: ObjectChange[];
  placement: JobPlacement[];
  /** Set when no placement preview could be made at all (no Cluster or Node reports). */
  placementNote: string;
  domains: DomainImpact[];
  addons: AddonImpact[];
  dryRun: DryRunResult[];
  /** Set when no dry-run ran at all (no tunnel on this hub, or the CLI without a hub). */
  dryRunNote: string;
  /** Each Bundle object on each target cluster, against the live cluster (bundle-plan.ts). */
  bundles: BundleObjectResult[];
}

/**
 * A plan fails review when the revision is invalid or a target cluster's API server refused a
 * workload. A Job that cannot be placed now, or a Domain pool that would run out, is worth a
 * reviewer's eye but not a red status: capacity changes, and the Job waits for it.
 */
export function planFailed(plan: Plan): boolean {
  return (
    !plan.valid ||
    plan.dryRun.some((d) => d.state === "failed") ||
    plan.bundles.some((b) => b.state === "failed")
  );
}

/** Findings that do not fail the plan but belong in its summary. */
export function planConcerns(plan: Plan): string[] {
  const concerns: string[] = [];
  const unplaced = plan.placement.filter((p) => p.state === "unschedulable").length;
  if (unplaced > 0) concerns.push(`${unplaced} Job${unplaced === 1 ? "" : "s"} cannot be placed now`);
  const waiting = plan.placement.filter((p) => p.state === "waiting").length;
  if (waiting > 0) concerns.push(`${waiting} Job${waiting === 1 ? "" : "s"} would wait for quota`);
  const exhausted = plan.domains.filter((d) => d.free < 0).length;
  if (exhausted > 0) concerns.push(`${exhausted} Domain pool${exhausted === 1 ? "" : "s"} would run out`);
  const offlineClusters = new Set([
    ...plan.dryRun.filter((d) => d.state === "offline").map((d) => d.cluster),
    ...plan.bundles.filter((b) => b.state === "offline").map((b) => b.cluster),
  ]);
  const offline = offlineClusters.size;
  if (offline > 0) concerns.push(`${offline} cluster${offline === 1 ? "" : "s"} offline, not dry-run`);
  return concerns;
}
