// The plan for a terminal or a CI log.
import { formatDiagnostic } from "../../api/index.ts";
import { terminalJson } from "../../lib/terminal-text.ts";
import { escapePlan } from "./escape-plan.ts";
import { planVerdict } from "./render-markdown.ts";
import { type Plan, planConcerns, planFailed } from "./types.ts";

const SIGN = { create: "+", change: "~", delete: "-" } as const;

function indent(text: string, by = "    "): string {
  return text
    .split("\n")
    .filter((line, i, all) => line !== "" || i < all.length - 1)
    .map((line) => `${by}${line}`)
    .join("\n");
}

export function renderPlanText(raw: Plan): string {
  const plan = escapePlan(raw);
  const out: string[] = [];
  const revision = plan.revision ? plan.revision.slice(0, 12) : "working tree";
  out.push(
    `RLark plan for ${revision} against ${plan.against}: ${planVerdict(plan)} (${plan.counts.unchanged} unchanged)`,
  );
  for (const concern of planConcerns(plan)) out.push(`warning: ${concern}`);
  if (plan.errors.length > 0) {
    out.push("", "Errors:");
    for (const e of plan.errors) out.push(`  ${formatDiagnostic(e)}`);
  }
  if (plan.warnings.length > 0) {
    out.push("", "Warnings:");
    for (const w of plan.warnings) out.push(`  ${formatDiagnostic(w)}`);
  }
  if (plan.changes.length > 0) {
    out.push("", "Objects:");
    for (const c of plan.changes) {
      const ns = c.namespace ? ` -n ${c.namespace}` : "";
      out.push(`  ${SIGN[c.action]} ${c.kind} ${c.name}${ns}${c.file ? ` (${c.file})` : ""}`);
      if (c.action === "change" && c.diff) out.push(indent(c.diff));
    }
  }
  out.push("", "Placement:");
  if (plan.placement.length === 0) out.push(`  ${plan.placementNote || "no new or changed Jobs"}`);
  for (const p of plan.placement) {
    if (p.state !== "placed") {
      out.push(
        `  Job ${p.job}: ${p.state === "unschedulable" ? `cannot be placed: ${p.message}` : p.message}`,
      );
      continue;
    }
    for (const t of p.tasks) out.push(`  Job ${p.job} task ${t.task} → ${t.cluster} (${t.nodes.join(", ")})`);
  }
  if (plan.domains.length > 0) {
    out.push("", "Domain address pools:");
    for (const d of plan.domains) {
      out.push(
        `  ${d.domain} ${d.cidr}: ${d.usable} usable, ${d.allocated} allocated, ${d.requested} requested, ${d.free} free after${d.outOfRange > 0 ? `, ${d.outOfRange} outside the new CIDR` : ""}`,
      );
    }
  }
  if (plan.addons.length > 0) {
    out.push("", "Addons:");
    for (const a of plan.addons) {
      out.push(
        `  ${a.cluster}: ${a.action} ${a.addon}${a.from ? ` ${a.from}` : ""}${a.from && a.to ? " →" : ""}${a.to ? ` ${a.to}` : ""}`,
      );
      for (const object of a.objects) out.push(`    ${object}`);
    }
  }
  if (plan.bundles.length > 0) {
    out.push("", "Bundles against the live clusters:");
    for (const b of plan.bundles) {
      const detail = [b.message, ...b.schema].filter(Boolean).join("; ");
      out.push(`  ${b.cluster} ${b.bundle} ${b.object}: ${b.state}${detail ? `: ${detail}` : ""}`);
      if (b.state === "change" && b.diff) out.push(indent(b.diff));
    }
  }
  out.push("", "Dry-run:");
  if (plan.dryRun.length === 0) out.push(`  ${plan.dryRunNote || "no Kubernetes workloads"}`);
  for (const d of plan.dryRun)
    out.push(`  ${d.cluster} ${d.object}: ${d.state}${d.message ? `: ${d.message}` : ""}`);
  out.push("", planFailed(plan) ? "Plan FAILED." : "Plan OK.");
  return `${out.join("\n")}\n`;
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) out[key] = sortKeys((value as Record<string, unknown>)[key]);
  return out;
}

/**
 * Stable JSON: keys sorted at every level, lists already in the plan's stable order. Strings keep
 * their exact text; no control character is written raw.
 */
export function renderPlanJson(plan: Plan): string {
  return `${terminalJson(sortKeys({ ...plan, failed: planFailed(plan) }), 2)}\n`;
}
