// The controllers' unix sockets: the environment variable that names each, and its default.
// The device plugin's Allocate mounts the socket into a pod and sets the variable there, so the
// CLIs find it; the controllers read the same variable when --socket is not given.

export const CAMERA_SOCKET_ENV = "RLARK_CAMERA_SOCKET";
export const ROS_SOCKET_ENV = "RLARK_ROS_SOCKET";
export const DEFAULT_CAMERA_SOCKET = "/var/run/rlark/devices/camera.sock";
export const DEFAULT_ROS_SOCKET = "/var/run/rlark/devices/ros.sock";

export type ControllerKind = "camera" | "ros";

export interface SocketLocation {
  path: string;
  /** The variable a user sets to point somewhere else. */
  env: string;
}

/** The socket of a controller kind: the variable's value, else the default. */
export function controllerSocket(kind: ControllerKind, env: NodeJS.ProcessEnv = process.env): SocketLocation {
  const name = kind === "camera" ? CAMERA_SOCKET_ENV : ROS_SOCKET_ENV;
  const fallback = kind === "camera" ? DEFAULT_CAMERA_SOCKET : DEFAULT_ROS_SOCKET;
  return { path: env[name] || fallback, env: name };
}
