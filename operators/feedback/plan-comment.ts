// One plan comment per pull request, found again by a hidden marker and edited in place, so a
// pull request with twenty pushes still has one comment that shows the latest plan.
import type { FeedbackProvider, RepoRef } from "./providers/index.ts";

export const PLAN_MARKER = "<!-- rlark-plan -->";

/** The marker for one hub, so two hubs watching one repository keep a comment each. */
export function planMarker(hubName?: string): string {
  return hubName ? `<!-- rlark-plan hub=${hubName.replace(/[^A-Za-z0-9._-]/g, "_")} -->` : PLAN_MARKER;
}

/** Creates the comment, or edits the one that carries `marker`; returns its id. */
export async function upsertPlanComment(
  provider: FeedbackProvider,
  repo: RepoRef,
  pull: number,
  marker: string,
  markdown: string,
): Promise<{ id: number; created: boolean }> {
  const body = `${marker}\n${markdown}`;
  const existing = (await provider.listComments(repo, pull)).find((c) => c.body.startsWith(marker));
  if (existing) {
    if (existing.body !== body) await provider.updateComment(repo, existing.id, body);
    return { id: existing.id, created: false };
  }
  const created = await provider.createComment(repo, pull, body);
  return { id: created.id, created: true };
}
