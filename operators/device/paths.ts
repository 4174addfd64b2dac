// The paths and environment names the embodied runtime agrees on (docs/devices.md): where the
// controllers listen on the host, where their CLIs live, what the device plugin mounts into a pod
// that was allocated `rlinf.io/device`, and the env names the pod reads. The device plugin,
// the controllers, the CLIs and the fleet manifests all import these; nothing spells them twice.

/** The extended resource the device plugin advertises. */
export const DEVICE_RESOURCE = "rlinf.io/device";

/** Host directory of the controllers' unix sockets, one `<controller>.sock` each. */
export const CONTROLLER_SOCKET_DIR = "/var/run/rlark/devices";

/** The controllers: each listens on `${CONTROLLER_SOCKET_DIR}/<name>.sock`. */
export const CONTROLLERS = ["camera-controller", "ros-controller", "ros2-controller"] as const;
export type ControllerName = (typeof CONTROLLERS)[number];

/** A controller's socket on the host; the same path inside pods (mounted there by Allocate). */
export function controllerSocket(controller: ControllerName, dir = CONTROLLER_SOCKET_DIR): string {
  return `${dir}/${controller}.sock`;
}

/** Where Allocate mounts the CLIs inside the container (read-only, one file each). */
export const CLI_CONTAINER_DIR = "/usr/local/bin";
export const CLIS = ["rosctr", "camctr"] as const;
/** Where Allocate mounts the CLIs' runtime (`<cli dir>/runtime`: node, its libraries, rlark) in the container. */
export const CLI_RUNTIME_CONTAINER_DIR = "/opt/rlark/cli";
export type CliName = (typeof CLIS)[number];

/** Which controller and CLI serve a kind of device. */
export const DEVICE_KINDS = {
  camera: { controller: "camera-controller", cli: "camctr" },
  ros: { controller: "ros-controller", cli: "rosctr" },
  ros2: { controller: "ros2-controller", cli: "rosctr" },
} as const satisfies Record<string, { controller: ControllerName; cli: CliName }>;
export type DeviceKind = keyof typeof DEVICE_KINDS;

/** Env set by Allocate in every container that got devices. */
export const ENV = {
  /** Comma-separated IDs of the devices allocated to this container (`camera-video0,robot-arm-left`). */
  DEVICE_IDS: "RLARK_DEVICE_IDS",
  /** Socket of the camera-controller, set when a camera was allocated. */
  CAMERA_SOCKET: "RLARK_CAMERA_SOCKET",
  /** Comma-separated V4L2 device nodes allocated (`/dev/video0`), set when a camera was allocated. */
  CAMERA_DEVICES: "RLARK_CAMERA_DEVICES",
  /** Socket of the ros-controller, set when a ROS 1 robot was allocated. */
  ROS_SOCKET: "RLARK_ROS_SOCKET",
  /** Socket of the ros2-controller, set when a ROS 2 robot was allocated. */
  ROS2_SOCKET: "RLARK_ROS2_SOCKET",
  /** Comma-separated names of the robots allocated (from the robot config file). */
  ROBOTS: "RLARK_ROBOTS",
} as const;

/** The device plugin's own socket file name inside kubelet's device-plugin directory. */
export const DEVICE_PLUGIN_SOCKET = "rlark-device.sock";

/**
 * Host directory where each embodied-runtime component writes `<component>.json`, its capability
 * state ({ name, process, health, message? }); the local agent reads it (`--capability-dir`).
 */
export { CAPABILITY_DIR } from "../lib/capability-status.ts";
