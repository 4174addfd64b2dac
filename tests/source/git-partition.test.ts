// The fault matrix's "git server × partition" (docs/reliability.md): the git daemon runs in a
// network namespace of its own, linked to the host by a veth, and the link is dropped (its far end
// set down: the host sees silence, no reset or refusal). A fetch then shows no progress; the hub
// kills it after its --git-timeout (2 s here), reports FetchFailed naming the remote, keeps the last
// good revision, and applies the newest one once the link is back.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { FakeClock } from "../../operators/lib/clock.ts";
import { createGitRepository, createGitWatcher } from "../../operators/source/index.ts";
import { createGitServer, testGitEnv } from "../helpers/git-server.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

const sh = (...args: string[]) => execFileSync(args[0]!, args.slice(1), { encoding: "utf8", stdio: "pipe" });
const job = (name: string) => `apiVersion: rlinf.io/v1alpha1\nkind: Job\nmetadata:\n  name: ${name}\n`;

t.test(
  "a git server cut off by a dropped link: FetchFailed within the timeout, last good kept, then recovery",
  async (t) => {
    const server = await createGitServer();
    const dataDir = await mkdtemp(join(tmpdir(), "rlark-git-partition-"));
    t.teardown(async () => {
      await server.close();
      await rm(dataDir, { recursive: true, force: true });
    });

    // The namespace: <link>.2 inside, <link>.1 on the host, a /30 between them.
    const id = randomBytes(3).toString("hex");
    const netns = `gitp${id}`;
    const [hostIf, farIf] = [`gitp${id}h`, `gitp${id}p`];
    const link = `10.${200 + ((randomBytes(1)[0] ?? 0) % 50)}.${randomBytes(1)[0] ?? 0}`;
    let daemon: ChildProcess | undefined;
    t.teardown(async () => {
      if (daemon && daemon.exitCode === null && daemon.signalCode === null) {
        const exited = new Promise((resolve) => daemon!.once("exit", resolve));
        daemon.kill("SIGTERM");
        await exited;
      }
      for (const cmd of [
        ["ip", "link", "del", hostIf],
        ["ip", "netns", "del", netns],
      ])
        try {
          sh(...cmd);
        } catch {}
    });
    sh("ip", "netns", "add", netns);
    sh("ip", "link", "add", hostIf, "type", "veth", "peer", "name", farIf);
    sh("ip", "link", "set", farIf, "netns", netns);
    sh("ip", "addr", "add", `${link}.1/30`, "dev", hostIf);
    sh("ip", "link", "set", hostIf, "up");
    sh("ip", "-n", netns, "link", "set", "lo", "up");
    sh("ip", "-n", netns, "addr", "add", `${link}.2/30`, "dev", farIf);
    sh("ip", "-n", netns, "link", "set", farIf, "up");
    const srv = join(server.root, "srv");
    daemon = spawn(
      "ip",
      [
        ...["netns", "exec", netns, "git", "daemon", "--reuseaddr", "--export-all", "--informative-errors"],
        ...[`--listen=${link}.2`, "--port=9418", `--base-path=${srv}`, srv],
      ],
      { env: testGitEnv, stdio: "ignore" },
    );
    const url = `git://${link}.2:9418/manifests.git`;
    await waitFor(
      "the git daemon in the namespace",
      () =>
        new Promise<boolean>((resolve) => {
          const socket = createConnection(9418, `${link}.2`);
          socket.once("connect", () => {
            socket.destroy();
            resolve(true);
          });
          socket.once("error", () => resolve(false));
        }),
      onRealServers,
    );

    const applied: string[] = [];
    const watcher = createGitWatcher({
      repository: createGitRepository({ url, branch: server.branch, dataDir, timeoutMs: 2_000 }),
      applyRevision: async ({ revision }) => {
        applied.push(revision);
        return { accepted: true, errors: [] };
      },
      dataDir,
      clock: new FakeClock(),
      intervalMs: 60_000,
    });
    const good = await server.commit({ "a.yaml": job("a") });
    await watcher.start();
    t.equal((await watcher.trigger()).lastAppliedRevision, good, "applied over the link");

    // The far end of the link goes down: the host's side stays up, its packets go nowhere.
    sh("ip", "-n", netns, "link", "set", farIf, "down");
    const newer = await server.commit({ "a.yaml": job("a2") });
    let status = await watcher.trigger();
    t.equal(status.state, "FetchFailed", "the fetch gave up");
    t.match(status.fetchError, `from ${url}: no progress for 2 s`, "naming the remote and the bound");
    t.equal(status.lastAppliedRevision, good, "the last good revision stays");

    sh("ip", "-n", netns, "link", "set", farIf, "up");
    status = await waitFor(
      "synced once the link is back",
      async () => {
        const now = await watcher.trigger();
        return now.state === "Synced" ? now : undefined;
      },
      onRealServers,
    );
    t.equal(status.lastAppliedRevision, newer);
    t.same(applied, [good, newer]);
    await watcher.stop();
  },
);
