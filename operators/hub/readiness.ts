// What /readyz answers. A hub is ready once it has loaded its repository: the first revision is
// applied, or refused (ready, but degraded: what it serves is not what git says). Before that the
// store holds nothing from git, and answers from it (a Cluster "not declared") would be wrong.
import type { SourceStatus } from "../source/index.ts";

export interface Readiness {
  ready: boolean;
  message: string;
}

export function hubReadiness(started: boolean, source: SourceStatus | undefined): Readiness {
  if (!started) return { ready: false, message: "not ready: starting" };
  if (!source) return { ready: true, message: "ok" };
  const revision = (source.lastAttemptedRevision ?? "").slice(0, 12);
  switch (source.state) {
    case "Synced":
      return { ready: true, message: "ok" };
    case "Invalid":
      return {
        ready: true,
        message: `degraded: revision ${revision} was refused (see GET /api/v1/source)`,
      };
    case "FetchFailed":
      // A restarted hub whose git server is down still serves the revision it applied before.
      if (source.lastAppliedRevision)
        return {
          ready: true,
          message: `degraded: fetching ${source.url} fails; serving revision ${source.lastAppliedRevision.slice(0, 12)}`,
        };
      return {
        ready: false,
        message: `not ready: the repository is not loaded yet (fetching ${source.url} fails)`,
      };
    default:
      return { ready: false, message: "not ready: the repository is not loaded yet" };
  }
}
