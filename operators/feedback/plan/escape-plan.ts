// Every string of a plan comes from the repository or the hub: keys, names, diagnostics, API
// server messages. Renderers work on this copy, where control characters are visible escapes
// (lib/terminal-text.ts); a diff keeps its line breaks and each of its lines is escaped.
import { escapeControl, escapeStrings } from "../../lib/terminal-text.ts";
import type { Plan } from "./types.ts";

export function escapePlan(plan: Plan): Plan {
  const escaped = escapeStrings({ ...plan, changes: plan.changes.map((c) => ({ ...c, diff: "" })) });
  escaped.changes.forEach((change, i) => {
    change.diff = (plan.changes[i]?.diff ?? "").split("\n").map(escapeControl).join("\n");
  });
  return escaped;
}
