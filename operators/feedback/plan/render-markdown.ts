// The plan as GitHub/Gitea-flavoured Markdown: a verdict, a summary table, then collapsible
// details per object. Pure; long plans drop their diffs (then their tables) to fit a comment.
// The plan's strings are escaped first (escape-plan.ts): with no line break or other control
// character left in them, nothing from the repository can end a table row, a list item or an
// HTML block, and code spans are fenced by more backticks than they hold.
import { formatDiagnostic } from "../../api/index.ts";
import { escapePlan } from "./escape-plan.ts";
import { type Plan, planConcerns, planFailed } from "./types.ts";

export interface MarkdownOptions {
  /** Repository web URL + `/blob/<sha>/` to link files; plain text when absent. */
  fileUrl?: (file: string, line: number) => string | undefined;
  /** Largest body allowed (GitHub comments take 65,536 characters). */
  maxLength?: number;
}

const ICON = { create: "➕", change: "✏️", delete: "➖" } as const;

function cell(text: string): string {
  return text.replaceAll("\\", "\\\\").replaceAll("|", "\\|");
}

function html(text: string): string {
  return text
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;");
}

/** A code span: fenced by a backtick run longer than any inside, padded when the text starts or ends with one. */
function code(text: string): string {
  const longest = Math.max(0, ...(text.match(/`+/g) ?? []).map((run) => run.length));
  const ticks = "`".repeat(longest + 1);
  const pad = text.startsWith("`") || text.endsWith("`") ? " " : "";
  return `${ticks}${pad}${text}${pad}${ticks}`;
}

/** A code span inside a table: GFM splits cells at `|` even in code, unless escaped. */
function cellCode(text: string): string {
  return code(text).replaceAll("|", "\\|");
}

function fence(text: string, lang: string): string {
  let ticks = "```";
  while (text.includes(ticks)) ticks += "`";
  return `${ticks}${lang}\n${text.endsWith("\n") ? text : `${text}\n`}${ticks}`;
}

function shortSha(revision: string): string {
  return /^[0-9a-f]{40}/.test(revision) ? revision.slice(0, 7) : revision;
}

export function planVerdict(plan: Plan): string {
  if (!plan.valid) return `invalid: ${plan.errors.length} error${plan.errors.length === 1 ? "" : "s"}`;
  const failed = plan.dryRun.filter((d) => d.state === "failed").length;
  if (failed > 0) return `dry-run failed for ${failed} workload${failed === 1 ? "" : "s"}`;
  const refused = plan.bundles.filter((b) => b.state === "failed").length;
  if (refused > 0) return `dry-run failed for ${refused} Bundle object${refused === 1 ? "" : "s"}`;
  const { create, change, delete: del } = plan.counts;
  return `${create} to create, ${change} to change, ${del} to delete`;
}

function render(plan: Plan, options: MarkdownOptions, level: 0 | 1 | 2): string {
  const out: string[] = [];
  const failed = planFailed(plan);
  out.push(`### ${failed ? "❌" : "✅"} RLark plan: ${planVerdict(plan)}`);
  out.push("");
  const revision = plan.revision ? `Revision ${code(shortSha(plan.revision))}` : "The working tree";
  out.push(`${revision} against ${plan.against}.`);
  out.push("");
  out.push("| Created | Changed | Deleted | Unchanged | Errors | Warnings |");
  out.push("|---:|---:|---:|---:|---:|---:|");
  out.push(
    `| ${plan.counts.create} | ${plan.counts.change} | ${plan.counts.delete} | ${plan.counts.unchanged} | ${plan.errors.length} | ${plan.warnings.length} |`,
  );
  const concerns = planConcerns(plan);
  if (concerns.length > 0) {
    out.push("");
    for (const concern of concerns) out.push(`> ⚠️ ${concern}`);
  }

  const where = (file: string, line: number) => {
    const label = line > 0 ? `${file}:${line}` : file;
    const url = options.fileUrl?.(file, line);
    return url ? `[${cell(label)}](${url})` : cell(label);
  };
  if (plan.errors.length > 0) {
    out.push("", `#### Validation errors`, "", "| Where | Object | Field | Problem |", "|---|---|---|---|");
    for (const e of plan.errors) {
      const object = e.kind ? `${e.kind}${e.name ? ` ${e.name}` : ""}` : "";
      out.push(
        `| ${where(e.file, e.line)} | ${cell(object)} | ${e.path ? cellCode(e.path) : ""} | ${cell(e.message)} (${cellCode(e.rule)}) |`,
      );
    }
  }
  if (plan.warnings.length > 0 && level < 2) {
    out.push(
      "",
      "<details><summary>Warnings</summary>",
      "",
      fence(plan.warnings.map(formatDiagnostic).join("\n"), "text"),
      "</details>",
    );
  }

  if (plan.changes.length > 0) {
    out.push("", "#### Objects", "");
    if (level < 2) {
      for (const change of plan.changes) {
        const [file = "", line = "0"] = change.file.split(/:(?=\d+$)/);
        if (level === 0 && change.diff) {
          // GitHub renders no Markdown inside <summary>: it gets HTML.
          const ns = change.namespace ? ` in <code>${html(change.namespace)}</code>` : "";
          const url = file ? options.fileUrl?.(file, Number(line)) : undefined;
          const label = html(change.file);
          const from = file ? ` · ${url ? `<a href="${html(url)}">${label}</a>` : label}` : "";
          const summary = `${ICON[change.action]} ${change.action} ${change.kind} <code>${html(change.name)}</code>${ns}${from}`;
          out.push(
            `<details><summary>${summary}</summary>`,
            "",
            fence(change.diff, "diff"),
            "",
            "</details>",
          );
        } else {
          const ns = change.namespace ? ` in ${code(change.namespace)}` : "";
          const from = file ? ` · ${where(file, Number(line))}` : "";
          out.push(
            `- ${ICON[change.action]} ${change.action} ${change.kind} ${code(change.name)}${ns}${from}`,
          );
        }
      }
    } else {
      out.push(
        `${plan.changes.length} objects change; the list is too long for a comment: run \`rlark plan\` to see it.`,
      );
    }
  }

  out.push("", "#### Placement", "");
  if (plan.placement.length === 0) {
    out.push(plan.placementNote || "No new or changed Jobs.");
  } else {
    out.push("| Job | Task | Cluster | Nodes |", "|---|---|---|---|");
    for (const p of plan.placement) {
      if (p.state === "placed") {
        for (const t of p.tasks)
          out.push(`| ${cell(p.job)} | ${cell(t.task)} | ${cell(t.cluster)} | ${cell(t.nodes.join(", "))} |`);
      } else {
        const icon =
          p.state === "unschedulable" ? "⚠️ cannot be placed: " : p.state === "waiting" ? "⏳ " : "";
        out.push(`| ${cell(p.job)} | | | ${icon}${cell(p.message)} |`);
      }
    }
  }

  if (plan.domains.length > 0) {
    out.push("", "#### Domain address pools", "");
    out.push(
      "| Domain | CIDR | Usable | Allocated | Requested | Free after |",
      "|---|---|---:|---:|---:|---:|",
    );
    for (const d of plan.domains) {
      const free = d.free < 0 ? `⚠️ ${d.free}` : String(d.free);
      const moved = d.outOfRange > 0 ? ` (${d.outOfRange} allocated outside the new CIDR)` : "";
      out.push(
        `| ${cell(d.domain)} | ${cellCode(d.cidr)} | ${d.usable} | ${d.allocated} | ${d.requested} | ${free}${moved} |`,
      );
    }
  }

  if (plan.addons.length > 0) {
    out.push("", "#### Addons", "");
    out.push("| Cluster | Addon | Action | From | To |", "|---|---|---|---|---|");
    for (const a of plan.addons)
      out.push(`| ${cell(a.cluster)} | ${cell(a.addon)} | ${a.action} | ${cell(a.from)} | ${cell(a.to)} |`);
    for (const a of plan.addons) {
      if (!a.manifest) continue;
      out.push(
        "",
        `<details><summary>${cell(a.addon)} ${cell(a.to)} in ${cell(a.cluster)}: ${a.objects.length} objects</summary>`,
        "",
        fence(a.manifest, "yaml"),
        "",
        "</details>",
      );
    }
  }

  renderBundles(plan, level, out);

  out.push("", "#### Server-side dry-run", "");
  if (plan.dryRun.length === 0) {
    out.push(plan.dryRunNote || "No Kubernetes workloads to dry-run.");
  } else {
    out.push("| Cluster | Object | Result |", "|---|---|---|");
    for (const d of plan.dryRun) {
      const result =
        d.state === "passed"
          ? "✅ passed"
          : d.state === "failed"
            ? `❌ ${cell(d.message)}`
            : `⏸️ ${cell(d.message)}`;
      out.push(`| ${cell(d.cluster)} | ${cellCode(d.object)} | ${result} |`);
    }
  }
  return `${out.join("\n")}\n`;
}

const BUNDLE_ICON = {
  create: "➕ create",
  change: "✏️ change",
  delete: "➖ delete",
  unchanged: "unchanged",
  failed: "❌",
  offline: "⏸️",
  skipped: "⏸️",
} as const;

/** Bundles against the live clusters: a table of what changes, and each diff under it. */
function renderBundles(plan: Plan, level: 0 | 1 | 2, out: string[]): void {
  if (plan.bundles.length === 0) return;
  out.push("", "#### Bundles against the live clusters", "");
  const shown = plan.bundles.filter((b) => b.state !== "unchanged");
  const unchanged = plan.bundles.length - shown.length;
  if (shown.length > 0) {
    out.push("| Cluster | Bundle | Object | Result |", "|---|---|---|---|");
    for (const b of shown) {
      const detail = [b.message, ...b.schema].filter(Boolean).map(cell).join("; ");
      out.push(
        `| ${cell(b.cluster)} | ${cell(b.bundle)} | ${cellCode(b.object)} | ${BUNDLE_ICON[b.state]}${detail ? ` ${detail}` : ""} |`,
      );
    }
  }
  if (unchanged > 0)
    out.push(
      "",
      `${unchanged} object${unchanged === 1 ? "" : "s"} unchanged on ${unchanged === 1 ? "its cluster" : "their clusters"}.`,
    );
  if (level > 0) return;
  for (const b of shown) {
    if (!b.diff) continue;
    out.push(
      "",
      `<details><summary>${BUNDLE_ICON[b.state]} <code>${html(b.object)}</code> in ${html(b.cluster)} (Bundle <code>${html(b.bundle)}</code>)</summary>`,
      "",
      fence(b.diff, "diff"),
      "",
      "</details>",
    );
  }
}

export function renderPlanMarkdown(raw: Plan, options: MarkdownOptions = {}): string {
  const plan = escapePlan(raw);
  const max = options.maxLength ?? 60_000;
  for (const level of [0, 1, 2] as const) {
    const text = render(plan, options, level);
    if (text.length <= max || level === 2)
      return text.length <= max ? text : `${text.slice(0, max - 40)}\n\n… (truncated)\n`;
  }
  return "";
}
