// The controllers' unix sockets: the environment variable that names each, and its default. The
// names and paths follow the device plugin's (operators/device/paths.ts on the device branch,
// reconciled at merge): sockets in /var/run/rlark/devices, one `<controller>.sock` each. Allocate
// mounts the socket into a pod and sets the variable there, so the CLIs find it; the controllers
// read the same variable when --socket is not given.

const SOCKET_DIR = "/var/run/rlark/devices";

export const SOCKETS = {
  camera: { env: "RLARK_CAMERA_SOCKET", path: `${SOCKET_DIR}/camera-controller.sock` },
  ros: { env: "RLARK_ROS_SOCKET", path: `${SOCKET_DIR}/ros-controller.sock` },
  ros2: { env: "RLARK_ROS2_SOCKET", path: `${SOCKET_DIR}/ros2-controller.sock` },
} as const;

export type ControllerKind = keyof typeof SOCKETS;

export interface SocketLocation {
  path: string;
  /** The variable a user sets to point somewhere else. */
  env: string;
}

/** The socket of a controller: the variable's value, else the default. */
export function controllerSocket(kind: ControllerKind, env: NodeJS.ProcessEnv = process.env): SocketLocation {
  const { env: name, path } = SOCKETS[kind];
  return { path: env[name] || path, env: name };
}

/**
 * The ROS controller rosctr talks to: a pod is allocated a ROS 1 or a ROS 2 robot, and Allocate
 * sets the variable of that one; with neither set, the ROS 1 default.
 */
export function rosSocket(env: NodeJS.ProcessEnv = process.env): SocketLocation {
  if (!env[SOCKETS.ros.env] && env[SOCKETS.ros2.env]) return controllerSocket("ros2", env);
  return controllerSocket("ros", env);
}
