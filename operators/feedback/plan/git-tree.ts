// Checks a revision of a local repository out into a temporary directory without touching the
// repository's index or work tree (a private index file, as the hub's snapshots do). Pure reads:
// no hooks, no filters from the repository run.
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

function git(cwd: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      "git",
      args,
      { cwd, env: { ...process.env, GIT_TERMINAL_PROMPT: "0", ...env }, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`git ${args[0]}: ${(stderr || error.message).trim()}`));
        else resolve(stdout);
      },
    );
  });
}

export interface CheckedOutTree {
  dir: string;
  revision: string;
  remove(): Promise<void>;
}

/** The repository root containing `dir`. */
export async function repositoryRoot(dir: string): Promise<string> {
  return (await git(dir, ["rev-parse", "--show-toplevel"])).trim();
}

export async function checkoutRevision(repoDir: string, ref: string): Promise<CheckedOutTree> {
  if (ref.startsWith("-")) throw new Error(`invalid ref ${JSON.stringify(ref)}`);
  const revision = (
    await git(repoDir, ["rev-parse", "--verify", "--end-of-options", `${ref}^{commit}`])
  ).trim();
  const dir = await mkdtemp(join(tmpdir(), "rlark-plan-"));
  const index = `${dir}.index`;
  try {
    const env = { GIT_INDEX_FILE: index, GIT_WORK_TREE: dir };
    await git(repoDir, ["read-tree", revision], env);
    await git(repoDir, ["checkout-index", "--all", "--force"], env);
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  } finally {
    await rm(index, { force: true });
  }
  return { dir, revision, remove: () => rm(dir, { recursive: true, force: true }) };
}
