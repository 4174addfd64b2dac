import type { Registry } from "../lib/metrics/index.ts";
import type { GitWatcher, SourceState } from "./git-watcher.ts";

const STATES: readonly SourceState[] = ["Synced", "Invalid", "FetchFailed", "Pending"];

/**
 * Exposes the git source on the hub's /metrics: the applied revision's age (alert when it grows
 * while commits keep arriving), time since the last good fetch, consecutive fetch failures, and
 * the state as a one-hot gauge. Values are read at scrape time; returns the unregister function.
 */
export function registerGitSourceMetrics(registry: Registry, watcher: GitWatcher): () => void {
  const labelNames = ["repo", "branch"];
  const revisionAge = registry.gauge({
    name: "rlark_source_revision_age_seconds",
    help: "Seconds since the running git revision was applied.",
    labelNames,
  });
  const fetchAge = registry.gauge({
    name: "rlark_source_last_fetch_age_seconds",
    help: "Seconds since the git source last fetched successfully.",
    labelNames,
  });
  const failures = registry.gauge({
    name: "rlark_source_fetch_failures",
    help: "Consecutive failed fetches of the tracked branch (0 when the last one worked).",
    labelNames,
  });
  const state = registry.gauge({
    name: "rlark_source_state",
    help: "1 for the git source's current state, 0 for the others.",
    labelNames: [...labelNames, "state"],
  });
  return registry.onCollect(() => {
    const status = watcher.status();
    const metrics = watcher.metrics();
    const labels = { repo: status.url, branch: status.branch };
    revisionAge.labels(labels).set(metrics.revisionAgeSeconds ?? Number.NaN);
    fetchAge.labels(labels).set(metrics.lastFetchAgeSeconds ?? Number.NaN);
    failures.labels(labels).set(metrics.consecutiveFetchFailures);
    for (const s of STATES) state.labels({ ...labels, state: s }).set(s === status.state ? 1 : 0);
  });
}
