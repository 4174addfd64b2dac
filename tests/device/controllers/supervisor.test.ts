// The Supervisor against real processes: restarts with backoff, gives up after maxRetries, and
// stop leaves nothing of the process group behind, even a grandchild or a process that ignores
// SIGTERM.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import t, { type Test } from "tap";
import { lineSplitter } from "../../../operators/device/controllers/log-ring.ts";
import {
  backoffDelay,
  Supervisor,
  type SupervisorOptions,
} from "../../../operators/device/controllers/supervisor.ts";
import { onProcesses, waitFor } from "../../helpers/wait-for.ts";
import { pidsMarked, zombieChildren } from "../processes.ts";

/** A directory whose path marks every process started from a script in it. */
function scripts(t: Test): { dir: string; script: (name: string, body: string) => string } {
  const dir = mkdtempSync(path.join(tmpdir(), "rlark-devctl-sup-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return {
    dir,
    script: (name, body) => {
      const file = path.join(dir, name);
      writeFileSync(file, `#!/bin/sh\n${body}\n`);
      chmodSync(file, 0o755);
      return file;
    },
  };
}

function supervisor(t: Test, options: Partial<SupervisorOptions> & { command: string[] }): Supervisor {
  const s = new Supervisor({
    name: "test",
    startMs: 200,
    backoff: { initialMs: 50, maxMs: 400, resetAfterMs: 60_000 },
    maxRetries: 0,
    stopTimeoutMs: 5_000,
    ...options,
  });
  t.teardown(() => s.stop());
  return s;
}

t.test("backoff doubles from the initial delay up to the cap", async (t) => {
  const policy = { initialMs: 100, maxMs: 1000, resetAfterMs: 0 };
  t.same(
    [1, 2, 3, 4, 5, 6, 1000].map((n) => backoffDelay(policy, n)),
    [100, 200, 400, 800, 1000, 1000, 1000],
  );
});

t.test(
  "a process that keeps ending goes through BACKOFF, restarts, and is FAILED after maxRetries",
  async (t) => {
    const { script } = scripts(t);
    const crash = script("crash.sh", "echo started; echo oops >&2; exit 3");
    const lines: string[] = [];
    const s = supervisor(t, {
      command: [crash],
      maxRetries: 3,
      onLine: (stream, line) => lines.push(`${stream}:${line}`),
    });
    await s.start();
    await waitFor("FAILED after 3 retries", () => s.state === "FAILED", onProcesses);
    const status = s.status();
    t.equal(status.restarts, 3, "restarted three times before giving up");
    t.equal(status.lastExit, "exit code 3");
    t.equal(status.pid, 0);
    t.ok(
      lines.includes("stdout:started") && lines.includes("stderr:oops"),
      "both streams are read line by line",
    );
    await s.start();
    t.not(s.state, "FAILED", "start after FAILED starts afresh");
    await s.stop();
    t.equal(s.state, "STOPPED");
  },
);

t.test("a run that lasts startMs is RUNNING; when it ends the next start waits in BACKOFF", async (t) => {
  const { script } = scripts(t);
  const flag = path.join(tmpdir(), `rlark-devctl-sup-flag-${process.pid}`);
  t.teardown(() => rmSync(flag, { force: true }));
  // Runs until the flag file appears, then ends: a process that was up and then died.
  const service = script("service.sh", `while [ ! -e ${flag} ]; do sleep 0.05; done; exit 1`);
  const seen = new Set<string>();
  const s: Supervisor = supervisor(t, {
    command: [service],
    startMs: 100,
    backoff: { initialMs: 300, maxMs: 300, resetAfterMs: 60_000 },
    onChange: () => seen.add(s.state),
  });
  await s.start();
  await waitFor("RUNNING", () => s.state === "RUNNING", onProcesses);
  writeFileSync(flag, "");
  await waitFor("BACKOFF", () => s.state === "BACKOFF", onProcesses);
  t.match(s.status().restartAt, /^\d{4}-/, "BACKOFF says when the restart comes");
  rmSync(flag);
  await waitFor("RUNNING again", () => s.state === "RUNNING" && s.status().restarts === 1, onProcesses);
  t.same([...seen].sort(), ["BACKOFF", "RUNNING", "STARTING"]);
});

t.test("stop kills the whole process group: grandchildren and a process that ignores SIGTERM", async (t) => {
  const { dir, script } = scripts(t);
  const grandchild = script("grandchild.sh", "trap '' TERM; while :; do sleep 0.05; done");
  const parent = script("parent.sh", `${grandchild} &\n${grandchild} &\nwhile :; do sleep 0.05; done`);
  const s = supervisor(t, { command: [parent], stopTimeoutMs: 300 });
  await s.start();
  await waitFor("three marked processes", async () => (await pidsMarked(dir)).length >= 3, onProcesses);
  await s.stop();
  t.same(await pidsMarked(dir), [], "nothing of the group is left");
  t.same(zombieChildren(), [], "no zombie children");
  t.equal(s.state, "STOPPED");
});

t.test("when the leader dies, what it left in its group is killed before the restart", async (t) => {
  const { dir, script } = scripts(t);
  const orphan = script("orphan.sh", "while :; do sleep 0.05; done");
  const leader = script("leader.sh", `${orphan} &\nsleep 0.3\nexit 1`);
  const s = supervisor(t, {
    command: [leader],
    backoff: { initialMs: 2000, maxMs: 2000, resetAfterMs: 60_000 },
  });
  await s.start();
  await waitFor("BACKOFF", () => s.state === "BACKOFF", onProcesses);
  await waitFor("the orphan is gone", async () => (await pidsMarked(orphan)).length === 0, onProcesses);
  await s.stop();
  t.same(await pidsMarked(dir), []);
});

t.test("a command that cannot be spawned backs off like a crash", async (t) => {
  const s = supervisor(t, { command: ["/nonexistent/rlark-devctl-binary"], maxRetries: 1 });
  await s.start();
  await waitFor("FAILED", () => s.state === "FAILED", onProcesses);
  t.match(s.status().lastExit, /spawn error: .*ENOENT/);
});

t.test("lines are cut at the bound, so output without newlines cannot grow a buffer", async (t) => {
  const lines: string[] = [];
  const split = lineSplitter(8, (l) => lines.push(l));
  split(Buffer.from("abc\r\ndefghijklmnopqrstu"));
  split(Buffer.from("v\nw"));
  t.same(lines, ["abc", "defghijk", "lmnopqrs", "tuv"]);
});
