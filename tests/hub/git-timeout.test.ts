// A hub whose git server freezes (SIGSTOP: the kernel still accepts connections, nothing answers):
// the hub's fetch is killed after --git-timeout (gitTimeoutMs, 2 s here; 60 s by default, where it
// used to wait git's 10 minutes), GET /api/v1/source answers meanwhile and then says FetchFailed,
// the log names the remote, the last good revision stays applied, and the next poll after SIGCONT
// applies the newest revision.
import t from "tap";
import { recordingLogger } from "../agent-sync/fixtures.ts";
import { createGitServer } from "../helpers/git-server.ts";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { rawJobYaml } from "../helpers/job-yaml.ts";
import { pidsMarked } from "../helpers/marked-processes.ts";
import { sourceStatus } from "../helpers/source-status.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

t.test(
  "a frozen git server: the hub's fetch gives up after --git-timeout and the next poll recovers",
  async (t) => {
    const git = await createGitServer();
    t.teardown(() => git.close());
    await git.startDaemon();
    const good = await git.commit({ "a.yaml": rawJobYaml({ name: "a", command: ["sleep", "1"] }) });
    const logger = recordingLogger();
    const { hub } = await startHubOnGit(t, { git, repo: git.daemonUrl, gitTimeoutMs: 2_000, logger });
    type Status = { state?: string; lastAppliedRevision?: string; fetchError?: string };
    const status = async () => (await sourceStatus(hub)) as Status;
    await waitFor(
      "the first revision applied",
      async () => (await status()).lastAppliedRevision === good,
      onRealServers,
    );

    // git daemon and the git-daemon it runs: every process serving the port
    const daemons = await pidsMarked(`--port=${new URL(git.daemonUrl).port}`);
    t.ok(daemons.length > 0, "the git daemon found");
    const resume = () => {
      for (const pid of daemons) process.kill(pid, "SIGCONT");
    };
    t.teardown(resume);
    for (const pid of daemons) process.kill(pid, "SIGSTOP");
    const newer = await git.commit({ "b.yaml": rawJobYaml({ name: "b", command: ["sleep", "1"] }) });
    const failed = await waitFor(
      "FetchFailed after the timeout",
      async () => {
        const now = await status();
        return now.state === "FetchFailed" ? now : undefined;
      },
      onRealServers,
    );
    t.match(failed.fetchError, `from ${git.daemonUrl}: no progress for 2 s`);
    t.equal(failed.lastAppliedRevision, good, "the last good revision stays");
    t.ok(
      logger.lines.some(
        (l) =>
          l.message === "git fetch failed; keeping the last good revision" && l.fields?.url === git.daemonUrl,
      ),
      "the log names the remote",
    );

    resume();
    await waitFor(
      "the newest revision applied",
      async () => (await status()).lastAppliedRevision === newer,
      onRealServers,
    );
    t.equal((await status()).state, "Synced");
  },
);
