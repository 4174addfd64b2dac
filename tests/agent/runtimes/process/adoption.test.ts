import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import t from "tap";
import { wrapperArgs } from "../../../../operators/agent/runtimes/process/launch.ts";
import { readLogTail } from "../../../../operators/agent/runtimes/process/log-file.ts";
import type { RuntimeTask } from "../../../../operators/agent/runtimes/types.ts";
import { onProcesses, waitFor } from "../../../helpers/wait-for.ts";
import { isAlive, processesWith, rawTask, tempDir } from "./helpers.ts";
import { openRuntime, pod, waitForPod } from "./runtime-helpers.ts";

const agentScript = fileURLToPath(new URL("./fixtures/agent.ts", import.meta.url));

/** Runs an agent in its own process until its pods run, then kills it with SIGKILL (no cleanup). */
async function runAgentAndKillIt(dir: string, tasks: RuntimeTask[]): Promise<void> {
  const agent = spawn(process.execPath, [agentScript, dir, JSON.stringify(tasks)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise<void>((resolve) => agent.once("exit", () => resolve()));
  let out = "";
  agent.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString();
  });
  try {
    await waitFor("the agent's pods to run", () => out.includes("ready"), onProcesses);
  } finally {
    agent.kill("SIGKILL");
    await exited;
  }
}

/** Runs an agent that SIGKILLs itself at `crashAt` in its first launch; resolves once it is dead. */
async function runAgentUntilItCrashes(
  dir: string,
  tasks: RuntimeTask[],
  crashAt: "afterMarker" | "afterSpawn",
): Promise<void> {
  const agent = spawn(process.execPath, [agentScript, dir, JSON.stringify(tasks)], {
    stdio: ["ignore", "ignore", "inherit"],
    env: { ...process.env, RLARK_TEST_CRASH_AT: crashAt },
  });
  const signal = await new Promise<NodeJS.Signals | null>((resolve) =>
    agent.once("exit", (_code, signal) => resolve(signal)),
  );
  if (signal !== "SIGKILL")
    throw new Error(`the agent was to crash at ${crashAt}, but it exited (${signal})`);
}

const forever = (marker: string) => ["sh", "-c", "while :; do sleep 1; done", marker];
/** Waits for a file to appear, then exits with `code`. */
const exitOnFile = (file: string, code: number, marker: string) => [
  "sh",
  "-c",
  `while [ ! -f ${file} ]; do sleep 0.02; done; exit ${code}`,
  marker,
];

t.test("a new runtime adopts the running processes: no duplicates, exits still seen", async (t) => {
  const dir = tempDir(t);
  const go = join(dir, "go");
  const svcMarker = `adopt-svc-${process.pid}`;
  const jobMarker = `adopt-job-${process.pid}`;
  const tasks = [
    rawTask("svc", { kind: "Deployment", replicas: 2, command: forever(svcMarker) }),
    rawTask("batch", { kind: "Job", command: exitOnFile(go, 7, jobMarker) }),
  ];
  await runAgentAndKillIt(dir, tasks);
  await waitFor("the pods' processes", () => processesWith(svcMarker).length === 2, onProcesses);
  const before = processesWith(svcMarker);

  const { runtime } = await openRuntime(t, { stateDir: dir });
  const adopted = runtime.observe().pods;
  t.same(
    adopted.map((p) => [p.name, p.phase, p.restarts]),
    [
      ["batch-0", "Running", 0],
      ["svc-0", "Running", 0],
      ["svc-1", "Running", 0],
    ],
    "known before any desired set arrives",
  );
  await runtime.apply(tasks);
  t.same(processesWith(svcMarker), before, "applying the same Tasks starts nothing new");
  t.same(
    runtime.observe().pods.map((p) => p.pid),
    adopted.map((p) => p.pid),
  );

  writeFileSync(go, "");
  const failed = await waitForPod(runtime, "batch-0", "Failed", (p) => p.phase === "Failed");
  t.match(failed, { exitCode: 7, reason: "Error" }, "the exit code of a process the runtime did not start");

  const [victim] = processesWith(svcMarker);
  process.kill(victim!, "SIGKILL");
  await waitFor(
    "the crashed adopted pod to be restarted",
    () =>
      runtime
        .observe()
        .pods.some((p) => p.name.startsWith("svc-") && p.restarts === 1 && p.state === "Running"),
    onProcesses,
  );
  await waitFor("two service processes again", () => processesWith(svcMarker).length === 2, onProcesses);
  t.notOk(isAlive(victim!));

  await runtime.apply([]);
  await waitFor("everything to be stopped", () => runtime.observe().pods.length === 0, onProcesses);
  t.same(processesWith(svcMarker), []);
  t.same(readdirSync(join(dir, "pods")), [], "and forgotten");
});

t.test("a new runtime reaps Tasks no longer desired and learns how processes ended meanwhile", async (t) => {
  const dir = tempDir(t);
  const go = join(dir, "go");
  const keepMarker = `reap-keep-${process.pid}`;
  const dropMarker = `reap-drop-${process.pid}`;
  const endMarker = `reap-end-${process.pid}`;
  const keep = rawTask("keep", { kind: "Deployment", command: forever(keepMarker) });
  const drop = rawTask("drop", { kind: "StatefulSet", replicas: 2, command: forever(dropMarker) });
  const ended = rawTask("ended", { kind: "Job", command: exitOnFile(go, 5, endMarker) });
  await runAgentAndKillIt(dir, [keep, drop, ended]);
  await waitFor(
    "all processes",
    () => processesWith(dropMarker).length === 2 && processesWith(endMarker).length === 1,
    onProcesses,
  );
  const kept = processesWith(keepMarker);

  // The Job ends while no agent runs.
  writeFileSync(go, "");
  await waitFor("the Job's process to end", () => processesWith(endMarker).length === 0, onProcesses);

  const { runtime } = await openRuntime(t, { stateDir: dir });
  t.match(pod(runtime, "ended-0"), { phase: "Failed", exitCode: 5 }, "its exit code survived the agent");
  await runtime.apply([keep, ended]);
  await waitFor(
    "the dropped Task's processes to be reaped",
    () => processesWith(dropMarker).length === 0,
    onProcesses,
  );
  await waitFor(
    "its pods to be forgotten",
    () => !pod(runtime, "drop-0") && !pod(runtime, "drop-1"),
    onProcesses,
  );
  t.same(processesWith(keepMarker), kept, "the kept Task's process is the same one");
  t.equal(pod(runtime, "keep-0")?.restarts, 0);
});

t.test("a Job that finished before the agent restarted is not run again", async (t) => {
  const dir = tempDir(t);
  const runs = join(dir, "runs");
  const job = rawTask("once", { kind: "Job", command: ["sh", "-c", `echo run >> ${runs}`] });
  {
    const { runtime } = await openRuntime(t, { stateDir: dir });
    await runtime.apply([job]);
    await waitForPod(runtime, "once-0", "Succeeded", (p) => p.phase === "Succeeded");
    await runtime.stop();
  }
  const { runtime } = await openRuntime(t, { stateDir: dir });
  await runtime.apply([job]);
  t.match(pod(runtime, "once-0"), { phase: "Succeeded", exitCode: 0 });
  t.equal(readFileSync(runs, "utf8"), "run\n", "it ran exactly once");
});

t.test("a process started under the state dir that no record accounts for is killed on open", async (t) => {
  const dir = tempDir(t);
  const marker = `stray-${process.pid}`;
  const stray = spawn(
    "/bin/sh",
    wrapperArgs(join(dir, "pods", "agent-local_lost-0", "exit-code"), "lost-token", forever(marker)),
    {
      detached: true,
      stdio: "ignore",
    },
  );
  t.teardown(() => {
    try {
      process.kill(-stray.pid!, "SIGKILL");
    } catch {
      // Already gone, as it should be.
    }
  });
  await waitFor("the stray process", () => processesWith(marker).length === 1, onProcesses);
  await openRuntime(t, { stateDir: dir });
  // A killed process loses its command line before it turns zombie: wait for both.
  await waitFor(
    "the stray to be killed",
    () => processesWith(marker).length === 0 && !isAlive(stray.pid!),
    onProcesses,
  );
  t.notOk(isAlive(stray.pid!));
});

t.test("a second agent on a state dir in use is refused; a dead agent's lock is taken over", async (t) => {
  const dir = tempDir(t);
  const holder = spawn(
    process.execPath,
    [agentScript, dir, JSON.stringify([rawTask("idle", { command: forever(`lock-${process.pid}`) })])],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const exited = new Promise<void>((resolve) => holder.once("exit", () => resolve()));
  t.teardown(async () => {
    holder.kill("SIGKILL");
    await exited;
  });
  let out = "";
  holder.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString();
  });
  await waitFor("the first agent to run", () => out.includes("ready"), onProcesses);
  await t.rejects(
    openRuntime(t, { stateDir: dir }),
    new RegExp(`in use by the process runtime of pid ${holder.pid}`),
  );
  holder.kill("SIGKILL");
  await exited;
  const { runtime } = await openRuntime(t, { stateDir: dir });
  t.equal(pod(runtime, "idle-0")?.state, "Running", "the new agent adopted the pod");
});

t.test("a pod caught mid-download by an agent restart starts once, under the new runtime", async (t) => {
  const dir = tempDir(t);
  const runs = join(dir, "runs");
  const tool = `#!/bin/sh\necho run >> ${runs}\n`;
  const digest = createHash("sha256").update(tool).digest("hex");
  const held: ServerResponse[] = [];
  const server = createServer((_req, res) => {
    held.push(res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/tool`;
  const task = rawTask("fetching", { kind: "Job", command: ["./tool"], artifact: { url, sha256: digest } });

  const first = await openRuntime(t, { stateDir: join(dir, "state") });
  await first.runtime.apply([task]);
  await waitFor("the first download to hang", () => held.length === 1, onProcesses);
  t.match(pod(first.runtime, "fetching-0"), { phase: "Pending", reason: "ArtifactDownloading" });
  await first.runtime.stop();

  const second = await openRuntime(t, { stateDir: join(dir, "state") });
  await waitFor("the new runtime to ask again", () => held.length === 2, onProcesses);
  for (const res of held) res.end(tool);
  await waitForPod(second.runtime, "fetching-0", "Succeeded", (p) => p.phase === "Succeeded");
  t.equal(readFileSync(runs, "utf8"), "run\n", "the old runtime's download did not start it too");
});

t.test("stop() leaves pods running; the next runtime adopts them and sees how they end", async (t) => {
  const dir = tempDir(t);
  const go = join(dir, "go");
  const marker = `detach-${process.pid}`;
  const task = rawTask("worker", { kind: "Job", command: exitOnFile(go, 4, marker) });
  const first = await openRuntime(t, { stateDir: join(dir, "state") });
  await first.runtime.apply([task]);
  const running = await waitForPod(first.runtime, "worker-0", "running", (p) => p.state === "Running");
  await first.runtime.stop();
  await waitFor("the process to exec", () => processesWith(marker).length === 1, onProcesses);
  t.ok(isAlive(running.pid!), "still running after the runtime stopped");

  const second = await openRuntime(t, { stateDir: join(dir, "state") });
  t.match(pod(second.runtime, "worker-0"), { state: "Running", pid: running.pid });
  writeFileSync(go, "");
  const failed = await waitForPod(second.runtime, "worker-0", "Failed", (p) => p.phase === "Failed");
  t.equal(failed.exitCode, 4);
});

t.test("an unreadable pod record is skipped with a warning, not fatal", async (t) => {
  const dir = tempDir(t);
  mkdirSync(join(dir, "pods", "agent-local_torn-0"), { recursive: true });
  writeFileSync(join(dir, "pods", "agent-local_torn-0", "pod.json"), "{ torn");
  const warnings: string[] = [];
  const logger = { info() {}, error() {}, warn: (message: string) => warnings.push(message) };
  const { runtime } = await openRuntime(t, { stateDir: dir, logger });
  t.same(runtime.observe().pods, []);
  t.match(warnings, [/unreadable pod state/]);
});

/** Appends "run" to `runs` as it starts, then waits for `go` and exits with `code`. */
const countedRun = (runs: string, go: string, code: number, marker: string) => [
  "sh",
  "-c",
  `echo run >> ${runs}; while [ ! -f ${go} ]; do sleep 0.02; done; exit ${code}`,
  marker,
];

t.test("a Job whose agent was killed right after spawning it is adopted, not run again", async (t) => {
  const dir = tempDir(t);
  const runs = join(dir, "runs");
  const go = join(dir, "go");
  const marker = `spawned-${process.pid}`;
  const job = rawTask("once", { kind: "Job", command: countedRun(runs, go, 0, marker) });
  await runAgentUntilItCrashes(join(dir, "state"), [job], "afterSpawn");
  await waitFor("the first run to start", () => existsSync(runs), onProcesses);
  const [first] = processesWith(marker);

  const { runtime } = await openRuntime(t, { stateDir: join(dir, "state") });
  await runtime.apply([job]);
  t.match(pod(runtime, "once-0"), { state: "Running", restarts: 0 }, "the running process is adopted");
  t.same(processesWith(marker), [first], "and is the only one");
  writeFileSync(go, "");
  await waitForPod(runtime, "once-0", "Succeeded", (p) => p.phase === "Succeeded");
  t.equal(readFileSync(runs, "utf8"), "run\n", "the command ran exactly once");
});

t.test("a Job that ran to its end while its crashed agent was away keeps its exit code", async (t) => {
  const dir = tempDir(t);
  const runs = join(dir, "runs");
  const go = join(dir, "go");
  const marker = `ended-unrecorded-${process.pid}`;
  writeFileSync(go, "");
  const job = rawTask("once", { kind: "Job", command: countedRun(runs, go, 3, marker) });
  await runAgentUntilItCrashes(join(dir, "state"), [job], "afterSpawn");
  await waitFor("the run to end", () => existsSync(runs) && processesWith(marker).length === 0, onProcesses);
  const exitCode = join(dir, "state", "pods", "agent-local_once-0", "exit-code");
  await waitFor("its exit code to be written", () => readFileSync(exitCode, "utf8") === "3\n", onProcesses);

  const { runtime } = await openRuntime(t, { stateDir: join(dir, "state") });
  await runtime.apply([job]);
  t.match(pod(runtime, "once-0"), { phase: "Failed", exitCode: 3 });
  t.equal(readFileSync(runs, "utf8"), "run\n", "the command ran exactly once");
});

t.test("a Job whose agent was killed before spawning it runs once, under the next agent", async (t) => {
  const dir = tempDir(t);
  const runs = join(dir, "runs");
  const go = join(dir, "go");
  const marker = `never-spawned-${process.pid}`;
  writeFileSync(go, "");
  const job = rawTask("once", { kind: "Job", command: countedRun(runs, go, 0, marker) });
  await runAgentUntilItCrashes(join(dir, "state"), [job], "afterMarker");
  t.notOk(existsSync(runs), "the crashed agent started nothing");

  const { runtime } = await openRuntime(t, { stateDir: join(dir, "state") });
  await runtime.apply([job]);
  await waitForPod(runtime, "once-0", "Succeeded", (p) => p.phase === "Succeeded");
  t.equal(readFileSync(runs, "utf8"), "run\n", "the command ran exactly once");
});

t.test("an adopted pod's output stays bounded and keeps flowing after its agent is killed", async (t) => {
  const dir = tempDir(t);
  const state = join(dir, "state");
  const maxBytes = 64 * 1024;
  const marker = `chatty-${process.pid}`;
  const counter = ["sh", "-c", 'i=0; while :; do i=$((i+1)); echo "line $i"; done', marker];
  const task = rawTask("chatty", { kind: "Deployment", command: counter });
  const agent = spawn(process.execPath, [agentScript, state, JSON.stringify([task])], {
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, RLARK_TEST_LOG_MAX_BYTES: String(maxBytes) },
  });
  const exited = new Promise<void>((resolve) => agent.once("exit", () => resolve()));
  let out = "";
  agent.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString();
  });
  try {
    await waitFor("the agent's pod to run", () => out.includes("ready"), onProcesses);
  } finally {
    agent.kill("SIGKILL");
    await exited;
  }
  const [writer] = processesWith(marker);
  const log = join(state, "pods", "agent-local_chatty-0", "output.log");
  const lastLine = async () => Number((await readLogTail(log, { tail: 1 })).replace("line ", ""));
  const onDisk = () =>
    [log, `${log}.1`].reduce((sum, f) => sum + (statSync(f, { throwIfNoEntry: false })?.size ?? 0), 0);
  const atKill = await lastLine();
  let most = 0;
  // 200,000 lines are about 2 MB: thirty times the limit, all written with no agent.
  await waitFor(
    "200,000 more lines",
    async () => {
      most = Math.max(most, onDisk());
      return (await lastLine()) > atKill + 200_000;
    },
    { attempts: 2400, everyMs: 25 },
  );
  t.ok(most <= 2 * maxBytes, `at most 2 × ${maxBytes} bytes on disk (saw ${most})`);
  t.same(processesWith(marker), [writer], "the same process, not killed by a broken pipe");

  const { runtime } = await openRuntime(t, { stateDir: state });
  t.match(pod(runtime, "chatty-0"), { state: "Running", restarts: 0 });
  // The pod is still writing: the log may end inside a line. Every line it holds whole (ended by a
  // newline) must be one of the program's whole lines, never a piece cut off at the front.
  const text = await runtime.logs({ namespace: "agent-local", name: "chatty-0" }, { tail: 3 });
  const whole = text.split("\n").slice(0, -1);
  t.ok(whole.length >= 2, `two whole lines at least (${JSON.stringify(text)})`);
  for (const line of whole) t.match(line, /^line \d+$/, "the tail reads whole lines");
});
