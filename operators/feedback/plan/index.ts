// The plan of a revision against the live state: created, changed and deleted objects with YAML
// diffs, placement preview, Domain pool impact, Addon changes per cluster and server-side dry-runs.
//
//   const plan = await planTree({ dir, revision, live: await liveFromStore(store), against: "the live state" });
//   renderPlanMarkdown(plan) / renderPlanText(plan) / renderPlanJson(plan); planFailed(plan)
//
// computePlan is pure (golden-tested); planTree adds the I/O: validation on disk and dry-runs.

export { type PlanTreeOptions, planTree } from "./build.ts";
export {
  type BundleDryRunner,
  type BundleDryRunOutcome,
  type BundlePlanInput,
  bundleObjectRow,
  planBundles,
  TOO_LARGE_TO_DIFF,
} from "./bundle-plan.ts";
export { type ComputePlanInput, computePlan, DRY_RUN_UNAVAILABLE, NOT_PREVIEWED_INVALID } from "./compute.ts";
export {
  type DryRunOutcome,
  OFFLINE_MESSAGE,
  type RenderedWorkload,
  renderWorkload,
  runDryRuns,
  type WorkloadDryRunner,
} from "./dry-run.ts";
export { type CheckedOutTree, checkoutRevision, repositoryRoot } from "./git-tree.ts";
export { createTunnelDryRunner, type TunnelDryRunnerOptions } from "./kube-dry-run.ts";
export { unifiedDiff } from "./line-diff.ts";
export {
  type HubApiOptions,
  LIVE_KINDS,
  liveFromHub,
  liveFromManifests,
  liveFromStore,
} from "./live-state.ts";
export { PLACEMENT_UNAVAILABLE } from "./placement-preview.ts";
export { type MarkdownOptions, planVerdict, renderPlanMarkdown } from "./render-markdown.ts";
export { renderPlanJson, renderPlanText } from "./render-text.ts";
export type {
  BundleObjectResult,
  BundleObjectState,
  ChangeAction,
  DomainImpact,
  DryRunResult,
  DryRunState,
  JobPlacement,
  ObjectChange,
  PlacedTask,
  Plan,
  PlanCounts,
} from "./types.ts";
export { type AddonImpact, planConcerns, planFailed } from "./types.ts";
