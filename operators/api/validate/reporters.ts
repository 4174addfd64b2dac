import { escapeStrings, terminalJson } from "../../lib/terminal-text.ts";
import { type Diagnostic, formatDiagnostic } from "./diagnostic.ts";

export const REPORT_FORMATS = ["text", "json", "github", "junit"] as const;
export type ReportFormat = (typeof REPORT_FORMATS)[number];

export interface Report {
  valid: boolean;
  documents: number;
  errors: Diagnostic[];
  warnings: Diagnostic[];
}

const FIELDS = ["file", "line", "column", "kind", "name", "path", "rule", "message"] as const;

export function renderReport(report: Report, format: ReportFormat): string {
  switch (format) {
    case "json":
      return `${terminalJson({
        valid: report.valid,
        documents: report.documents,
        errors: report.errors.map(pick),
        warnings: report.warnings.map(pick),
      })}\n`;
    // Text formats are read on terminals (GitHub shows its annotations in a log too): control
    // characters from the manifests are shown escaped, never sent raw.
    case "github":
      return renderGithub(escapeStrings(report));
    case "junit":
      return renderJunit(report);
    default:
      return renderText(escapeStrings(report));
  }
}

/** Only the documented fields, in the documented order: the JSON output is a contract. */
function pick(d: Diagnostic): Diagnostic {
  return Object.fromEntries(FIELDS.map((f) => [f, d[f]])) as unknown as Diagnostic;
}

function renderText(report: Report): string {
  const lines = [
    ...report.errors.map((d) => `error: ${formatDiagnostic(d)}`),
    ...report.warnings.map((d) => `warning: ${formatDiagnostic(d)}`),
  ];
  const summary = report.valid
    ? `${report.documents} documents valid`
    : `${report.documents} documents, ${report.errors.length} error${report.errors.length === 1 ? "" : "s"}`;
  const warned = report.warnings.length > 0 ? `, ${report.warnings.length} warning(s)` : "";
  lines.push(`${summary}${warned}`);
  return `${lines.join("\n")}\n`;
}

/** GitHub Actions workflow commands: annotations on the pull request's files. */
function renderGithub(report: Report): string {
  const line = (level: string, d: Diagnostic) => {
    const props = [`file=${escapeProperty(d.file)}`];
    if (d.line > 0) props.push(`line=${d.line}`, `col=${d.column}`);
    props.push(`title=${escapeProperty(`${d.rule}${d.kind ? ` ${d.kind} ${d.name}` : ""}`)}`);
    const where = d.path ? `${d.path}: ` : "";
    return `::${level} ${props.join(",")}::${escapeData(`${where}${d.message}`)}`;
  };
  return [
    ...report.errors.map((d) => line("error", d)),
    ...report.warnings.map((d) => line("warning", d)),
    "",
  ].join("\n");
}

function escapeData(s: string): string {
  return s.replaceAll("%", "%25").replaceAll("\r", "%0D").replaceAll("\n", "%0A");
}

function escapeProperty(s: string): string {
  return escapeData(s).replaceAll(":", "%3A").replaceAll(",", "%2C");
}

/**
 * JUnit XML: one test case per file with errors, failing once with every error of the file in its
 * body, so `failures` counts failing files and never exceeds `tests` (CI test tabs rely on that).
 */
function renderJunit(report: Report): string {
  const byFile = new Map<string, Diagnostic[]>();
  for (const d of report.errors) {
    if (!byFile.has(d.file)) byFile.set(d.file, []);
    byFile.get(d.file)?.push(d);
  }
  const cases = [...byFile.entries()].map(([file, errors]) => {
    const types = [...new Set(errors.map((d) => d.rule))].join(", ");
    const message =
      errors.length === 1 ? (errors[0]?.message ?? "") : `${errors.length} errors: ${errors[0]?.message}`;
    const body = errors.map((d) => xml(formatDiagnostic(d))).join("\n");
    return [
      `    <testcase classname="rlark.validate" name="${xml(file)}">`,
      `      <failure type="${xml(types)}" message="${xml(message)}">${body}</failure>`,
      "    </testcase>",
    ].join("\n");
  });
  if (cases.length === 0) cases.push(`    <testcase classname="rlark.validate" name="all documents"/>`);
  const tests = Math.max(1, byFile.size);
  const failures = byFile.size;
  return [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<testsuites name="rlark validate" tests="${tests}" failures="${failures}">`,
    `  <testsuite name="rlark validate" tests="${tests}" failures="${failures}" errors="0" skipped="0">`,
    ...cases,
    "  </testsuite>",
    "</testsuites>",
    "",
  ].join("\n");
}

const CONTROL_CHARACTERS = new RegExp(
  `[${String.fromCharCode(0)}-${String.fromCharCode(8)}\\v\\f${String.fromCharCode(14)}-${String.fromCharCode(31)}]`,
  "g",
);

function xml(s: string): string {
  return (
    s
      .replaceAll("&", "&amp;")
      .replaceAll("<", "&lt;")
      .replaceAll(">", "&gt;")
      .replaceAll('"', "&quot;")
      // XML 1.0 cannot carry most control characters even escaped.
      .replace(CONTROL_CHARACTERS, "\uFFFD")
  );
}
