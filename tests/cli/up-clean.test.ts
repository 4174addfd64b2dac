// issue 31, also: a Deployment's processes outlive `rlark up` to be adopted by the next one, and
// nothing said so; with the data dir removed they would run forever. `rlark up` now says on exit
// how many keep running and how to stop them, and `rlark up --clean` stops them (found by their
// command lines, so also when the data dir is gone) and removes what they left.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t, { type Test } from "tap";
import { createGitServer } from "../helpers/git-server.ts";
import { clusterYaml, rawJobYaml } from "../helpers/job-yaml.ts";
import { startLongRunning } from "../helpers/long-running.ts";
import { pidsMarked } from "../helpers/marked-processes.ts";
import { rlark } from "../helpers/rlark-cli.ts";
import { onProcesses, onRealServers, waitFor } from "../helpers/wait-for.ts";

const cli = path.resolve(import.meta.dirname, "../../operators/cli/main.ts");

/** `rlark up` until its pods run, then Ctrl-C: what it printed. */
async function upUntilRunning(t: Test, dataDir: string, repo: string, marker: string): Promise<string> {
  const up = startLongRunning(t, process.execPath, [
    cli,
    "up",
    "--data-dir",
    dataDir,
    "--repo",
    repo,
    "--http",
    "127.0.0.1:0",
    "--ssh",
    "127.0.0.1:0",
  ]);
  await waitFor("the pods' processes", async () => (await pidsMarked(marker)).length >= 2, {
    ...onRealServers,
    attempts: 1200,
  });
  up.kill("SIGINT");
  t.equal(await up.exited, 0, "Ctrl-C stops rlark up cleanly");
  return up.stdout();
}

t.test("rlark up names the processes it leaves running, and --clean stops them", async (t) => {
  const marker = `rlark-up-clean-${randomBytes(4).toString("hex")}`;
  t.teardown(async () => {
    for (const pid of await pidsMarked(marker)) process.kill(pid, "SIGKILL");
  });
  const git = await createGitServer();
  t.teardown(() => git.close());
  const sleeper = (name: string) =>
    rawJobYaml({
      name,
      kind: "Deployment",
      command: ["python3", "-c", "import time; time.sleep(3600)", marker],
    });
  await git.commit({
    "cluster.yaml": clusterYaml("local"),
    "a.yaml": sleeper("sleeper-a"),
    "b.yaml": sleeper("sleeper-b"),
  });
  const root = await mkdtemp(path.join(tmpdir(), "rlark-up-clean-"));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const dataDir = path.join(root, ".rlark");

  const said = await upUntilRunning(t, dataDir, git.fileUrl, marker);
  t.match(
    said,
    /\n2 pod processes keep running for the next rlark up to adopt; stop them with: rlark up --clean --data-dir \S+\n/,
  );
  t.ok((await pidsMarked(marker)).length >= 2, "they do keep running");
  const clean = await rlark(["up", "--clean", "--data-dir", dataDir]);
  t.equal(clean.code, 0, `--clean exits 0${clean.code ? `: ${clean.stderr}` : ""}`);
  t.match(clean.stdout, /stopped 2 pod processes/);
  await waitFor("no pod process left", async () => (await pidsMarked(marker)).length === 0, onProcesses);
  t.notOk(existsSync(path.join(dataDir, "agent", "runtime")), "their state (logs, work dirs) is removed");
  t.ok((await readFile(path.join(dataDir, "admin-token"), "utf8")).trim(), "the hub's own data stays");

  await t.test("when the data dir was removed", async (t) => {
    await upUntilRunning(t, dataDir, git.fileUrl, marker);
    await rm(dataDir, { recursive: true, force: true });
    t.ok((await pidsMarked(marker)).length >= 2, "the processes outlive their data dir");
    const clean = await rlark(["up", "--clean", "--data-dir", dataDir]);
    t.equal(clean.code, 0, `--clean exits 0${clean.code ? `: ${clean.stderr}` : ""}`);
    t.match(clean.stdout, /stopped 2 pod processes/);
    await waitFor("no pod process left", async () => (await pidsMarked(marker)).length === 0, onProcesses);
    t.notOk(existsSync(dataDir), "and --clean leaves no data dir behind");
  });

  const nothing = await rlark(["up", "--clean", "--data-dir", dataDir]);
  t.equal(nothing.code, 0);
  t.match(nothing.stdout, /no pod processes/, "a second --clean finds nothing to stop");
});
