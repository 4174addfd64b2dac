// camctr: the camera controller's command line, mounted into pods that were allocated a camera.
import { writeFileSync } from "node:fs";
import { Command } from "commander";
import { SOCKETS } from "../socket-env.ts";

const { env: CAMERA_SOCKET_ENV, path: DEFAULT_CAMERA_SOCKET } = SOCKETS.camera;

import { callController, targetOf } from "./controller-client.ts";
import { table } from "./format.ts";

interface CameraStatus {
  name: string;
  sourceType: string;
  source: string;
  output: string;
  process: string;
  health: string;
  message: string;
  pid: number;
  restarts: number;
  frames: number;
  fps: number;
  stderrTail: string[];
}

interface Snapshot {
  jpeg: Buffer;
  width: number;
  height: number;
  capturedAt: string;
}

const HELP = `
Talks to the node's camera controller over its unix socket: $${CAMERA_SOCKET_ENV}
(default ${DEFAULT_CAMERA_SOCKET}), which the device plugin mounts into pods that request
rlinf.io/device. Cameras are configured on the node; camctr names them.

Examples:
  camctr status
  camctr start front
  camctr snapshot front -o front.jpg
  camctr stop front
`;

function printStatus(cameras: CameraStatus[], json: boolean): void {
  if (json) {
    process.stdout.write(`${JSON.stringify({ cameras }, null, 2)}\n`);
    return;
  }
  const rows = cameras.map((c) => [
    c.name,
    c.process,
    c.health,
    `${c.sourceType}:${c.source}`,
    c.output,
    String(c.frames),
    String(c.restarts),
    c.message,
  ]);
  process.stdout.write(
    `${table(["NAME", "PROCESS", "HEALTH", "SOURCE", "OUTPUT", "FRAMES", "RESTARTS", "MESSAGE"], rows)}\n`,
  );
}

/** The camctr command tree; `name` is how it was invoked (camctr, or rlark camctr). */
export function buildCamctr(name = "camctr"): Command {
  const program = new Command(name)
    .description("start, stop, inspect and take snapshots from the node's cameras")
    .option(
      "--socket <path>",
      `the controller's socket (default: $${CAMERA_SOCKET_ENV} or ${DEFAULT_CAMERA_SOCKET})`,
    )
    .addHelpText("after", HELP)
    .showHelpAfterError()
    // As rlark: 2 for usage errors (commander has printed them), 0 after --help.
    .exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : 2));
  const target = () => targetOf("camera", program.opts<{ socket?: string }>().socket);

  program
    .command("status [camera]")
    .description("the state and health of one camera, or of all")
    .option("--json", "print JSON")
    .action(async (camera: string | undefined, opts: { json?: boolean }) => {
      const { cameras } = await callController<{ cameras: CameraStatus[] }>(target(), "Status", {
        name: camera ?? "",
      });
      printStatus(cameras, Boolean(opts.json));
    });
  for (const [verb, method, what] of [
    ["start", "Start", "start a camera's capture and transcoding"],
    ["stop", "Stop", "stop a camera (its ffmpeg and everything it started)"],
  ] as const) {
    program
      .command(`${verb} <camera>`)
      .description(what)
      .option("--json", "print JSON")
      .action(async (camera: string, opts: { json?: boolean }) => {
        printStatus(
          [await callController<CameraStatus>(target(), method, { name: camera })],
          Boolean(opts.json),
        );
      });
  }
  program
    .command("snapshot <camera>")
    .description("write the camera's latest frame as a JPEG")
    .requiredOption("-o, --output <file>", "where to write the JPEG ('-' for standard output)")
    .action(async (camera: string, opts: { output: string }) => {
      const shot = await callController<Snapshot>(target(), "Snapshot", { name: camera });
      if (opts.output === "-") process.stdout.write(shot.jpeg);
      else {
        writeFileSync(opts.output, shot.jpeg);
        process.stderr.write(
          `${opts.output}: ${shot.width}x${shot.height} JPEG, ${shot.jpeg.length} bytes, captured ${shot.capturedAt}\n`,
        );
      }
    });
  return program;
}
