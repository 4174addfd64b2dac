// `rlark camera-controller`, `rlark ros-controller` (and `ros2-controller`): the node's device
// controllers, run by the embodied-runtime DaemonSet; `rlark camctr` and `rlark rosctr`, their CLIs.
import path from "node:path";
import { type Command, Option } from "commander";
import { capabilityDir } from "../device/capability-file.ts";
import { buildCamctr, buildRosctr, installClis } from "../device/cli/index.ts";
import {
  type Flavor,
  type RunningController,
  readCameraConfig,
  readRosConfig,
  startCameraController,
  startRosController,
} from "../device/controllers/index.ts";
import { type ControllerKind, controllerSocket } from "../device/socket-env.ts";
import { jsonLogger } from "../lib/logger.ts";
import { usageError } from "./cli-error.ts";
import { untilSignal } from "./until-signal.ts";

const CAMERA_HELP = `
Serves the CameraController gRPC API (operators/device/proto/camera.proto) on a unix socket
(mode 0660) and runs one ffmpeg per started camera: it reads the source (v4l2, rtsp, udp, file,
testsrc; realsense reports FAILED "librealsense not available"), transcodes it to the output
(udp MPEG-TS, rtsp push, hls) and keeps the latest frame for snapshots. ffmpeg is restarted with
exponential backoff when it ends. Each camera's state is written to
<capability-dir>/camera-<name>.json. See docs/devices.md for the configuration file.

Example:
  rlark camera-controller --config /etc/rlark/cameras.yaml
`;

const ROS_HELP = `
Serves the RosController gRPC API (operators/device/proto/ros.proto) on a unix socket (mode 0660)
and runs the robot software: ROS 1 (roscore, then roslaunch once it runs) or ROS 2 (ros2 launch),
each process in its own process group, restarted with exponential backoff, stopped with its whole
group. The state is written to <capability-dir>/ros-controller.json (ros2-controller.json for
ROS 2). See docs/devices.md for the configuration file.

Example:
  rlark ros-controller --flavor ros1 --config /etc/rlark/robot.yaml
`;

const INSTALL_CLIS_HELP = `
Run by the embodied-runtime controllers' DaemonSet as an init container (the image has no
shell): writes <dir>/rosctr and <dir>/camctr, /bin/sh launchers, and <dir>/runtime with this node
binary, the shared libraries and dynamic loader it runs with, and this installed package. The
device plugin mounts the launchers at /usr/local/bin and the runtime at /opt/rlark/cli, so the
CLIs run in task images that have a shell but no node (or an older libc). Only from an installed
package (the rlark image), not a checkout.

Example:
  rlark install-clis --to /var/lib/rlark/bin
`;

interface ControllerFlags {
  socket?: string;
  config: string;
  capabilityDir?: string;
  stateDir?: string;
  flavor?: Flavor;
}

async function serve(name: string, start: () => Promise<RunningController>): Promise<void> {
  const controller = await start().catch((error: Error) => {
    throw usageError(error.message);
  });
  const signal = await untilSignal();
  jsonLogger(name).info("stopping", { signal });
  await controller.close();
}

function withCommonOptions(command: Command, kind: ControllerKind): Command {
  const { env, path: fallback } = controllerSocket(kind, {});
  return command
    .requiredOption("--config <file>", "the controller's configuration (YAML or JSON)")
    .option("--socket <path>", `the unix socket to serve (default: $${env} or ${fallback})`)
    .option(
      "--capability-dir <dir>",
      "where capability files go (default: $RLARK_CAPABILITY_DIR or /var/run/rlark/capabilities)",
    );
}

export function registerDeviceControllers(program: Command): void {
  withCommonOptions(program.command("camera-controller"), "camera")
    .description("run the node's camera controller (gRPC over a unix socket, ffmpeg transcoding)")
    .option(
      "--state-dir <dir>",
      "where the cameras' latest frames are kept (default: the file's stateDir, else /var/run/rlark/camera)",
    )
    .addHelpText("after", CAMERA_HELP)
    .action(async (flags: ControllerFlags) => {
      const logger = jsonLogger("camera-controller");
      await serve("camera-controller", async () =>
        startCameraController({
          config: readCameraConfig(
            flags.config,
            flags.stateDir ? { stateDir: path.resolve(flags.stateDir) } : {},
          ),
          socket: path.resolve(flags.socket ?? controllerSocket("camera").path),
          capabilityDir: path.resolve(flags.capabilityDir ?? capabilityDir()),
          logger,
        }),
      );
    });

  for (const [name, flavor] of [
    ["ros-controller", undefined],
    ["ros2-controller", "ros2"],
  ] as const) {
    const command = withCommonOptions(program.command(name), flavor ?? "ros")
      .description(
        flavor
          ? "run the node's ROS 2 controller (ros-controller --flavor ros2)"
          : "run the node's ROS controller (robot software lifecycle over gRPC)",
      )
      .addHelpText("after", ROS_HELP);
    if (!flavor)
      command.addOption(
        new Option("--flavor <flavor>", "ROS 1 or ROS 2 (default: the file's flavor, else ros1)").choices([
          "ros1",
          "ros2",
        ]),
      );
    command.action(async (flags: ControllerFlags) => {
      const logger = jsonLogger(name);
      await serve(name, async () => {
        const config = readRosConfig(flags.config, flavor ?? flags.flavor);
        // Each flavor has its own socket, as the device plugin mounts them (ROS 2: RLARK_ROS2_SOCKET).
        const socket = flags.socket ?? controllerSocket(config.flavor === "ros2" ? "ros2" : "ros").path;
        return startRosController({
          config,
          socket: path.resolve(socket),
          capabilityDir: path.resolve(flags.capabilityDir ?? capabilityDir()),
          logger,
        });
      });
    });
  }

  program.addCommand(buildCamctr("camctr"));
  program.addCommand(buildRosctr("rosctr"));

  program
    .command("install-clis")
    .description(
      "install rosctr and camctr, with the node they run on, for the device plugin to mount into pods",
    )
    .requiredOption("--to <dir>", "the host folder the device plugin mounts the CLIs from (its --cli-dir)")
    .addHelpText("after", INSTALL_CLIS_HELP)
    .action((flags: { to: string }) => {
      const packageRoot = path.resolve(import.meta.dirname, "../..");
      try {
        const { clis, runtime } = installClis({ to: path.resolve(flags.to), packageRoot });
        jsonLogger("install-clis").info("installed", { clis, runtime });
      } catch (error) {
        throw usageError((error as Error).message);
      }
    });
}
