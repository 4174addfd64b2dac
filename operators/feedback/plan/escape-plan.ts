// Every string of a plan comes from the repository or the hub: keys, names, diagnostics, API
// server messages. Renderers work on this copy, where control characters are visible escapes
// (lib/terminal-text.ts); a diff or an Addon's rendered manifest keeps its line breaks and each of
// its lines is escaped.
import { escapeControl, escapeStrings } from "../../lib/terminal-text.ts";
import type { Plan } from "./types.ts";

export function escapePlan(plan: Plan): Plan {
  const escaped = escapeStrings({
    ...plan,
    changes: plan.changes.map((c) => ({ ...c, diff: "" })),
    addons: plan.addons.map((a) => ({ ...a, manifest: "" })),
    bundles: plan.bundles.map((b) => ({ ...b, diff: "" })),
  });
  const lines = (text: string) => text.split("\n").map(escapeControl).join("\n");
  escaped.changes.forEach((change, i) => {
    change.diff = lines(plan.changes[i]?.diff ?? "");
  });
  escaped.addons.forEach((addon, i) => {
    addon.manifest = lines(plan.addons[i]?.manifest ?? "");
  });
  escaped.bundles.forEach((row, i) => {
    row.diff = lines(plan.bundles[i]?.diff ?? "");
  });
  return escaped;
}
