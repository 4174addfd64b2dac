// The I/O around computePlan: validate a checked-out revision, read the live state, dry-run.
import path from "node:path";
import { type Bundle, compareDiagnostics, type Job, type SealCheck } from "../../api/index.ts";
import type { KubeObject } from "../../lib/store/index.ts";
import { validatePaths } from "../../source/index.ts";
import { checkArtifacts } from "./artifacts.ts";
import { type BundleDryRunner, planBundles } from "./bundle-plan.ts";
import { computePlan, plannedClusters } from "./compute.ts";
import { runDryRuns, type WorkloadDryRunner } from "./dry-run.ts";
import { manifestFolder } from "./manifest-folder.ts";
import { manifestAsObject } from "./object-diff.ts";
import type { Plan } from "./types.ts";

export interface PlanTreeOptions {
  /** Root of the checked-out revision; diagnostics name files relative to it. */
  dir: string;
  /** Manifest paths inside `dir` (default ["."]). */
  paths?: string[];
  revision: string;
  live: readonly KubeObject[];
  against: string;
  /** Dry-runs Jobs' workloads, and Bundles' objects when it can (a diff against the live clusters). */
  dryRunner?: WorkloadDryRunner & Partial<BundleDryRunner>;
  /** Namespace the Kubernetes runtime puts workloads in (for dry-runs). Default "default". */
  workloadNamespace?: string;
  /** The hub's check of SealedSecret values (api/validate): a value it cannot open fails the plan. */
  sealCheck?: SealCheck;
}

export async function planTree(options: PlanTreeOptions): Promise<Plan> {
  const roots = (options.paths ?? ["."]).map((p) => path.resolve(options.dir, p));
  const validation = await validatePaths(roots, {
    baseDir: options.dir,
    ...(options.sealCheck ? { sealCheck: options.sealCheck } : {}),
  });
  if (validation.valid) {
    // The hub checks artifacts after validation, against the manifest folder: so does the plan.
    const artifactErrors = await checkArtifacts(validation.objects, await manifestFolder(roots));
    if (artifactErrors.length > 0) {
      validation.errors.push(...artifactErrors);
      validation.errors.sort(compareDiagnostics);
      validation.valid = false;
    }
  }
  const plan = computePlan({
    validation,
    catalog: validation.catalog,
    live: options.live,
    revision: options.revision,
    against: options.against,
  });
  if (!plan.valid || !options.dryRunner) return plan;
  const jobs = new Map<string, Job>();
  for (const m of validation.objects)
    if (m.kind === "Job" && m.schemaValid) jobs.set(m.name, manifestAsObject(m) as Job);
  plan.dryRun = await runDryRuns({
    jobs,
    placement: plan.placement,
    runner: options.dryRunner,
    namespace: options.workloadNamespace ?? "default",
  });
  plan.dryRunNote = "";
  const { dryRunBundleObject } = options.dryRunner;
  if (dryRunBundleObject) {
    const objects = validation.objects.filter((m) => m.schemaValid).map(manifestAsObject);
    plan.bundles = await planBundles({
      bundles: objects.filter((o): o is Bundle => o.kind === "Bundle"),
      clusters: plannedClusters(objects, options.live),
      live: options.live,
      runner: { dryRunBundleObject: dryRunBundleObject.bind(options.dryRunner) },
    });
  }
  return plan;
}
