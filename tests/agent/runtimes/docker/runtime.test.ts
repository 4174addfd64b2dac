// The docker runtime on a real dockerd of the test's own: phases from container states and exit
// codes, names and labels, a new run on a change, prune, bad images and devices, bounded logs.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { text } from "node:stream/consumers";
import t from "tap";
import { taskStatus } from "../../../../operators/agent/report.ts";
import { startDockerd } from "../../../helpers/dockerd.ts";
import { waitFor } from "../../../helpers/wait-for.ts";
import {
  containersOf,
  dockerTask,
  NAMESPACE,
  onEngine,
  openDockerRuntime,
  podOf,
  waitForPod,
} from "./helpers.ts";

t.test("docker runtime on a real engine", async (t) => {
  const engine = await startDockerd(t);

  t.test("a two-task Job runs as named, labelled containers and succeeds", async (t) => {
    const runtime = await openDockerRuntime(t, engine);
    const tasks = [
      dockerTask(
        "two-a",
        { command: ["sh", "-c"], args: ["echo hello from $WHO"], env: [{ name: "WHO", value: "a" }] },
        { job: "two" },
      ),
      dockerTask("two-b", { command: ["sh", "-c", "sleep 1; exit 0"], replicas: 2 }, { job: "two" }),
    ];
    await runtime.apply(tasks);
    for (const name of ["two-a-0", "two-b-0", "two-b-1"])
      await waitForPod(runtime, name, "Succeeded", (p) => p.phase === "Succeeded");
    t.match(podOf(runtime, "two-a-0"), {
      exitCode: 0,
      reason: "Completed",
      job: "two",
      node: "robot",
      state: "Terminated",
    });
    for (const task of tasks)
      t.equal(taskStatus(task, runtime.observe().pods).phase, "Succeeded", task.metadata.name);
    const [container] = await containersOf(engine, "two-b-1");
    t.same(container?.Names, [`/rlark_${NAMESPACE}_two-b-1`]);
    t.match(container?.Labels, {
      "rlinf.io/job": "two",
      "rlinf.io/task": "two-b",
      "rlinf.io/replica": "1",
      "rlinf.io/task-uid": tasks[1]?.metadata.uid,
      "rlinf.io/owner": "robot",
    });
    const logs = await runtime.logStream({ namespace: NAMESPACE, name: "two-a-0" }, {});
    t.equal(await text(logs), "hello from a\n");
    await runtime.apply([]);
    await waitFor(
      "the finished Job's containers pruned",
      async () => (await containersOf(engine, "two-a-0")).length === 0,
      onEngine,
    );
  });

  t.test("a failing container is Failed with its exit code; Always restarts it", async (t) => {
    const runtime = await openDockerRuntime(t, engine);
    const failing = dockerTask("fails", { command: ["sh", "-c", "exit 3"] });
    const looping = dockerTask("loops", { command: ["sh", "-c", "exit 1"], restartPolicy: "Always" });
    await runtime.apply([failing, looping]);
    t.match(await waitForPod(runtime, "fails-0", "Failed", (p) => p.phase === "Failed"), {
      exitCode: 3,
      reason: "Error",
    });
    t.equal(taskStatus(failing, runtime.observe().pods).phase, "Failed");
    await waitForPod(runtime, "loops-0", "restarted by the engine", (p) => p.restarts >= 2);
  });

  t.test("stop, start and restart: the container goes, comes back, and a new run replaces it", async (t) => {
    const runtime = await openDockerRuntime(t, engine);
    const task = dockerTask("svc", { command: ["sleep", "1000"], restartPolicy: "Always" });
    await runtime.apply([task]);
    await waitForPod(runtime, "svc-0", "Running", (p) => p.phase === "Running" && p.ready);
    const [first] = await containersOf(engine, "svc-0");
    // stop: the Task is no longer desired
    await runtime.apply([]);
    await waitFor(
      "the stopped Task's container removed",
      async () => (await containersOf(engine, "svc-0")).length === 0,
      onEngine,
    );
    t.notOk(podOf(runtime, "svc-0"), "no pod once its container is gone");
    // start: desired again
    await runtime.apply([task]);
    await waitForPod(runtime, "svc-0", "Running again", (p) => p.phase === "Running");
    const [second] = await containersOf(engine, "svc-0");
    t.not(second?.Id, first?.Id);
    // restart: a new Task uid; and a template change: a new run each, one container at a time
    const restarted = { ...task, metadata: { ...task.metadata, uid: "restarted" } };
    await runtime.apply([restarted]);
    const third = await waitFor(
      "a new container for the restarted Task",
      async () => {
        const all = await containersOf(engine, "svc-0");
        return all.length === 1 && all[0]?.Id !== second?.Id && all[0]?.State === "running"
          ? all[0]
          : undefined;
      },
      onEngine,
    );
    const changed = dockerTask(
      "svc",
      { command: ["sleep", "999"], restartPolicy: "Always" },
      { uid: "restarted" },
    );
    await runtime.apply([changed]);
    await waitFor(
      "a new run on the template change",
      async () => {
        const all = await containersOf(engine, "svc-0");
        return (
          all.length === 1 &&
          all[0]?.Id !== third.Id &&
          all[0]?.Command.includes("999") &&
          all[0]?.State === "running"
        );
      },
      onEngine,
    );
  });

  t.test("a new runtime adopts the running containers and prunes those whose Task is gone", async (t) => {
    const first = await openDockerRuntime(t, engine);
    const keep = dockerTask("keep", { command: ["sleep", "1000"], restartPolicy: "Always" });
    const gone = dockerTask("gone", { command: ["sleep", "1000"], restartPolicy: "Always" });
    await first.apply([keep, gone]);
    await waitForPod(first, "keep-0", "Running", (p) => p.phase === "Running");
    await waitForPod(first, "gone-0", "Running", (p) => p.phase === "Running");
    const [before] = await containersOf(engine, "keep-0");
    await first.stop();
    const second = await openDockerRuntime(t, engine);
    t.match(podOf(second, "keep-0"), { phase: "Running" }, "seen before any desired set");
    await second.apply([keep]);
    await waitFor(
      "the gone Task's container pruned",
      async () => (await containersOf(engine, "gone-0")).length === 0,
      onEngine,
    );
    const after = await containersOf(engine, "keep-0");
    t.equal(after.length, 1, "no second container for the replica");
    t.equal(after[0]?.Id, before?.Id, "the same container, adopted");
    t.equal(after[0]?.State, "running");
  });

  t.test("a bad image and a missing device say so on the pod; other Tasks keep running", async (t) => {
    const runtime = await openDockerRuntime(t, engine);
    const good = dockerTask("good", { command: ["sleep", "1000"], restartPolicy: "Always" });
    const badImage = dockerTask("badimage", { image: "rlark-test/no-such-image:1", command: ["true"] });
    const noDevice = dockerTask("nodevice", { command: ["true"], devices: ["/dev/rlark-no-such-device"] });
    await runtime.apply([good, badImage, noDevice]);
    const pulled = await waitForPod(
      runtime,
      "badimage-0",
      "ErrImagePull",
      (p) => p.reason === "ErrImagePull",
    );
    t.match(pulled, {
      phase: "Pending",
      message: /image rlark-test\/no-such-image:1 is not on the engine and could not be pulled/,
    });
    const device = await waitForPod(
      runtime,
      "nodevice-0",
      "CreateContainerError",
      (p) => p.reason === "CreateContainerError",
    );
    t.match(device.message, /\/dev\/rlark-no-such-device/);
    t.match(taskStatus(badImage, runtime.observe().pods), {
      phase: "Pending",
      reason: "ErrImagePull",
      message: /no-such-image/,
    });
    await waitForPod(runtime, "good-0", "Running", (p) => p.phase === "Running" && p.ready);
    // a container that could not start is removed, else its name would block every retry
    await waitFor(
      "no half-made container left",
      async () => (await containersOf(engine, "nodevice-0")).length === 0,
      onEngine,
    );
  });

  t.test(
    "image pre-pull: each wanted image Present or Failed on the Node, retried, never holding pods",
    async (t) => {
      const runtime = await openDockerRuntime(t, engine);
      const node = () => runtime.observe().nodes[0];
      const pull = (image: string) => node()?.images?.find((i) => i.image === image);
      t.equal(node()?.images, undefined, "nothing wanted, nothing reported");
      const present = dockerTask("pp-good", { command: ["sleep", "1000"], restartPolicy: "Always" });
      const missing = dockerTask("pp-missing", { image: "rlark-test/pre-pull-missing:1", command: ["true"] });
      await runtime.apply([present, missing]);
      const failed = await waitFor(
        "the unreachable image Failed twice (retried with backoff)",
        async () => {
          const p = pull("rlark-test/pre-pull-missing:1");
          return p?.phase === "Failed" && (p.attempts ?? 0) >= 2 ? p : undefined;
        },
        onEngine,
      );
      // the engine's own words: no registry answers here
      t.match(failed.message, /pre-pull-missing|registry|lookup|dial|denied/, failed.message ?? "");
      t.notMatch(failed.message, /HTTP code/, "without dockerode's framing");
      t.ok((failed.message?.length ?? 0) <= 1024, "the message is bounded");
      t.match(pull(engine.image), { phase: "Present", attempts: 0 }, "the imported image is Present");
      t.ok(Date.parse(pull(engine.image)?.lastTransitionTime ?? ""), "with the time it became so");
      await waitForPod(
        runtime,
        "pp-good-0",
        "Running despite the failed pre-pull",
        (p) => p.phase === "Running",
      );
      await runtime.apply([present]);
      await waitFor(
        "the image no longer wanted is no longer reported",
        async () => node()?.images?.length === 1 && pull(engine.image)?.phase === "Present",
        onEngine,
      );
    },
  );

  t.test("logs are bounded by the engine's rotation, and follow streams new lines", async (t) => {
    const runtime = await openDockerRuntime(t, engine, { logMaxBytes: 4096 });
    const chatty = dockerTask("chatty", {
      command: [
        "sh",
        "-c",
        "i=0; while [ $i -lt 20000 ]; do echo line-$i; i=$((i+1)); done; echo last; sleep 1000",
      ],
      restartPolicy: "Always",
    });
    await runtime.apply([chatty]);
    const pod = { namespace: NAMESPACE, name: "chatty-0" };
    const all = await waitFor(
      "the last line logged",
      async () => {
        const out = await text(await runtime.logStream(pod, {}));
        return out.endsWith("last\n") ? out : undefined;
      },
      onEngine,
    );
    t.ok(all.length < 3 * 4096, `kept ${all.length} bytes of about 200,000 written`);
    t.equal(await text(await runtime.logStream(pod, { tail: 1 })), "last\n");
    t.equal((await text(await runtime.logStream(pod, { limitBytes: 3 }))).length, 3);
    await t.rejects(runtime.logStream(pod, { previous: true }), /previous is not available/);
    const follow = await runtime.logStream(pod, { follow: true, tail: 1 });
    const first = await new Promise<string>((resolve) =>
      follow.once("data", (b: Buffer) => resolve(b.toString())),
    );
    t.equal(first, "last\n");
    follow.destroy();
  });

  t.test("the Node's capacity comes from the engine's info", async (t) => {
    const runtime = await openDockerRuntime(t, engine);
    const info = await engine.client.info();
    const [node] = runtime.observe().nodes;
    t.match(node, {
      name: "robot",
      capacity: { cpu: String(info.NCPU), memory: `${Math.floor(info.MemTotal / 1024)}Ki` },
      nodeInfo: { containerRuntimeVersion: `docker://${info.ServerVersion}` },
      conditions: [{ type: "Ready", status: "True" }],
    });
  });

  t.test("the Node reports the machine's cameras and serial ports, following changes", async (t) => {
    const devDir = await mkdtemp(path.join(tmpdir(), "rlark-dev-"));
    t.teardown(() => rm(devDir, { recursive: true, force: true }));
    const node = (name: string, type: "c" | "b", major: number, minor: number) =>
      execFileSync("mknod", [path.join(devDir, name), type, String(major), String(minor)]);
    node("video0", "c", 1, 3); // a character device: reported as a camera
    node("ttyUSB0", "c", 1, 5);
    node("ttyACM1", "c", 1, 3);
    node("ttyS0", "c", 4, 64); // the machine's own UART: not reported
    node("video3", "b", 7, 0); // a block device named like a camera: not one
    await writeFile(path.join(devDir, "video9"), ""); // nor is a regular file
    const runtime = await openDockerRuntime(t, engine, { devDir });
    const at = (name: string) => path.join(devDir, name);
    t.match(runtime.observe().nodes[0], {
      capacity: { "rlinf.io/device": "3" },
      allocatable: { "rlinf.io/device": "3" },
      annotations: {
        "rlinf.io/devices": `serial:${at("ttyACM1")},serial:${at("ttyUSB0")},camera:${at("video0")}`,
      },
    });
    node("ttyUSB1", "c", 1, 5);
    await rm(at("video0"));
    await waitFor(
      "the Node following a plugged port and an unplugged camera",
      () =>
        runtime.observe().nodes[0]?.annotations["rlinf.io/devices"] ===
        `serial:${at("ttyACM1")},serial:${at("ttyUSB0")},serial:${at("ttyUSB1")}`,
      onEngine,
    );
    t.equal(runtime.observe().nodes[0]?.capacity["rlinf.io/device"], "3");
  });

  t.test("a Task's device is mapped into its container at the same path", async (t) => {
    const device = `/dev/rlark-test-${randomBytes(4).toString("hex")}`;
    execFileSync("mknod", ["-m", "666", device, "c", "1", "3"]); // /dev/null's numbers
    t.teardown(() => rm(device, { force: true }));
    const runtime = await openDockerRuntime(t, engine);
    const script = `test -c ${device} && echo bytes > ${device} && echo mapped`;
    await runtime.apply([dockerTask("dev", { command: ["sh", "-c", script], devices: [device] })]);
    await waitForPod(runtime, "dev-0", "Succeeded", (p) => p.phase === "Succeeded");
    t.equal(await text(await runtime.logStream({ namespace: NAMESPACE, name: "dev-0" }, {})), "mapped\n");
    const [container] = await containersOf(engine, "dev-0");
    const info = await engine.client.getContainer(container?.Id as string).inspect();
    t.same(info.HostConfig.Devices, [
      { PathOnHost: device, PathInContainer: device, CgroupPermissions: "rwm" },
    ]);
    await runtime.apply([]);
  });
});

t.test("an engine that goes down makes the Node NotReady and its pods Unknown", async (t) => {
  const engine = await startDockerd(t);
  const runtime = await openDockerRuntime(t, engine);
  await runtime.apply([dockerTask("svc", { command: ["sleep", "1000"], restartPolicy: "Always" })]);
  await waitForPod(runtime, "svc-0", "Running", (p) => p.phase === "Running");
  await engine.stop();
  const down = await waitFor(
    "the Node NotReady",
    () => {
      const node = runtime.observe().nodes[0];
      return node?.conditions.find((c) => c.type === "Ready" && c.status === "False");
    },
    onEngine,
  );
  t.match(down, { reason: "EngineUnreachable", message: /the engine does not answer/ });
  t.match(podOf(runtime, "svc-0"), { phase: "Unknown", ready: false, reason: "EngineUnreachable" });
});
