// The ROS controller end to end, with the stand-in scripts of robot-scripts.ts as roscore and
// roslaunch (ROS itself is not installable here): the start order, process state and health as
// seed 002 names them, the readiness check, restarts with backoff, logs (tail and follow), and a
// stop that leaves no process of any group and no zombie.
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import t, { type Test } from "tap";
import type { CapabilityFile } from "../../../operators/device/capability-file.ts";
import { ConfigSource } from "../../../operators/device/controllers/config-file.ts";
import {
  type grpc,
  type LogLine,
  serviceClient,
  startRosController,
  unaryCall,
} from "../../../operators/device/controllers/index.ts";
import { parseRosConfig } from "../../../operators/device/controllers/ros/config.ts";
import { silentLogger } from "../../../operators/lib/logger.ts";
import { onProcesses, waitFor } from "../../helpers/wait-for.ts";
import { pidsMarked, zombieChildren } from "../processes.ts";
import { type RobotScripts, robotScripts } from "../robot-scripts.ts";

interface RosStatus {
  flavor: string;
  process: string;
  health: string;
  message: string;
  processes: {
    name: string;
    state: string;
    pid: number;
    restarts: number;
    lastExit: string;
    restartAt: string;
  }[];
}

interface Robot {
  scripts: RobotScripts;
  client: grpc.Client;
  call: (method: string) => Promise<RosStatus>;
  capability: () => CapabilityFile;
}

async function rosController(
  t: Test,
  yaml: (s: RobotScripts) => string,
  flavor?: "ros1" | "ros2",
): Promise<Robot> {
  const scripts = robotScripts(t, "ros");
  const file = path.join(scripts.dir, "robot.yaml");
  writeFileSync(file, yaml(scripts));
  const config = parseRosConfig(new ConfigSource(file, readFileSync(file, "utf8")), flavor);
  const controller = await startRosController({
    config,
    socket: path.join(scripts.dir, "ros.sock"),
    capabilityDir: path.join(scripts.dir, "capabilities"),
    logger: silentLogger,
  });
  const client = serviceClient("ros", controller.socket);
  t.teardown(async () => {
    client.close();
    await controller.close();
  });
  const name = config.flavor === "ros1" ? "ros-controller" : "ros2-controller";
  return {
    scripts,
    client,
    call: (method) => unaryCall<object, RosStatus>(client, method, {}),
    capability: () =>
      JSON.parse(
        readFileSync(path.join(scripts.dir, "capabilities", `${name}.json`), "utf8"),
      ) as CapabilityFile,
  };
}

const ros1 = (s: RobotScripts, extra = "") => `
flavor: ros1
core: { command: [${s.roscore}] }
launch: { command: [${s.roslaunch}] }
env: { NEEDS_MASTER: "1", ROBOT_NAME: arm-1 }
ready: { command: [${s.ready}], intervalSeconds: 0.1 }
restart: { startSeconds: 0.3, stopTimeoutSeconds: 0.5, backoffInitialSeconds: 0.1 }
${extra}`;

/** Reads the Logs stream until `until` says it has enough, then cancels it. */
function readLogs(
  client: grpc.Client,
  request: object,
  until: (lines: LogLine[]) => boolean,
): Promise<LogLine[]> {
  const call = (
    client as unknown as { Logs: (r: object) => NodeJS.ReadableStream & { cancel(): void } }
  ).Logs(request);
  const lines: LogLine[] = [];
  return new Promise((resolve, reject) => {
    call.on("data", (line: LogLine) => {
      lines.push(line);
      if (until(lines)) call.cancel();
    });
    call.on("end", () => resolve(lines));
    call.on("error", (error: Error & { code?: number }) =>
      error.code === 1 ? resolve(lines) : reject(error),
    );
  });
}

t.test(
  "ROS 1: roscore starts, then roslaunch; READY once the readiness check passes; stop leaves nothing",
  async (t) => {
    const robot = await rosController(t, (s) => ros1(s));
    t.match(await robot.call("Status"), { flavor: "ros1", process: "STOPPED", health: "STOPPED" });
    t.match(robot.capability(), { name: "ros-controller", process: "STOPPED", health: "STOPPED" });

    const started = await robot.call("Start");
    t.equal(started.process, "STARTING");
    t.same(
      started.processes.map((p) => [p.name, p.state]),
      [
        ["roscore", "STARTING"],
        ["roslaunch", "STOPPED"],
      ],
      "roslaunch waits for roscore",
    );
    const ready = await waitFor(
      "READY",
      async () => {
        const s = await robot.call("Status");
        return s.health === "READY" && s;
      },
      onProcesses,
    );
    t.equal(ready.process, "RUNNING");
    t.equal(ready.message, "2 nodes", "the readiness check's last line");
    t.ok(ready.processes.every((p) => p.pid > 0 && p.state === "RUNNING"));
    await waitFor("the capability file says READY", () => robot.capability().health === "READY", onProcesses);
    t.match(robot.capability(), { process: "RUNNING", health: "READY", message: "2 nodes" });

    const tail = await readLogs(robot.client, { tail: 1000 }, () => false);
    const first = (p: string) => tail.find((l) => l.process === p)!;
    t.equal(first("roscore").text, "started roscore");
    t.equal(
      first("roslaunch").text,
      "launching with ROBOT_NAME=arm-1",
      "the configured environment reaches the launch",
    );
    t.ok(first("roscore").seq < first("roslaunch").seq, "roscore spoke first");

    const stopped = await robot.call("Stop");
    t.match(stopped, { process: "STOPPED", health: "STOPPED" });
    t.same(
      await pidsMarked(robot.scripts.dir),
      [],
      "roscore, roslaunch and the nodes that ignore SIGTERM are gone",
    );
    t.same(zombieChildren(), [], "no zombie");
    await waitFor(
      "the capability file says STOPPED",
      () => robot.capability().process === "STOPPED",
      onProcesses,
    );
  },
);

t.test("a launch that keeps failing is BACKOFF (DEGRADED), then FAILED; restart starts afresh", async (t) => {
  const robot = await rosController(
    t,
    (s) => `
launch: { command: [${s.crash}] }
restart: { startSeconds: 0.2, backoffInitialSeconds: 0.05, backoffMaxSeconds: 0.2, maxRetries: 3 }
`,
    "ros2",
  );
  await robot.call("Start");
  const backoff = await waitFor(
    "BACKOFF",
    async () => {
      const s = await robot.call("Status");
      return s.process === "BACKOFF" && s;
    },
    onProcesses,
  );
  t.equal(backoff.health, "DEGRADED");
  t.match(backoff.message, /^launch ended \(exit code 2\); restarting at \d{4}-/);
  const failed = await waitFor(
    "FAILED",
    async () => {
      const s = await robot.call("Status");
      return s.process === "FAILED" && s;
    },
    onProcesses,
  );
  t.match(failed, { health: "DEGRADED", message: "launch gave up restarting (exit code 2)" });
  t.equal(failed.processes[0]?.restarts, 3);
  await waitFor(
    "the capability file says FAILED",
    () => robot.capability().process === "FAILED",
    onProcesses,
  );
  t.equal(robot.capability().name, "ros2-controller");
  const logs = await readLogs(robot.client, { tail: 10 }, () => false);
  t.same(
    logs.map((l) => `${l.process}/${l.stream}: ${l.text}`),
    Array(4).fill("launch/stderr: launch failed"),
  );

  const restarted = await robot.call("Restart");
  t.not(restarted.process, "FAILED", "Restart clears the failure count");
  await robot.call("Stop");
});

t.test("a readiness check that fails after success makes a running robot DEGRADED", async (t) => {
  const robot = await rosController(t, (s) => ros1(s));
  await robot.call("Start");
  await waitFor("READY", async () => (await robot.call("Status")).health === "READY", onProcesses);
  rmSync(robot.scripts.nodesFile);
  const degraded = await waitFor(
    "DEGRADED",
    async () => {
      const s = await robot.call("Status");
      return s.health === "DEGRADED" && s;
    },
    onProcesses,
  );
  t.equal(degraded.process, "RUNNING", "the processes still run");
  t.match(degraded.message, /readiness check failed \(exit code 1\)/);
  writeFileSync(robot.scripts.nodesFile, "");
  await waitFor("READY again", async () => (await robot.call("Status")).health === "READY", onProcesses);
  await robot.call("Stop");
});

t.test("logs --follow sends the tail, then new lines as they come, until the client cancels", async (t) => {
  const robot = await rosController(t, (s) => ros1(s));
  await robot.call("Start");
  await waitFor(
    "ticks",
    async () => (await readLogs(robot.client, { tail: 5 }, () => false)).some((l) => l.text === "tick 3"),
    onProcesses,
  );
  const followed = await readLogs(robot.client, { tail: 2, follow: true }, (lines) => lines.length >= 8);
  t.equal(followed.length, 8);
  const seqs = followed.map((l) => l.seq);
  t.same(
    seqs,
    [...seqs].sort((a, b) => a - b),
    "in order",
  );
  t.same(
    seqs.slice(1).map((s, i) => s - (seqs[i] as number)),
    Array(7).fill(1),
    "no line skipped",
  );
  const ticks = followed.filter((l) => l.text.startsWith("tick")).map((l) => Number(l.text.slice(5)));
  t.ok(ticks.length >= 6, "new ticks arrived after the tail");
  await robot.call("Stop");
});

t.test("ROS 2 runs one launch process and refuses a core", async (t) => {
  const robot = await rosController(
    t,
    (s) => `launch: { command: [${s.roslaunch}] }\nrestart: { startSeconds: 0.2, stopTimeoutSeconds: 0.5 }\n`,
    "ros2",
  );
  await robot.call("Start");
  const running = await waitFor(
    "RUNNING",
    async () => {
      const s = await robot.call("Status");
      return s.process === "RUNNING" && s;
    },
    onProcesses,
  );
  t.same(
    running.processes.map((p) => p.name),
    ["launch"],
  );
  t.equal(running.health, "READY", "without a readiness check, RUNNING is READY");
  await robot.call("Stop");
  t.same(await pidsMarked(robot.scripts.dir), []);

  t.throws(
    () =>
      parseRosConfig(
        new ConfigSource("robot.yaml", "core: { command: [roscore] }\nlaunch: { command: [x] }\n"),
        "ros2",
      ),
    {
      message: "robot.yaml:1: core: ROS 2 has no master: remove core",
    },
  );
  t.throws(
    () => parseRosConfig(new ConfigSource("robot.yaml", "flavor: ros2\nlaunch: { command: [x] }\n"), "ros1"),
    {
      message: "robot.yaml:1: flavor: is ros2 but --flavor is ros1",
    },
  );
  t.throws(() => parseRosConfig(new ConfigSource("robot.yaml", "launch:\n  command: roslaunch x y\n")), {
    message: "robot.yaml:2: launch.command: must be a non-empty list of strings (argv; no shell)",
  });
  t.throws(() => parseRosConfig(new ConfigSource("robot.yaml", "env: {}\n")), {
    message: "robot.yaml:1: launch.command: is required",
  });
});
