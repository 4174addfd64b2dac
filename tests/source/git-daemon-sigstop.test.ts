// The fault matrix's "git server × SIGSTOP" (docs/reliability.md): a git daemon frozen mid-life
// accepts connections (the kernel's backlog) and never answers. A fetch then waits for git's block
// timeout (no output for that long; 10 min by default, 2 s here), fails as FetchFailed with the
// last good revision kept, and once the daemon resumes the newest revision is applied.
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import t from "tap";
import { FakeClock } from "../../operators/lib/clock.ts";
import { createGitRepository, createGitWatcher } from "../../operators/source/index.ts";
import { repositoryOnGit } from "../helpers/repository-on-git.ts";

const job = (name: string) => `apiVersion: rlinf.io/v1alpha1\nkind: Job\nmetadata:\n  name: ${name}\n`;

/** Pids whose command line holds every one of `parts`. */
async function pidsWith(parts: string[]): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => "");
    if (parts.every((p) => cmdline.includes(p))) found.push(Number(entry));
  }
  return found;
}

t.test(
  "a frozen git daemon: FetchFailed after the block timeout, last good kept, then recovery",
  async (t) => {
    const { server, dataDir } = await repositoryOnGit(t, { daemon: true });
    const repository = createGitRepository({
      url: server.daemonUrl,
      branch: server.branch,
      dataDir: join(dataDir, "frozen"),
      timeoutMs: 2_000,
    });
    const applied: string[] = [];
    const watcher = createGitWatcher({
      repository,
      applyRevision: async ({ revision }) => {
        applied.push(revision);
        return { accepted: true, errors: [] };
      },
      dataDir: join(dataDir, "frozen"),
      clock: new FakeClock(),
      intervalMs: 60_000,
    });
    const good = await server.commit({ "a.yaml": job("a") });
    await watcher.start();
    t.equal((await watcher.trigger()).lastAppliedRevision, good, "applied over git://");

    const port = new URL(server.daemonUrl).port;
    const daemons = await pidsWith(["daemon", `--port=${port}`]);
    t.ok(daemons.length > 0, "the git daemon found");
    const resume = () => {
      for (const pid of daemons) process.kill(pid, "SIGCONT");
    };
    t.teardown(resume);
    for (const pid of daemons) process.kill(pid, "SIGSTOP");

    const newer = await server.commit({ "a.yaml": job("a2") });
    let status = await watcher.trigger();
    t.equal(status.state, "FetchFailed", "the fetch gave up");
    t.equal(status.lastAppliedRevision, good, "the last good revision stays");
    t.same(applied, [good]);

    resume();
    status = await watcher.trigger();
    t.equal(status.state, "Synced", "synced once the daemon resumed");
    t.equal(status.lastAppliedRevision, newer);
    t.same(applied, [good, newer]);
    await watcher.stop();
  },
);
