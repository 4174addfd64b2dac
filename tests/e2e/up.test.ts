// README's first command on a fresh data dir: `rlark up` seeds the playground from examples/,
// enrolls the local process agent and runs the example Raw Job to completion.
import { execFileSync } from "node:child_process";
import { lstat, mkdtemp, readdir, readFile, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { startRlarkUp } from "../helpers/long-running.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

t.test("rlark up runs the example Raw Job to Succeeded and stops cleanly on SIGINT", async (t) => {
  // Made by `rlark up` itself, as `.rlark` is on a first run.
  const dataDir = path.join(await mkdtemp(path.join(tmpdir(), "rlark-up-")), ".rlark");
  const up = startRlarkUp(t, dataDir);

  await waitFor("rlark up to print its address", () => /API: (http:\/\/[^/\s]+)/.test(up.stdout()), {
    ...onRealServers,
    attempts: 1200,
  });
  const hub = /API: (http:\/\/[^/\s]+)/.exec(up.stdout())?.[1] as string;
  t.match(up.stdout(), /playground repository: .*\/repo/);
  t.match(
    up.stdout(),
    /dashboard \(admin login link, works once within \d+ minutes\): http:\/\/.*#\/login\?code=/,
  );
  t.match(up.stdout(), /local agent: cluster "local"/);
  const token = (await readFile(path.join(dataDir, "admin-token"), "utf8")).trim();
  const job = async () => {
    const response = await fetch(`${hub}/api/v1/rlinf.io/v1alpha1/jobs/cartpole-local`, {
      headers: { authorization: `Bearer ${token}` },
    });
    return response.ok ? ((await response.json()) as { status?: { phase?: string } }) : undefined;
  };
  await waitFor("cartpole-local Succeeded", async () => (await job())?.status?.phase === "Succeeded", {
    ...onRealServers,
    attempts: 2400,
  });
  const log = await readFile(
    path.join(dataDir, "agent/runtime/pods/agent-local_cartpole-local-train-0/output.log"),
    "utf8",
  );
  t.match(log, /done: best return \d+/, "the task's output is the cartpole run");
  // Private: as root the local agent's pods run as users of their own, whose one shared group
  // (rlark-pods) may search the data dir on the way to their working directories and do nothing
  // else there; others get nothing (docs/process-runtime.md#users).
  const dataStat = await stat(dataDir);
  const root = process.getuid?.() === 0;
  t.equal(dataStat.mode & 0o777, root ? 0o710 : 0o700, "the data dir (CA key, token, artifacts) is private");
  if (root) {
    const podsGroup = Number(
      execFileSync("getent", ["group", "rlark-pods"], { encoding: "utf8" }).split(":")[2],
    );
    t.equal(dataStat.gid, podsGroup, "its group, which may only search it, is the pods'");
    t.same(
      await podReadable(dataDir, podsGroup),
      [],
      "a pod's user reads nothing of the hub's or the agent's",
    );
  }
  const artifacts = path.join(dataDir, "artifacts");
  for (const digest of await readdir(artifacts)) {
    for (const file of await readdir(path.join(artifacts, digest)))
      t.equal((await stat(path.join(artifacts, digest, file))).mode & 0o777, 0o644, `${file} is 0644`);
  }

  up.kill("SIGINT");
  t.equal(await up.exited, 0, "Ctrl-C stops the hub and the agent cleanly");
});

/**
 * The files under `dataDir` that a pod's user (not root, not the owner, in group `group`) reaches
 * and may read, by the modes of the file and every directory on the way; the pods' own working
 * directories (agent/runtime/work) and the agent's artifact cache, which pods are meant to read,
 * left out.
 */
async function podReadable(dataDir: string, group: number): Promise<string[]> {
  const may = (mode: number, gid: number, bit: number) =>
    (mode & bit) !== 0 || (gid === group && (mode & (bit << 3)) !== 0);
  const found: string[] = [];
  const skip = new Set(["agent/runtime/work", "agent/runtime/artifacts"].map((p) => path.join(dataDir, p)));
  const walk = async (dir: string): Promise<void> => {
    const { mode, gid } = await stat(dir);
    if (!may(mode, gid, 0o001) || skip.has(dir)) return; // the pod cannot pass, or is meant to
    for (const name of await readdir(dir)) {
      const entry = path.join(dir, name);
      const info = await lstat(entry);
      if (info.isDirectory()) await walk(entry);
      else if (info.isFile() && may(info.mode, info.gid, 0o004)) found.push(path.relative(dataDir, entry));
    }
  };
  await walk(dataDir);
  return found;
}
