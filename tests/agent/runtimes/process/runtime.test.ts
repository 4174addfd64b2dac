import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import t from "tap";
import { podObject } from "../../../../operators/agent/report.ts";
import { onProcesses, waitFor } from "../../../helpers/wait-for.ts";
import { isAlive, processesWith, rawTask, script, tempDir } from "./helpers.ts";
import { openRuntime, pod, waitForPod } from "./runtime-helpers.ts";

t.test("a Raw Job that exits 0 ends Succeeded and is not restarted", async (t) => {
  const { runtime } = await openRuntime(t);
  await runtime.apply([rawTask("ok", { kind: "Job", command: ["sh", "-c", "echo done"] })]);
  const done = await waitForPod(runtime, "ok-0", "Succeeded", (p) => p.phase === "Succeeded");
  t.match(done, {
    state: "Terminated",
    exitCode: 0,
    reason: "Completed",
    restarts: 0,
    ready: false,
    node: "test-node",
  });
  t.ok(done.startTime && done.finishTime);
  t.equal(await runtime.logs({ namespace: "agent-local", name: "ok-0" }), "done\n");
});

t.test("a process can write to /dev/stdout and /dev/stderr, as in a container", async (t) => {
  const { runtime } = await openRuntime(t);
  const command = ["sh", "-c", "echo out > /dev/stdout && echo err > /dev/stderr"];
  await runtime.apply([rawTask("devs", { kind: "Job", command })]);
  const done = await waitForPod(runtime, "devs-0", "ended", (p) => p.state === "Terminated");
  t.equal(await runtime.logs({ namespace: "agent-local", name: "devs-0" }), "out\nerr\n");
  t.equal(done.exitCode, 0);
});

t.test("a pod's one container is reported under its task template's name", async (t) => {
  const { runtime } = await openRuntime(t);
  const task = rawTask("train-policy", { kind: "Job", command: ["true"] }, { job: "train" });
  task.spec.task = "policy";
  await runtime.apply([task]);
  const done = await waitForPod(runtime, "train-policy-0", "ended", (p) => p.state === "Terminated");
  const status = podObject("edge", done).status as { containerStatuses: { name: string }[] };
  t.same(
    status.containerStatuses.map((c) => c.name),
    ["policy"],
  );
});

t.test("a Raw Job that exits 3 ends Failed with exit code 3", async (t) => {
  const { runtime } = await openRuntime(t);
  await runtime.apply([rawTask("bad", { kind: "Job", command: ["sh", "-c", "exit 3"] })]);
  const failed = await waitForPod(runtime, "bad-0", "Failed", (p) => p.phase === "Failed");
  t.match(failed, { exitCode: 3, reason: "Error", restarts: 0 });
  t.notOk(failed.signal);
});

t.test("a Raw Job killed by a signal ends Failed with the signal as reason", async (t) => {
  const { runtime } = await openRuntime(t);
  await runtime.apply([rawTask("killed", { kind: "Job", command: ["sh", "-c", "kill -KILL $$"] })]);
  const failed = await waitForPod(runtime, "killed-0", "Failed", (p) => p.phase === "Failed");
  t.match(failed, { reason: "Signaled", signal: "SIGKILL", exitCode: 137 });
});

t.test("a crashing Deployment is restarted with growing backoff and its restarts counted", async (t) => {
  const dir = tempDir(t);
  const runs = join(dir, "runs");
  const { runtime } = await openRuntime(t);
  const reasons = new Set<string>();
  const exitCodes = new Set<number>();
  runtime.onChange(() => {
    const p = pod(runtime, "crash-0");
    if (p?.reason) reasons.add(p.reason);
    if (p?.exitCode !== undefined) exitCodes.add(p.exitCode);
  });
  await runtime.apply([
    rawTask("crash", { kind: "Deployment", command: ["sh", "-c", `date +%s%3N >> ${runs}; exit 1`] }),
  ]);
  const p = await waitForPod(runtime, "crash-0", "restarted 3 times", (p) => p.restarts >= 3);
  t.equal(p.phase, "Running", "a restarting Deployment pod stays Running, as in Kubernetes");
  await waitFor(
    "the fourth run to be recorded",
    () => readFileSync(runs, "utf8").trim().split("\n").length >= 4,
    onProcesses,
  );
  const starts = readFileSync(runs, "utf8").trim().split("\n").map(Number);
  const gaps = starts.slice(1).map((s, i) => s - (starts[i] ?? 0));
  t.ok((gaps[0] ?? 0) >= 60, `first restart waits the initial backoff (${gaps[0]} ms)`);
  t.ok((gaps[1] ?? 0) >= 120, `second waits twice as long (${gaps[1]} ms)`);
  t.ok((gaps[2] ?? 0) >= 240, `third doubles again (${gaps[2]} ms)`);
  t.ok(reasons.has("CrashLoopBackOff"), "the backoff is reported");
  t.ok(exitCodes.has(1), "the last exit code is reported while backing off");
});

t.test(
  "processes get RLARK_* identity, the Task's env over a minimal env, and a per-task working dir",
  async (t) => {
    process.env.RLARK_TEST_AGENT_SECRET = "must-not-leak";
    t.teardown(() => {
      delete process.env.RLARK_TEST_AGENT_SECRET;
    });
    const { runtime, stateDir } = await openRuntime(t);
    await runtime.apply([
      rawTask(
        "envy",
        {
          kind: "Job",
          replicas: 2,
          command: ["sh", "-c"],
          args: [
            'echo "$RLARK_TASK|$RLARK_JOB|$RLARK_POD_NAME|$RLARK_REPLICA_INDEX|$MY_VAR|$RLARK_TEST_AGENT_SECRET|$(pwd)"',
          ],
          env: [{ name: "MY_VAR", value: "hello" }],
        },
        { job: "ppo" },
      ),
    ]);
    await waitForPod(runtime, "envy-1", "Succeeded", (p) => p.phase === "Succeeded");
    const line = (await runtime.logs({ namespace: "agent-local", name: "envy-1" })).trim();
    t.equal(line, `envy|ppo|envy-1|1|hello||${join(stateDir, "work", "agent-local_envy")}`);
  },
);

t.test("an artifact is downloaded, verified and run; a wrong digest fails and nothing runs", async (t) => {
  const dir = tempDir(t);
  const marker = join(dir, "ran");
  const tool = `#!/bin/sh\necho "ran $0 $RLARK_ARTIFACT" >> ${marker}\n`;
  const digest = createHash("sha256").update(tool).digest("hex");
  const server = createServer((_req, res) => res.end(tool));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/tool`;
  const { runtime, stateDir } = await openRuntime(t);

  await runtime.apply([
    rawTask("bad-art", { kind: "Job", command: ["./tool"], artifact: { url, sha256: "f".repeat(64) } }),
  ]);
  const failed = await waitForPod(runtime, "bad-art-0", "Failed", (p) => p.phase === "Failed");
  t.match(failed, { reason: "ArtifactChecksumMismatch", message: /sha256/ });
  t.notOk(existsSync(marker), "the unverified artifact never ran");

  await runtime.apply([
    rawTask("good-art", { kind: "Job", command: ["./tool"], artifact: { url, sha256: digest } }),
  ]);
  await waitForPod(runtime, "good-art-0", "Succeeded", (p) => p.phase === "Succeeded");
  const cached = join(stateDir, "artifacts", digest, "tool");
  t.equal(readFileSync(marker, "utf8"), `ran ${cached} ${cached}\n`, "./tool resolved to the cached file");
  t.notOk(pod(runtime, "bad-art-0"), "the Task no longer desired is forgotten");
});

t.test("stopping a pod sends SIGTERM to its process group", async (t) => {
  const dir = tempDir(t);
  const got = join(dir, "got");
  const marker = `term-child-${process.pid}`;
  const { runtime } = await openRuntime(t);
  // The command leaves a child behind; the stop must reach it through the group.
  const body = script(
    dir,
    "svc.sh",
    `#!/bin/sh\nsh -c 'while :; do sleep 1; done' ${marker} &\ntrap 'echo TERM > ${got}; exit 0' TERM\nwhile :; do sleep 0.02; done\n`,
  );
  await runtime.apply([rawTask("svc", { command: [body] })]);
  await waitFor("the service and its child", () => processesWith(marker).length === 1, onProcesses);
  const { pid } = await waitForPod(runtime, "svc-0", "running", (p) => p.state === "Running");
  await runtime.apply([]);
  t.equal(pod(runtime, "svc-0")?.terminating, true, "reported terminating until gone");
  await waitFor("the pod to be forgotten", () => !pod(runtime, "svc-0"), onProcesses);
  t.equal(readFileSync(got, "utf8"), "TERM\n");
  t.notOk(isAlive(pid!));
  t.same(processesWith(marker), [], "the child left in the group is gone too");
});

t.test("a process that ignores SIGTERM is killed after the grace period", async (t) => {
  const dir = tempDir(t);
  const stubborn = script(
    dir,
    "stubborn.mjs",
    `process.on("SIGTERM", () => console.log("ignoring TERM")); console.log("up"); setInterval(() => {}, 1000);\n`,
  );
  const { runtime } = await openRuntime(t, { terminationGracePeriodMs: 400 });
  await runtime.apply([rawTask("stubborn", { command: [process.execPath, stubborn] })]);
  await waitFor(
    "it to start",
    async () => {
      const out = await runtime.logs({ namespace: "agent-local", name: "stubborn-0" });
      if (out !== "up\n") throw new Error(JSON.stringify(out.slice(0, 300)));
      return true;
    },
    onProcesses,
  );
  const { pid } = pod(runtime, "stubborn-0")!;
  const started = Date.now();
  await runtime.apply([]);
  await waitFor(
    "SIGTERM to be ignored",
    async () =>
      (await runtime.logs({ namespace: "agent-local", name: "stubborn-0" })).includes("ignoring TERM"),
    onProcesses,
  );
  t.ok(isAlive(pid!), "still alive after SIGTERM");
  await waitFor("the pod to be gone", () => !pod(runtime, "stubborn-0"), onProcesses);
  t.notOk(isAlive(pid!), "killed");
  t.ok(Date.now() - started >= 400, "not before the grace period ended");
});

t.test("removing a Task stops its processes; other Tasks keep theirs", async (t) => {
  const { runtime } = await openRuntime(t);
  const markerA = `keep-${process.pid}`;
  const markerB = `drop-${process.pid}`;
  const a = rawTask("keep", { command: ["sh", "-c", "while :; do sleep 1; done", markerA] });
  const b = rawTask("drop", { replicas: 2, command: ["sh", "-c", "while :; do sleep 1; done", markerB] });
  await runtime.apply([a, b]);
  await waitFor(
    "three processes",
    () => processesWith(markerA).length === 1 && processesWith(markerB).length === 2,
    onProcesses,
  );
  const keptPid = processesWith(markerA)[0];
  await runtime.apply([a]);
  await waitFor("drop's processes to end", () => processesWith(markerB).length === 0, onProcesses);
  await waitFor("drop's pods to be forgotten", () => runtime.observe().pods.length === 1, onProcesses);
  t.same(processesWith(markerA), [keptPid], "the remaining Task's process was not touched");
});

t.test("a changed spec restarts the pods; scaling down stops only the surplus", async (t) => {
  const { runtime } = await openRuntime(t);
  const marker = `gen-${process.pid}`;
  const v1 = rawTask(
    "svc",
    { replicas: 2, command: ["sh", "-c", "while :; do sleep 1; done", marker] },
    { uid: "u1", generation: 1 },
  );
  await runtime.apply([v1]);
  const first = await waitForPod(runtime, "svc-0", "running", (p) => p.state === "Running");
  await waitForPod(runtime, "svc-1", "running", (p) => p.state === "Running");

  const scaled = rawTask(
    "svc",
    { replicas: 1, command: ["sh", "-c", "while :; do sleep 1; done", marker] },
    { uid: "u1", generation: 2 },
  );
  await runtime.apply([scaled]);
  await waitFor("svc-1 to go", () => !pod(runtime, "svc-1"), onProcesses);
  t.equal(pod(runtime, "svc-0")?.pid, first.pid, "svc-0 kept running through the scale-down");
  t.equal(pod(runtime, "svc-0")?.generation, 2);

  const changed = rawTask(
    "svc",
    {
      replicas: 1,
      command: ["sh", "-c", "while :; do sleep 1; done", marker],
      env: [{ name: "X", value: "2" }],
    },
    { uid: "u1", generation: 3 },
  );
  await runtime.apply([changed]);
  const second = await waitForPod(
    runtime,
    "svc-0",
    "restarted",
    (p) => p.state === "Running" && p.pid !== first.pid,
  );
  t.equal(second.restarts, 0, "a replacement is a new pod, not a restart");
  await waitFor(
    "the new process to exec",
    () => processesWith(marker).includes(second.pid ?? -1) || processesWith(marker).length === 1,
    onProcesses,
  );
  t.equal(processesWith(marker).length, 1, "the old process is gone, no duplicate");
  t.notOk(isAlive(first.pid!));
});

t.test(
  "a pod writing far more than the log limit keeps at most two files of it; the tail is its end",
  async (t) => {
    const maxBytes = 256 * 1024;
    const { runtime, stateDir } = await openRuntime(t, { logs: { maxBytes } });
    // About 20 MB, as fast as seq writes it.
    await runtime.apply([
      rawTask("chatty", { kind: "Job", command: ["sh", "-c", "seq 1 2500000; echo END"] }),
    ]);
    const logDir = join(stateDir, "pods", "agent-local_chatty-0");
    const onDisk = () =>
      readdirSync(logDir)
        .filter((name) => name.startsWith("output.log"))
        .reduce((sum, name) => sum + (statSync(join(logDir, name), { throwIfNoEntry: false })?.size ?? 0), 0);
    let most = 0;
    await waitFor(
      "the Job to succeed",
      () => {
        if (existsSync(logDir)) most = Math.max(most, onDisk());
        return pod(runtime, "chatty-0")?.phase === "Succeeded";
      },
      { attempts: 2400, everyMs: 25 },
    );
    most = Math.max(most, onDisk());
    t.ok(most <= 2 * maxBytes, `at most 2 × ${maxBytes} bytes on disk (saw ${most})`);
    t.ok(most > maxBytes, "and the limit was reached");
    t.same(
      readdirSync(logDir)
        .filter((n) => n.startsWith("output.log"))
        .sort(),
      ["output.log", "output.log.1"],
    );
    t.equal(
      await runtime.logs({ namespace: "agent-local", name: "chatty-0" }, { tail: 3 }),
      "2499999\n2500000\nEND\n",
    );
  },
);

t.test("the Node report carries the machine's capacity and the configured labels", async (t) => {
  const { runtime } = await openRuntime(t, { nodeLabels: { "rlark.io/node-category-edge": "true" } });
  const { nodes, pods } = runtime.observe();
  t.equal(nodes.length, 1);
  t.match(nodes[0], {
    name: "test-node",
    labels: { "rlark.io/node-category-edge": "true" },
    capacity: { cpu: /^\d+$/, memory: /^\d+Ki$/ },
    addresses: [{ type: "InternalIP", address: "127.0.0.1" }],
  });
  t.same(pods, []);
});

t.test("stop({ terminatePods }) ends every process; a stopped runtime refuses work", async (t) => {
  const { runtime } = await openRuntime(t);
  const marker = `all-${process.pid}`;
  await runtime.apply([
    rawTask("a", { replicas: 2, command: ["sh", "-c", "while :; do sleep 1; done", marker] }),
  ]);
  await waitFor("two processes", () => processesWith(marker).length === 2, onProcesses);
  await runtime.stop({ terminatePods: true });
  t.same(processesWith(marker), []);
  await t.rejects(runtime.apply([]), /stopped/);
});

t.test("stop({ terminatePods }) after an agent's detaching stop still ends the pods", async (t) => {
  const { runtime } = await openRuntime(t);
  const marker = `detached-${process.pid}`;
  await runtime.apply([rawTask("d", { command: ["sh", "-c", "while :; do sleep 1; done", marker] })]);
  await waitFor("the process", () => processesWith(marker).length === 1, onProcesses);
  await runtime.stop();
  t.equal(processesWith(marker).length, 1, "a plain stop leaves the pod for the next runtime");
  await runtime.stop({ terminatePods: true });
  t.same(processesWith(marker), [], "the second stop ended it");
});

t.test("a detached runtime does not end pods another runtime has adopted", async (t) => {
  const { runtime, stateDir } = await openRuntime(t);
  const marker = `adopted-${process.pid}`;
  await runtime.apply([rawTask("e", { command: ["sh", "-c", "while :; do sleep 1; done", marker] })]);
  await waitFor("the process", () => processesWith(marker).length === 1, onProcesses);
  await runtime.stop();
  const { runtime: next } = await openRuntime(t, { stateDir });
  await waitForPod(next, "e-0", "adopted", (p) => p.phase === "Running");
  await runtime.stop({ terminatePods: true });
  t.equal(processesWith(marker).length, 1, "still running under the runtime that adopted it");
});

t.test("a failed artifact download leaves the pod Pending and is retried until it succeeds", async (t) => {
  const tool = "#!/bin/sh\necho fetched\n";
  const digest = createHash("sha256").update(tool).digest("hex");
  let requests = 0;
  const server = createServer((_req, res) => {
    requests++;
    if (requests <= 2) res.writeHead(503).end();
    else res.end(tool);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/tool`;
  const { runtime } = await openRuntime(t);
  const seen: string[] = [];
  runtime.onChange(() => {
    const p = pod(runtime, "flaky-0");
    if (p) seen.push(`${p.phase}/${p.reason ?? ""}`);
  });
  await runtime.apply([
    rawTask("flaky", { kind: "Job", command: ["./tool"], artifact: { url, sha256: digest } }),
  ]);
  await waitForPod(runtime, "flaky-0", "Succeeded", (p) => p.phase === "Succeeded");
  t.ok(seen.includes("Pending/ArtifactDownloadFailed"), "the failure was reported while Pending");
  t.equal(requests, 3);
  t.equal(await runtime.logs({ namespace: "agent-local", name: "flaky-0" }), "fetched\n");
});

t.test("a Task's own termination grace period overrides the runtime's", async (t) => {
  const dir = tempDir(t);
  const stubborn = script(dir, "stubborn.sh", "#!/bin/sh\ntrap '' TERM\nwhile :; do sleep 0.02; done\n");
  // The runtime would wait a minute; the Task asks for 0.3 s.
  const { runtime } = await openRuntime(t, { terminationGracePeriodMs: 60_000 });
  await runtime.apply([rawTask("quick", { command: [stubborn], terminationGracePeriodSeconds: 0.3 })]);
  const { pid } = await waitForPod(runtime, "quick-0", "running", (p) => p.state === "Running");
  await runtime.apply([]);
  await waitFor("the pod to be killed", () => !pod(runtime, "quick-0"), { attempts: 400, everyMs: 25 });
  t.notOk(isAlive(pid!));
});
