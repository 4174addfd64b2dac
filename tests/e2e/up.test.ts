// README's first command on a fresh data dir: `rlark up` seeds the playground from examples/,
// enrolls the local process agent and runs the example Raw Job to completion.
import { mkdtemp, readdir, readFile, stat } from "node:fs/promises";
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
  t.equal((await stat(dataDir)).mode & 0o777, 0o700, "the data dir (CA key, token, artifacts) is private");
  const artifacts = path.join(dataDir, "artifacts");
  for (const digest of await readdir(artifacts)) {
    for (const file of await readdir(path.join(artifacts, digest)))
      t.equal((await stat(path.join(artifacts, digest, file))).mode & 0o777, 0o644, `${file} is 0644`);
  }

  up.kill("SIGINT");
  t.equal(await up.exited, 0, "Ctrl-C stops the hub and the agent cleanly");
});
