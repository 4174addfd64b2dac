// The playground repository `rlark up` runs when no --repo is given: a git repository seeded
// from the package's examples/, which a newcomer edits and commits to watch the hub react.
import { execFile } from "node:child_process";
import { cp, mkdir, stat } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
const EXAMPLES = fileURLToPath(new URL("../../examples/", import.meta.url));
const IDENTITY = ["-c", "user.name=rlark", "-c", "user.email=rlark@localhost", "-c", "commit.gpgsign=false"];

export interface Playground {
  dir: string;
  created: boolean;
}

/** Creates `<dataDir>/repo` from examples/ on first use; reuses it (and its history) afterwards. */
export async function ensurePlayground(dataDir: string, branch = "main"): Promise<Playground> {
  const dir = path.join(dataDir, "repo");
  if (await exists(path.join(dir, ".git"))) return { dir, created: false };
  // The data dir is the hub's, private (it holds the CA key); the hub also tightens it on start.
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  // Private too: the pods of a root `rlark up` may search the data dir (docs/process-runtime.md#users).
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await cp(EXAMPLES, dir, { recursive: true });
  await run("git", ["init", "--quiet", "--initial-branch", branch], { cwd: dir });
  await run("git", ["add", "--all"], { cwd: dir });
  await run(
    "git",
    [...IDENTITY, "commit", "--quiet", "--message", "Seed the playground from RLark's examples"],
    {
      cwd: dir,
    },
  );
  return { dir, created: true };
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}
