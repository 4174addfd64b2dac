// The hub's GET /api/v1/source as a test reads it: which revision git last offered and why the
// hub refused it, for the tests of commits that must be refused.
import type { Hub } from "../../operators/hub/hub.ts";
import { onRealServers, waitFor } from "./wait-for.ts";

export interface SourceStatus {
  state?: string;
  lastAttemptedRevision?: string;
  errors?: Array<{ file: string; line: number; path: string; rule: string; message: string }>;
}

export async function sourceStatus(hub: Hub): Promise<SourceStatus> {
  const response = await fetch(`${hub.url}/api/v1/source`, {
    headers: { authorization: `Bearer ${hub.adminToken}` },
  });
  return (await response.json()) as SourceStatus;
}

/** Waits until the hub has tried `revision` and found it Invalid; the status that says why. */
export async function refusedRevision(hub: Hub, revision: string): Promise<SourceStatus> {
  let seen: SourceStatus = {};
  await waitFor(
    "the revision refused",
    async () => {
      seen = await sourceStatus(hub);
      return seen.lastAttemptedRevision === revision && seen.state === "Invalid";
    },
    onRealServers,
  );
  return seen;
}
