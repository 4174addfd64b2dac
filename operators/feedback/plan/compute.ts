// The plan as a function of a validated revision and the live state. Pure: no I/O, no clock,
// the same inputs give the same Plan (sorted everywhere), so it is golden-tested.
import type {
  Addon,
  AddonCatalog,
  Cluster,
  Domain,
  Job,
  ManifestObject,
  Team,
  ValidationResult,
} from "../../api/index.ts";
import type { KubeObject } from "../../lib/store/index.ts";
import { addonImpact } from "./addon-impact.ts";
import { domainImpact } from "./domain-impact.ts";
import { diffObjects, manifestAsObject } from "./object-diff.ts";
import { previewPlacement } from "./placement-preview.ts";
import type { Plan } from "./types.ts";

export interface ComputePlanInput {
  validation: ValidationResult;
  /** The catalog the revision was validated with: Addons' rendered objects are shown from it. */
  catalog?: AddonCatalog;
  live: readonly KubeObject[];
  revision: string;
  against: string;
}

export const NOT_PREVIEWED_INVALID = "not previewed: the revision is invalid and would be refused whole";
export const DRY_RUN_UNAVAILABLE = "dry-run unavailable: no agent tunnel to the target clusters";

function byName<T extends KubeObject>(objects: readonly ManifestObject[], kind: string): Map<string, T> {
  const out = new Map<string, T>();
  for (const m of objects) if (m.kind === kind && m.schemaValid) out.set(m.name, manifestAsObject(m) as T);
  return out;
}

export function computePlan(input: ComputePlanInput): Plan {
  const { validation, live } = input;
  const { changes, counts } = diffObjects(validation.objects, live);
  const plan: Plan = {
    revision: input.revision,
    against: input.against,
    valid: validation.valid,
    errors: validation.errors,
    warnings: validation.warnings,
    counts,
    changes,
    placement: [],
    placementNote: "",
    domains: [],
    addons: [],
    dryRun: [],
    dryRunNote: "",
    bundles: [],
  };
  if (!validation.valid) {
    plan.placementNote = NOT_PREVIEWED_INVALID;
    plan.dryRunNote = NOT_PREVIEWED_INVALID;
    return plan;
  }
  const jobs = byName<Job>(validation.objects, "Job");
  const preview = previewPlacement({ jobs, teams: byName<Team>(validation.objects, "Team"), changes, live });
  plan.placement = preview.placement;
  plan.placementNote = preview.note;
  plan.domains = domainImpact({ domains: byName<Domain>(validation.objects, "Domain"), jobs, changes, live });
  const objects = validation.objects.filter((m) => m.schemaValid).map(manifestAsObject);
  plan.addons = addonImpact({
    planned: objects.filter((o): o is Addon => o.kind === "Addon"),
    plannedClusters: plannedClusters(objects, live),
    live,
    ...(input.catalog ? { catalog: input.catalog } : {}),
  });
  plan.dryRunNote = DRY_RUN_UNAVAILABLE;
  return plan;
}

/** Planned Clusters with the labels git gives them (live objects carry no others). */
export function plannedClusters(objects: readonly KubeObject[], live: readonly KubeObject[]): Cluster[] {
  const liveStatus = new Map(
    live.filter((o) => o.kind === "Cluster").map((o) => [o.metadata.name, o.status]),
  );
  return objects
    .filter((o): o is Cluster => o.kind === "Cluster")
    .map((c) => ({ ...c, status: liveStatus.get(c.metadata.name) as Cluster["status"] }));
}
