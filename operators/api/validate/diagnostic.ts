/** One finding about a manifest, addressed the way a person fixes it: file, line, field. */
export interface Diagnostic {
  /** Path relative to the directory the caller reports against (the working directory for the CLI). */
  file: string;
  /** 1-based; 0 when the finding is about the whole file (unreadable, too large). */
  line: number;
  /** 1-based; 0 when the finding is about the whole file. */
  column: number;
  /** The object's kind, or "" when the document has none. */
  kind: string;
  /** The object's metadata.name, or "" when it has none. */
  name: string;
  /** JSON pointer to the field inside the document; "" for the whole document. */
  path: string;
  /** Stable rule id, e.g. "schema/enum", "cross/domain-exists", "yaml/duplicate-key". */
  rule: string;
  message: string;
}

/** `file:line:col Kind name /path: message`, the one-line form used by text output and logs. */
export function formatDiagnostic(d: Diagnostic): string {
  const where = d.line > 0 ? `${d.file}:${d.line}:${d.column}` : d.file;
  const object = d.kind ? ` ${d.kind}${d.name ? ` ${d.name}` : ""}` : "";
  const field = d.path ? ` ${d.path}` : "";
  return `${where}${object}${field}: ${d.message} [${d.rule}]`;
}

/** Stable order: by file, then position, then rule, so output and snapshots are deterministic. */
export function compareDiagnostics(a: Diagnostic, b: Diagnostic): number {
  if (a.file !== b.file) return a.file < b.file ? -1 : 1;
  if (a.line !== b.line) return a.line - b.line;
  if (a.column !== b.column) return a.column - b.column;
  if (a.rule !== b.rule) return a.rule < b.rule ? -1 : 1;
  return a.message < b.message ? -1 : a.message > b.message ? 1 : 0;
}
