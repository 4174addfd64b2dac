// The camera controller end to end: real ffmpeg reading a test pattern, a file and a UDP stream
// that a second ffmpeg sends, snapshots checked as JPEGs by ffprobe, the transcoded stream read
// back by a third ffmpeg, restarts when ffmpeg dies, and nothing left after stop.
import { execFile, spawn } from "node:child_process";
import { createSocket } from "node:dgram";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import t, { type Test } from "tap";
import type { CapabilityFile } from "../../../operators/device/capability-file.ts";
import { parseCameraConfig } from "../../../operators/device/controllers/camera/config.ts";
import { ConfigSource } from "../../../operators/device/controllers/config-file.ts";
import {
  type grpc,
  type RunningController,
  serviceClient,
  startCameraController,
  unaryCall,
} from "../../../operators/device/controllers/index.ts";
import { silentLogger } from "../../../operators/lib/logger.ts";
import { onProcesses, waitFor } from "../../helpers/wait-for.ts";
import { pidsMarked, zombieChildren } from "../processes.ts";

const run = promisify(execFile);

interface CameraStatus {
  name: string;
  process: string;
  health: string;
  message: string;
  pid: number;
  restarts: number;
  frames: number;
  stderrTail: string[];
}

interface Snapshot {
  jpeg: Buffer;
  width: number;
  height: number;
  capturedAt: string;
}

interface Running {
  dir: string;
  controller: RunningController;
  client: grpc.Client;
  capability: (camera: string) => CapabilityFile;
  status: (camera: string) => Promise<CameraStatus>;
}

async function freeUdpPort(): Promise<number> {
  const socket = createSocket("udp4");
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  const { port } = socket.address();
  await new Promise<void>((resolve) => socket.close(() => resolve()));
  return port;
}

/** A camera controller on a socket in a fresh directory, configured by `yaml`. */
async function cameraController(t: Test, yaml: (dir: string) => string): Promise<Running> {
  const dir = mkdtempSync(path.join(tmpdir(), "rlark-devctl-cam-"));
  const file = path.join(dir, "cameras.yaml");
  writeFileSync(file, yaml(dir));
  const config = parseCameraConfig(new ConfigSource(file, readFileSync(file, "utf8")), {
    stateDir: path.join(dir, "state"),
  });
  const controller = await startCameraController({
    config,
    socket: path.join(dir, "camera.sock"),
    capabilityDir: path.join(dir, "capabilities"),
    logger: silentLogger,
  });
  const client = serviceClient("camera", controller.socket);
  t.teardown(async () => {
    client.close();
    await controller.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    dir,
    controller,
    client,
    capability: (camera) =>
      JSON.parse(
        readFileSync(path.join(dir, "capabilities", `camera-${camera}.json`), "utf8"),
      ) as CapabilityFile,
    status: async (camera) =>
      (await unaryCall<object, { cameras: CameraStatus[] }>(client, "Status", { name: camera })).cameras[0]!,
  };
}

/** What ffprobe says the JPEG is: codec and dimensions, from a real decoder. */
async function probeJpeg(t: Test, jpeg: Buffer): Promise<{ codec: string; width: number; height: number }> {
  const file = path.join(mkdtempSync(path.join(tmpdir(), "rlark-devctl-jpeg-")), "frame.jpg");
  t.teardown(() => rmSync(path.dirname(file), { recursive: true, force: true }));
  writeFileSync(file, jpeg);
  const { stdout } = await run("ffprobe", [
    "-v",
    "error",
    "-show_entries",
    "stream=codec_name,width,height",
    "-of",
    "json",
    file,
  ]);
  const stream = (JSON.parse(stdout) as { streams: { codec_name: string; width: number; height: number }[] })
    .streams[0]!;
  return { codec: stream.codec_name, width: stream.width, height: stream.height };
}

function isCompleteJpeg(jpeg: Buffer): boolean {
  return jpeg[0] === 0xff && jpeg[1] === 0xd8 && jpeg.at(-2) === 0xff && jpeg.at(-1) === 0xd9;
}

t.test(
  "a test-pattern camera streams over UDP, snapshots as a JPEG, and stops with its ffmpeg",
  async (t) => {
    const port = await freeUdpPort();
    const cam = await cameraController(
      t,
      () => `
cameras:
  - name: pattern
    source: { type: testsrc, width: 320, height: 240, fps: 10 }
    output: { type: udp, url: "udp://127.0.0.1:${port}?pkt_size=1316" }
restart: { startSeconds: 0.2, backoffInitialSeconds: 0.1 }
`,
    );
    t.equal(
      (await cam.status("pattern")).process,
      "STOPPED",
      "nothing starts unless asked (autostart is off)",
    );
    t.equal(cam.capability("pattern").health, "STOPPED", "the capability file exists from the start");

    // A receiver first, so it sees the stream from its first packets.
    const received = path.join(cam.dir, "received.jpg");
    const receiver = run("ffmpeg", [
      "-v",
      "error",
      "-y",
      "-timeout",
      "20000000",
      "-i",
      `udp://127.0.0.1:${port}`,
      "-frames:v",
      "1",
      received,
    ]);
    const started = await unaryCall<object, CameraStatus>(cam.client, "Start", { name: "pattern" });
    t.ok(
      ["STARTING", "RUNNING"].includes(started.process),
      `Start answers with the state (${started.process})`,
    );
    await waitFor("READY", async () => (await cam.status("pattern")).health === "READY", onProcesses);
    await waitFor(
      "the capability file says READY",
      () => cam.capability("pattern").health === "READY",
      onProcesses,
    );

    const shot = await waitFor(
      "a snapshot",
      () => unaryCall<object, Snapshot>(cam.client, "Snapshot", { name: "pattern" }),
      onProcesses,
    );
    t.ok(isCompleteJpeg(shot.jpeg), "starts with SOI and ends with EOI");
    t.same([shot.width, shot.height], [320, 240], "the controller reports the dimensions");
    t.same(await probeJpeg(t, shot.jpeg), { codec: "mjpeg", width: 320, height: 240 }, "ffprobe agrees");

    await receiver;
    t.same(
      await probeJpeg(t, readFileSync(received)),
      { codec: "mjpeg", width: 320, height: 240 },
      "a UDP receiver decodes the stream",
    );

    const stopped = await unaryCall<object, CameraStatus>(cam.client, "Stop", { name: "pattern" });
    t.equal(stopped.process, "STOPPED");
    t.equal(stopped.pid, 0);
    t.same(await pidsMarked(cam.dir), [], "no ffmpeg is left");
    t.same(zombieChildren(), [], "no zombie");
    await waitFor(
      "the capability file says STOPPED",
      () => cam.capability("pattern").process === "STOPPED",
      onProcesses,
    );
    await t.rejects(unaryCall(cam.client, "Snapshot", { name: "pattern" }), { message: /not running/ });
  },
);

t.test("when ffmpeg dies it is restarted with backoff and the camera is READY again", async (t) => {
  const cam = await cameraController(
    t,
    () => `
cameras:
  - name: pattern
    source: { type: testsrc, width: 160, height: 120, fps: 10 }
    autostart: true
restart: { startSeconds: 0.2, backoffInitialSeconds: 0.5 }
`,
  );
  const first = await waitFor(
    "RUNNING",
    async () => {
      const s = await cam.status("pattern");
      return s.process === "RUNNING" && s.pid > 0 && s;
    },
    onProcesses,
  );
  process.kill(first.pid, "SIGKILL");
  await waitFor("BACKOFF", async () => (await cam.status("pattern")).process === "BACKOFF", onProcesses);
  t.match(cam.capability("pattern"), { process: "BACKOFF", health: "DEGRADED", message: /signal SIGKILL/ });
  const again = await waitFor(
    "READY again",
    async () => {
      const s = await cam.status("pattern");
      return s.health === "READY" && s;
    },
    onProcesses,
  );
  t.equal(again.restarts, 1);
  t.not(again.pid, first.pid, "a new ffmpeg");
});

t.test("a file and a UDP stream sent by another ffmpeg are sources too", async (t) => {
  const port = await freeUdpPort();
  const cam = await cameraController(
    t,
    (dir) => `
cameras:
  - name: recorded
    source: { type: file, path: ${dir}/clip.mp4 }
  - name: network
    source: { type: udp, url: "udp://127.0.0.1:${port}" }
restart: { startSeconds: 0.2, backoffInitialSeconds: 0.2 }
`,
  );
  await run("ffmpeg", [
    "-v",
    "error",
    "-f",
    "lavfi",
    "-i",
    "testsrc=size=200x100:rate=10",
    "-t",
    "2",
    "-pix_fmt",
    "yuv420p",
    path.join(cam.dir, "clip.mp4"),
  ]);
  // The sender is marked by its own output URL; it runs until the test ends.
  const sender = spawn(
    "ffmpeg",
    [
      "-v",
      "error",
      "-re",
      "-f",
      "lavfi",
      "-i",
      "testsrc=size=352x288:rate=10",
      "-c:v",
      "mpeg2video",
      "-f",
      "mpegts",
      `udp://127.0.0.1:${port}?pkt_size=1316`,
    ],
    { stdio: "ignore" },
  );
  t.teardown(() => sender.kill("SIGKILL"));

  for (const [name, size] of [
    ["recorded", [200, 100]],
    ["network", [352, 288]],
  ] as const) {
    await unaryCall(cam.client, "Start", { name });
    const shot = await waitFor(
      `a snapshot of ${name}`,
      () => unaryCall<object, Snapshot>(cam.client, "Snapshot", { name }),
      onProcesses,
    );
    t.ok(isCompleteJpeg(shot.jpeg), `${name}: a complete JPEG`);
    t.same([shot.width, shot.height], size, `${name}: the source's dimensions`);
    t.equal((await cam.status(name)).health, "READY");
  }
  await unaryCall(cam.client, "Stop", { name: "network" });
  await unaryCall(cam.client, "Stop", { name: "recorded" });
  t.same(await pidsMarked(cam.dir), [], "no ffmpeg of the controller is left");
});

t.test("an HLS output keeps a bounded window of segments", async (t) => {
  const cam = await cameraController(
    t,
    (dir) => `
cameras:
  - name: web
    source: { type: testsrc, width: 160, height: 120, fps: 25 }
    output: { type: hls, dir: ${dir}/hls, segmentSeconds: 1, segments: 2 }
    fps: 25
    autostart: true
`,
  );
  const hls = path.join(cam.dir, "hls");
  await waitFor("four segments written", () => existsSync(path.join(hls, "index3.ts")), onProcesses);
  const segments = readdirSync(hls).filter((f) => f.endsWith(".ts"));
  t.ok(segments.length <= 4, `old segments are deleted (${segments.join(", ")})`);
  t.notOk(existsSync(path.join(hls, "index0.ts")), "the first segment is gone");
  t.match(readFileSync(path.join(hls, "index.m3u8"), "utf8"), /#EXTM3U/);
});

t.test("a RealSense camera is accepted and reports FAILED without librealsense", async (t) => {
  t.notOk(existsSync("/usr/lib/x86_64-linux-gnu/librealsense2.so"), "this machine has no librealsense");
  const cam = await cameraController(
    t,
    () => "cameras:\n  - name: depth\n    source: { type: realsense, serial: '012345' }\n",
  );
  const started = await unaryCall<object, CameraStatus>(cam.client, "Start", { name: "depth" });
  t.match(started, { process: "FAILED", health: "DEGRADED", message: "librealsense not available" });
  t.match(cam.capability("depth"), { process: "FAILED", message: "librealsense not available" });
  await t.rejects(unaryCall(cam.client, "Snapshot", { name: "depth" }), { message: /not running/ });
});

t.test("unknown cameras are NOT_FOUND and name the configured ones", async (t) => {
  const cam = await cameraController(t, () => "cameras:\n  - name: front\n    source: { type: testsrc }\n");
  await t.rejects(unaryCall(cam.client, "Start", { name: "back" }), {
    code: 5,
    details: /no camera "back".*configured: front/,
  });
  const all = await unaryCall<object, { cameras: CameraStatus[] }>(cam.client, "Status", { name: "" });
  t.same(
    all.cameras.map((c) => c.name),
    ["front"],
    "an empty name lists every camera",
  );
});

t.test("configuration errors name the file, the line and the field", async (t) => {
  const parse = (text: string) => () =>
    parseCameraConfig(new ConfigSource("cameras.yaml", text), { stateDir: "/tmp/x" });
  t.throws(parse("cameras:\n  - name: a\n    source:\n      type: webcam\n"), {
    message:
      "cameras.yaml:4: cameras[0].source.type: must be one of v4l2, rtsp, udp, file, testsrc, realsense",
  });
  t.throws(parse("cameras:\n  - name: a\n    source: { type: v4l2, device: /etc/passwd }\n"), {
    message: /^cameras.yaml:3: cameras\[0\]\.source\.device: must be a \/dev\/videoN device/,
  });
  t.throws(
    parse(
      "cameras:\n  - name: a\n    source: { type: testsrc }\n    output: { type: udp, url: 'http://x' }\n",
    ),
    {
      message: /^cameras.yaml:4: cameras\[0\]\.output\.url: must be a udp URL/,
    },
  );
  t.throws(
    parse(
      "cameras:\n  - name: a\n    source: { type: testsrc }\n  - name: a\n    source: { type: testsrc }\n",
    ),
    {
      message: /^cameras.yaml:4: cameras\[1\]\.name: camera "a" is configured twice/,
    },
  );
  t.throws(parse("cameras:\n  - name: a\n    sorce: { type: testsrc }\n"), {
    message: /^cameras.yaml:3: cameras\[0\]\.sorce: unknown field/,
  });
  t.throws(parse("cameras:\n  - name: a\n    source: { type: rtsp, url: 'rtsp://cam/x', path: /x }\n"), {
    message: /^cameras.yaml:3: cameras\[0\]\.source\.path: unknown field/,
  });
});
