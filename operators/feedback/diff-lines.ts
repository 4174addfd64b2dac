// Which lines of each file a pull request's diff shows: GitHub and Gitea accept review comments
// only there. Read with git's plumbing only (no external diff drivers or textconv filters a
// repository could name), so a fork's repository configures nothing that runs.
import { execFile } from "node:child_process";

export type DiffLines = Map<string, Array<[number, number]>>;

/** Parses `git diff --unified=N` output into the new-side line ranges of each file's hunks. */
export function parseDiffLines(diff: string): DiffLines {
  const out: DiffLines = new Map();
  let file: string | undefined;
  for (const line of diff.split("\n")) {
    if (line.startsWith("+++ ")) {
      const name = line.slice(4);
      file = name === "/dev/null" ? undefined : name.replace(/^b\//, "");
      if (file && !out.has(file)) out.set(file, []);
      continue;
    }
    const hunk = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@/.exec(line);
    if (hunk && file) {
      const start = Number(hunk[1]);
      const count = hunk[2] === undefined ? 1 : Number(hunk[2]);
      if (count > 0) out.get(file)?.push([start, start + count - 1]);
    }
  }
  return out;
}

export function inDiff(lines: DiffLines, file: string, line: number): boolean {
  return (lines.get(file) ?? []).some(([from, to]) => line >= from && line <= to);
}

/** The diff of `head` against its merge base with `base`, in the bare repository `gitDir`. */
export function diffLines(gitDir: string, base: string, head: string): Promise<DiffLines> {
  return new Promise((resolve, reject) => {
    execFile(
      "git",
      [
        "-c",
        "core.quotePath=false",
        "diff",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--no-renames",
        "--unified=3",
        `${base}...${head}`,
      ],
      { cwd: gitDir, env: { ...process.env, GIT_TERMINAL_PROMPT: "0" }, maxBuffer: 256 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`git diff: ${(stderr || error.message).trim()}`));
        else resolve(parseDiffLines(stdout));
      },
    );
  });
}
