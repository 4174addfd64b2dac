// The fault matrix's "git server × SIGSTOP" (docs/reliability.md): a git daemon frozen mid-life
// accepts connections (the kernel's backlog) and never answers. The hub's fetch shows no progress
// for its --git-timeout (60 s by default, 2 s here), is killed with its whole process group and
// fails as FetchFailed naming the remote, the last good revision kept; once the daemon resumes the
// newest revision is applied. Over http the transport is a child of git (git-remote-http), which
// killing git alone (as the hub did before) left blocked on the dead connection for good.
import { spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t, { type Test } from "tap";
import { FakeClock } from "../../operators/lib/clock.ts";
import { createGitRepository, createGitWatcher } from "../../operators/source/index.ts";
import { recordingLogger } from "../agent-sync/fixtures.ts";
import { runGit } from "../helpers/git-server.ts";
import { repositoryOnGit } from "../helpers/repository-on-git.ts";
import { onProcesses, waitFor } from "../helpers/wait-for.ts";

const job = (name: string) => `apiVersion: rlinf.io/v1alpha1\nkind: Job\nmetadata:\n  name: ${name}\n`;

/** A server that accepts connections and never answers, as a frozen one looks; its port. */
async function frozenServer(t: Test): Promise<number> {
  const held = new Set<Socket>();
  const frozen = createServer((socket) => {
    held.add(socket);
    socket.on("error", () => undefined);
  });
  await new Promise<void>((resolve) => frozen.listen(0, "127.0.0.1", resolve));
  t.teardown(() => {
    for (const socket of held) socket.destroy();
    frozen.close();
  });
  return (frozen.address() as { port: number }).port;
}

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
    t.match(
      status.fetchError,
      `from ${server.daemonUrl}: no progress for 2 s`,
      "naming the remote and the bound",
    );
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

t.test(
  "a git server over http that accepts and never answers: the fetch and its transport are killed, no credential shown",
  async (t) => {
    // As a frozen server looks from outside: the connection is accepted, nothing ever comes back.
    const port = await frozenServer(t);
    const transports = () => pidsWith(["git", `127.0.0.1:${port}`]);
    // Should the bound fail, what it left behind goes with the test.
    t.teardown(async () => {
      for (const pid of await transports()) process.kill(pid, "SIGKILL");
    });
    const dataDir = await mkdtemp(join(tmpdir(), "rlark-frozen-http-"));
    t.teardown(() => rm(dataDir, { recursive: true, force: true }));
    const logger = recordingLogger();
    const watcher = createGitWatcher({
      repository: createGitRepository({
        url: `http://deploy:s3cret-token@127.0.0.1:${port}/fleet.git`,
        branch: "main",
        dataDir,
        timeoutMs: 2_000,
      }),
      applyRevision: async () => ({ accepted: true, errors: [] }),
      dataDir,
      clock: new FakeClock(),
      intervalMs: 60_000,
      logger,
    });
    await watcher.start();
    const status = await watcher.trigger();
    t.equal(status.state, "FetchFailed", "the fetch gave up");
    t.match(status.fetchError, `from http://127.0.0.1:${port}/fleet.git: no progress for 2 s`);
    const warned = logger.lines.filter(
      (l) => l.message === "git fetch failed; keeping the last good revision",
    );
    t.ok(warned.length > 0, "the failure is logged");
    t.match(warned[0]?.fields, { url: `http://127.0.0.1:${port}/fleet.git`, error: /no progress for 2 s/ });
    t.notMatch(
      JSON.stringify([status, logger.lines]),
      /s3cret/,
      "the credential is in neither the status nor the log",
    );
    await waitFor(
      "no git transport of the fetch left",
      async () => (await transports()).length === 0,
      onProcesses,
    );
    await watcher.stop();
  },
);

t.test("a hub that exits mid-fetch (a leader that lost its Lease) leaves no git behind", async (t) => {
  const port = await frozenServer(t);
  const transports = () => pidsWith(["git", `127.0.0.1:${port}`]);
  t.teardown(async () => {
    for (const pid of await transports()) process.kill(pid, "SIGKILL");
  });
  const dir = await mkdtemp(join(tmpdir(), "rlark-exit-mid-fetch-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await runGit(dir, ["init", "--bare", "--quiet"]);
  // A process of its own, as the hub is, that exits (as a hub losing its Lease does) when told.
  const script = join(dir, "fetch-then-exit.ts");
  const gitRemoteModule = join(import.meta.dirname, "..", "..", "operators", "source", "git-remote.ts");
  const args = [
    "fetch",
    "--quiet",
    "--progress",
    `http://127.0.0.1:${port}/fleet.git`,
    "+refs/heads/main:refs/x",
  ];
  await writeFile(
    script,
    [
      `import { gitRemote } from ${JSON.stringify(gitRemoteModule)};`,
      `process.on("SIGUSR2", () => process.exit(1));`,
      `await gitRemote(${JSON.stringify(dir)}, ${JSON.stringify(args)}, { timeoutMs: 600_000 }).catch(() => undefined);`,
    ].join("\n"),
  );
  const hub = spawn(process.execPath, [script], { stdio: "ignore" });
  const exited = new Promise((resolve) => hub.once("exit", resolve));
  t.teardown(() => hub.kill("SIGKILL"));
  await waitFor("the fetch's transport running", async () => (await transports()).length > 0, onProcesses);
  hub.kill("SIGUSR2");
  await exited;
  await waitFor("no git of the fetch left", async () => (await transports()).length === 0, onProcesses);
});
