// A Bundle's diff against the live clusters (docs/bundles.md, "The plan"): for each planned
// Bundle, each Cluster its selector matches (with the labels git gives the Clusters) and each of
// its objects, the cluster's agent reads the live object and server-side applies the manifest as
// a dry run under the Bundle's field manager; the plan shows the unified diff of the two, or the
// API server's refusal. Objects the Bundle no longer holds are listed as deleted where it prunes.
// The agent does the requests with its own credentials (kube-dry-run.ts); without a runner (the
// CLI without a hub) there are no rows.
import { stringify } from "yaml";
import type { Bundle, Cluster } from "../../api/index.ts";
import { compileLabelSelector, type KubeObject, matches } from "../../lib/store/index.ts";
import { OFFLINE_MESSAGE } from "./dry-run.ts";
import { unifiedDiff } from "./line-diff.ts";
import type { BundleObjectResult } from "./types.ts";

export type BundleDryRunOutcome =
  | {
      state: "passed";
      /** The object on the cluster now; null when it is not there. Absent with tooLarge. */
      live?: Record<string, unknown> | null;
      /** The object as the apply would leave it. Absent with tooLarge. */
      planned?: Record<string, unknown>;
      tooLarge?: boolean;
      schema?: string[];
    }
  | { state: "failed"; message: string }
  | { state: "offline"; message?: string };

export interface BundleDryRunner {
  /** Dry-run of one Bundle object on `cluster`. Never throws: an unreachable agent is "offline". */
  dryRunBundleObject(cluster: string, object: Record<string, unknown>): Promise<BundleDryRunOutcome>;
}

export const TOO_LARGE_TO_DIFF = "too large to diff in a comment";

type Dict = Record<string, unknown>;

function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted);
  if (value === null || typeof value !== "object") return value;
  const out: Dict = {};
  for (const key of Object.keys(value).sort()) {
    const child = (value as Dict)[key];
    if (child !== undefined) out[key] = sorted(child);
  }
  return out;
}

const yaml = (object: Dict | null | undefined): string =>
  object ? stringify(sorted(object), { sortMapEntries: true, lineWidth: 0 }) : "";

function keyOf(object: Dict, namespace: string): string {
  const metadata = (object.metadata ?? {}) as { name?: string; namespace?: string };
  return `${String(object.kind)}/${metadata.namespace ?? namespace}/${metadata.name ?? ""}`;
}

const compare = (x: string, y: string): number => (x < y ? -1 : x > y ? 1 : 0);

function targetClusters(bundle: Bundle, clusters: readonly Cluster[]): string[] {
  let selector: ReturnType<typeof compileLabelSelector>;
  try {
    selector = compileLabelSelector(bundle.spec.clusterSelector);
  } catch {
    return [];
  }
  return clusters
    .filter((c) => matches(selector, c.metadata.labels))
    .map((c) => c.metadata.name)
    .sort(compare);
}

/** One object's row from the agent's answer. */
export function bundleObjectRow(
  base: Pick<BundleObjectResult, "bundle" | "cluster" | "object">,
  outcome: BundleDryRunOutcome,
): BundleObjectResult {
  if (outcome.state === "offline")
    return { ...base, state: "offline", diff: "", message: outcome.message ?? OFFLINE_MESSAGE, schema: [] };
  if (outcome.state === "failed")
    return { ...base, state: "failed", diff: "", message: outcome.message, schema: [] };
  const schema = outcome.schema ?? [];
  // The cluster's own schema refuses the object: the apply would fail there.
  const failed = schema.length > 0;
  if (outcome.tooLarge || !outcome.planned) {
    return {
      ...base,
      state: failed ? "failed" : outcome.live === null ? "create" : "change",
      diff: "",
      message: failed ? "the cluster's OpenAPI schema refuses it" : TOO_LARGE_TO_DIFF,
      schema,
    };
  }
  const diff = unifiedDiff(yaml(outcome.live), yaml(outcome.planned));
  const state = failed ? "failed" : outcome.live === null ? "create" : diff ? "change" : "unchanged";
  return {
    ...base,
    state,
    diff,
    message: failed ? "the cluster's OpenAPI schema refuses it" : "",
    schema,
  };
}

export interface BundlePlanInput {
  /** Planned, schema-valid Bundles, spec.objects filled by validation. */
  bundles: readonly Bundle[];
  /** Planned Clusters with the labels git gives them. */
  clusters: readonly Cluster[];
  /** The hub's live state: its Bundles say what each cluster holds now, for deletions. */
  live: readonly KubeObject[];
  runner: BundleDryRunner;
}

/** Every planned Bundle object on every target cluster, dry-run; deletions from the live Bundles. */
export async function planBundles(input: BundlePlanInput): Promise<BundleObjectResult[]> {
  const rows: BundleObjectResult[] = [];
  const liveBundles = new Map(
    input.live.filter((o) => o.kind === "Bundle").map((o) => [o.metadata.name, o as unknown as Bundle]),
  );
  const planned = new Map(input.bundles.map((b) => [b.metadata.name, b]));
  for (const bundle of input.bundles) {
    const name = bundle.metadata.name;
    const namespace = bundle.spec.namespace;
    const objects = (bundle.spec.objects ?? []) as Dict[];
    const clusters = targetClusters(bundle, input.clusters);
    for (const cluster of clusters) {
      for (const object of objects) {
        const base = { bundle: name, cluster, object: keyOf(object, namespace) };
        const outcome = await input.runner.dryRunBundleObject(cluster, object).catch(
          (error: unknown): BundleDryRunOutcome => ({
            state: "offline",
            message: `${OFFLINE_MESSAGE}: ${error instanceof Error ? error.message : String(error)}`,
          }),
        );
        rows.push(bundleObjectRow(base, outcome));
      }
    }
    // What the Bundle held and no longer does, on the clusters it is on and stays on.
    const before = liveBundles.get(name);
    if (!before || bundle.spec.prune === false) continue;
    const kept = new Set(objects.map((o) => keyOf(o, namespace)));
    const onClusters = (before.status?.clusters ?? [])
      .map((c) => c.cluster)
      .filter((c) => clusters.includes(c));
    for (const object of (before.spec.objects ?? []) as Dict[]) {
      const key = keyOf(object, before.spec.namespace);
      if (kept.has(key)) continue;
      for (const cluster of onClusters) rows.push(deletion(name, cluster, key, object));
    }
  }
  // A Bundle removed from git: its objects go from every cluster it is on, when it prunes.
  for (const [name, before] of liveBundles) {
    if (planned.has(name) || before.spec.prune === false) continue;
    for (const { cluster } of before.status?.clusters ?? [])
      for (const object of (before.spec.objects ?? []) as Dict[])
        rows.push(deletion(name, cluster, keyOf(object, before.spec.namespace), object));
  }
  return rows.sort(
    (a, b) => compare(a.cluster, b.cluster) || compare(a.bundle, b.bundle) || compare(a.object, b.object),
  );
}

function deletion(bundle: string, cluster: string, object: string, manifest: Dict): BundleObjectResult {
  return {
    bundle,
    cluster,
    object,
    state: "delete",
    diff: unifiedDiff(yaml(manifest), ""),
    message: "",
    schema: [],
  };
}
