// Reads tap's TAP stream line by line and keeps, for each test file that failed, its failing
// subtests and where each one is in the source. `npm test` prints this digest after tap's
// coverage table, just before the closing count: a CI log often shows only its last lines, and
// the name of what failed must be among them.

export interface FailedFile {
  file: string;
  /** Failing subtests inside the file, outermost last (TAP prints a parent after its children). */
  failures: string[];
}

const MAX_FAILURES_PER_FILE = 20;

const notOk = /^( *)not ok \d+ - (.*?)(?: # time=[\d.]+m?s)?$/;
const fileName = /^ *fileName: (.+)$/;
const lineNumber = /^ *lineNumber: (\d+)$/;

export class FailureDigest {
  readonly files: FailedFile[] = [];
  private pending: string[] = [];
  /** The nested failure whose YAML block is being read, waiting for its source location. */
  private open: { name: string; depth: number; file?: string; line?: string } | undefined;

  line(text: string): void {
    const failed = notOk.exec(text);
    if (failed) {
      this.closeOpen();
      const depth = (failed[1] ?? "").length;
      const name = failed[2] ?? "";
      if (depth === 0) {
        this.files.push({ file: name, failures: this.pending });
        this.pending = [];
      } else {
        this.open = { name, depth };
      }
      return;
    }
    if (/^ok \d+ - /.test(text)) {
      // a file that passed: the failures of its subtests were retried or expected, not the file's
      this.closeOpen();
      this.pending = [];
      return;
    }
    if (!this.open) return;
    const file = fileName.exec(text);
    if (file && this.open.file === undefined) this.open.file = file[1];
    const line = lineNumber.exec(text);
    if (line && this.open.line === undefined) this.open.line = line[1];
    if (/^ *\.\.\.$/.test(text)) this.closeOpen();
  }

  /** The lines to print: nothing when no file failed. */
  summary(): string[] {
    if (this.files.length === 0) return [];
    const out = [`== failed: ${this.files.length} test file${this.files.length === 1 ? "" : "s"}`];
    for (const failed of this.files) {
      out.push(`  ${failed.file}`);
      for (const failure of failed.failures.slice(0, MAX_FAILURES_PER_FILE)) out.push(`    ${failure}`);
      const more = failed.failures.length - MAX_FAILURES_PER_FILE;
      if (more > 0) out.push(`    … and ${more} more`);
    }
    return out;
  }

  private closeOpen(): void {
    const open = this.open;
    if (!open) return;
    this.open = undefined;
    const where = open.file ? ` (${open.file}${open.line ? `:${open.line}` : ""})` : "";
    const indent = "  ".repeat(Math.max(0, open.depth / 4 - 1));
    this.pending.push(`${indent}${open.name.slice(0, 200)}${where}`);
  }
}
