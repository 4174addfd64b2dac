// rosctr and camctr as users run them: the real bin/ launchers as processes, against controllers
// started as `rlark ros-controller` and `rlark camera-controller` processes, the socket named by
// the environment as the device plugin sets it in a pod.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import t, { type Test } from "tap";
import { repoRoot } from "../helpers/rlark-cli.ts";
import { onProcesses, waitFor } from "../helpers/wait-for.ts";
import { pidsMarked } from "./processes.ts";
import { robotScripts } from "./robot-scripts.ts";

type Run = { code: number | null; stdout: Buffer; stderr: string };

/** Runs `bin/<name>.js args…` to its end. */
function runBin(name: string, args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(repoRoot, "bin", `${name}.js`), ...args], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const stdout: Buffer[] = [];
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => stdout.push(c));
    child.stderr.on("data", (c: Buffer) => {
      stderr += c;
    });
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout: Buffer.concat(stdout), stderr }));
  });
}

/** `rlark <command> --config <file> --socket <dir>/<sock>…` as a process, stopped by SIGTERM at teardown. */
async function controllerProcess(
  t: Test,
  dir: string,
  args: string[],
  socket: string,
): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [
      path.join(repoRoot, "bin", "rlark.js"),
      ...args,
      "--socket",
      socket,
      "--capability-dir",
      path.join(dir, "caps"),
    ],
    {
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  let stderr = "";
  child.stderr?.on("data", (c: Buffer) => {
    stderr += c;
  });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  t.teardown(async () => {
    child.kill("SIGTERM");
    await exited;
    // Its last capability write may come after an earlier teardown removed the directory.
    rmSync(dir, { recursive: true, force: true });
  });
  await waitFor(
    `${args[0]} serves ${socket} (${stderr})`,
    () => existsSync(socket) || child.exitCode !== null,
    onProcesses,
  );
  if (child.exitCode !== null) throw new Error(`${args[0]} exited: ${stderr}`);
  return child;
}

t.test(
  "rosctr starts, reports, shows logs of and stops the robot software of a real ros-controller",
  async (t) => {
    const s = robotScripts(t, "rosctr");
    const config = path.join(s.dir, "robot.yaml");
    writeFileSync(
      config,
      `core: { command: [${s.roscore}] }\nlaunch: { command: [${s.roslaunch}] }\nrestart: { startSeconds: 0.2, stopTimeoutSeconds: 0.5 }\n`,
    );
    const socket = path.join(s.dir, "ros.sock");
    const controller = await controllerProcess(
      t,
      s.dir,
      ["ros-controller", "--flavor", "ros1", "--config", config],
      socket,
    );
    const env = { RLARK_ROS_SOCKET: socket };

    const start = await runBin("rosctr", ["start"], env);
    t.equal(start.code, 0, start.stderr);
    t.match(start.stdout.toString(), /^ros1: STARTING, health STARTING/);
    await waitFor(
      "RUNNING",
      async () =>
        (await runBin("rosctr", ["status", "--json"], env)).stdout
          .toString()
          .includes('"process": "RUNNING"'),
      onProcesses,
    );
    const status = await runBin("rosctr", ["status"], env);
    t.match(
      status.stdout.toString(),
      /^ros1: RUNNING, health READY\nPROCESS +STATE +PID +RESTARTS +LAST EXIT\nroscore +RUNNING +\d+ +0 +-\nroslaunch +RUNNING/,
    );
    await waitFor(
      "ticks",
      async () =>
        (await runBin("rosctr", ["logs", "-n", "3"], env)).stdout.toString().includes("[roslaunch] tick"),
      onProcesses,
    );
    const logs = await runBin("rosctr", ["logs", "--tail", "2"], env);
    t.equal(logs.stdout.toString().trim().split("\n").length, 2, "--tail bounds the lines");

    // logs -f runs until interrupted: SIGINT ends it cleanly.
    const follow = spawn(
      process.execPath,
      [path.join(repoRoot, "bin", "rosctr.js"), "logs", "-f", "-n", "1"],
      { env: { ...process.env, ...env } },
    );
    let followed = "";
    follow.stdout.on("data", (c: Buffer) => {
      followed += c;
    });
    await waitFor("followed lines", () => followed.split("\n").length > 4, onProcesses);
    const exit = new Promise<number | null>((resolve) => follow.once("exit", resolve));
    follow.kill("SIGINT");
    t.equal(await exit, 0, "logs -f exits 0 on ^C");

    const stop = await runBin("rosctr", ["stop"], env);
    t.match(stop.stdout.toString(), /^ros1: STOPPED, health STOPPED/);
    t.same(await pidsMarked(s.dir), [], "nothing of the robot software is left");
    t.match(JSON.parse(readFileSync(path.join(s.dir, "caps", "ros-controller.json"), "utf8")), {
      process: "STOPPED",
    });

    controller.kill("SIGTERM");
    await waitFor("the controller exits", () => controller.exitCode !== null, onProcesses);
    t.notOk(existsSync(socket), "the controller removes its socket on SIGTERM");
  },
);

t.test("camctr starts a camera of a real camera-controller, saves a snapshot, and stops it", async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), "rlark-devctl-camctr-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const config = path.join(dir, "cameras.yaml");
  writeFileSync(
    config,
    "cameras:\n  - name: front\n    source: { type: testsrc, width: 64, height: 48, fps: 10 }\n",
  );
  const socket = path.join(dir, "camera.sock");
  await controllerProcess(
    t,
    dir,
    ["camera-controller", "--config", config, "--state-dir", path.join(dir, "state")],
    socket,
  );
  const env = { RLARK_CAMERA_SOCKET: socket };

  const start = await runBin("camctr", ["start", "front"], env);
  t.equal(start.code, 0, start.stderr);
  t.match(start.stdout.toString(), /^NAME +PROCESS +HEALTH +SOURCE.*\nfront +(STARTING|RUNNING) /);
  const jpeg = path.join(dir, "front.jpg");
  await waitFor(
    "a snapshot",
    async () => (await runBin("camctr", ["snapshot", "front", "-o", jpeg], env)).code === 0,
    onProcesses,
  );
  const frame = readFileSync(jpeg);
  t.same([frame[0], frame[1], frame.at(-2), frame.at(-1)], [0xff, 0xd8, 0xff, 0xd9], "a complete JPEG");
  const toStdout = await runBin("camctr", ["snapshot", "front", "-o", "-"], env);
  t.same([...toStdout.stdout.subarray(0, 2)], [0xff, 0xd8], "-o - writes the JPEG to standard output");

  const unknown = await runBin("camctr", ["start", "back"], env);
  t.equal(unknown.code, 1);
  t.match(unknown.stderr, /^camctr: no camera "back" is configured \(configured: front\)\n$/);

  const stop = await runBin("camctr", ["stop", "front", "--json"], env);
  t.match(JSON.parse(stop.stdout.toString()), { cameras: [{ name: "front", process: "STOPPED" }] });
  t.same(await pidsMarked(dir), [], "no ffmpeg is left");
});

t.test("without a controller the CLIs name the socket and the variable", async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), "rlark-devctl-nosock-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const absent = path.join(dir, "absent.sock");
  const missing = await runBin("rosctr", ["status"], { RLARK_ROS_SOCKET: absent });
  t.equal(missing.code, 1);
  t.match(
    missing.stderr,
    `rosctr: no ROS controller socket at ${absent} (the socket comes from --socket or $RLARK_ROS_SOCKET;`,
  );

  const ros2 = await runBin("rosctr", ["status"], { RLARK_ROS_SOCKET: "", RLARK_ROS2_SOCKET: absent });
  t.match(
    ros2.stderr,
    `no ROS controller socket at ${absent} (the socket comes from --socket or $RLARK_ROS2_SOCKET;`,
    "a pod given a ROS 2 robot has only RLARK_ROS2_SOCKET",
  );
  const neither = await runBin("rosctr", ["status"], { RLARK_ROS_SOCKET: "", RLARK_ROS2_SOCKET: "" });
  t.match(
    neither.stderr,
    "no ROS controller socket at /var/run/rlark/devices/ros-controller.sock",
    "the default path",
  );

  // A socket file nobody listens on any more: a controller killed without cleaning up.
  const stale = path.join(dir, "stale.sock");
  const holder = spawn(process.execPath, [
    "-e",
    `require("node:net").createServer().listen(${JSON.stringify(stale)}, () => process.kill(process.pid, "SIGKILL"))`,
  ]);
  await new Promise((resolve) => holder.once("exit", resolve));
  t.ok(existsSync(stale), "the stale socket file is there");
  const refused = await runBin("camctr", ["status"], { RLARK_CAMERA_SOCKET: stale });
  t.equal(refused.code, 1);
  t.match(refused.stderr, `camctr: the camera controller at ${stale} does not answer:`);
  t.match(refused.stderr, "$RLARK_CAMERA_SOCKET");

  const flag = await runBin("camctr", ["--socket", absent, "status"], { RLARK_CAMERA_SOCKET: stale });
  t.match(flag.stderr, `no camera controller socket at ${absent}`, "--socket wins over the variable");
});

t.test("--help, usage errors, and the rlark aliases", async (t) => {
  for (const name of ["rosctr", "camctr"]) {
    const help = await runBin(name, ["--help"], {});
    t.equal(help.code, 0);
    t.match(help.stdout.toString(), new RegExp(`^Usage: ${name} `));
    t.match(help.stdout.toString(), name === "rosctr" ? "$RLARK_ROS_SOCKET" : "$RLARK_CAMERA_SOCKET");
    const bad = await runBin(name, ["frobnicate"], {});
    t.equal(bad.code, 2, `${name}: an unknown command is a usage error`);
  }
  const alias = await runBin("rlark", ["rosctr", "logs", "--help"], {});
  t.equal(alias.code, 0);
  t.match(alias.stdout.toString(), /^Usage: rlark rosctr logs \[options\]/);
  const controllerHelp = await runBin("rlark", ["camera-controller", "--help"], {});
  t.match(controllerHelp.stdout.toString(), /librealsense not available/);
});

t.test(
  "a controller refuses a socket another controller serves, and a path that is not a socket",
  async (t) => {
    const s = robotScripts(t, "rosbusy");
    const config = path.join(s.dir, "robot.yaml");
    writeFileSync(config, `launch: { command: [${s.roslaunch}] }\n`);
    const socket = path.join(s.dir, "ros.sock");
    await controllerProcess(t, s.dir, ["ros-controller", "--config", config], socket);
    const second = await runBin(
      "rlark",
      ["ros-controller", "--config", config, "--socket", socket, "--capability-dir", s.dir],
      {},
    );
    t.equal(second.code, 2);
    t.match(second.stderr, `rlark ros-controller: another controller already serves ${socket}`);
    const notSocket = await runBin("rlark", ["ros-controller", "--config", config, "--socket", config], {});
    t.match(notSocket.stderr, `${config} exists and is not a socket; refusing to replace it`);
    t.ok(readFileSync(config, "utf8").includes("launch"), "the file is untouched");
    const badConfig = await runBin(
      "rlark",
      ["ros-controller", "--config", path.join(s.dir, "nope.yaml")],
      {},
    );
    t.equal(badConfig.code, 2);
    t.match(badConfig.stderr, /nope\.yaml: cannot read the configuration/);
  },
);
