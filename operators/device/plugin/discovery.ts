// What devices this node has: V4L2 cameras (the `video<N>` nodes of the device directory) and the
// robots of the config file. A device is Healthy when whoever serves it can: a camera whose node
// can be opened for reading and writing, a robot whose controller's socket exists.
import { accessSync, constants, existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { controllerSocket, DEVICE_KINDS, type DeviceKind } from "../paths.ts";
import { HEALTHY, UNHEALTHY } from "./proto.ts";
import { readRobotConfig } from "./robot-config.ts";

export interface DiscoveredDevice {
  /** `camera-video0`, `robot-arm-left`: what kubelet allocates and RLARK_DEVICE_IDS lists. */
  id: string;
  kind: DeviceKind;
  health: typeof HEALTHY | typeof UNHEALTHY;
  /** Camera: the device node on the host. */
  devicePath?: string;
  /** Robot: its name in the config file. */
  robot?: string;
}

export interface DiscoveryOptions {
  /** Where V4L2 nodes appear (/dev). */
  devDir: string;
  /** The robot config file; absent means no robots. */
  robotConfig: string;
  /** The controllers' socket directory. */
  socketDir: string;
}

const VIDEO = /^video\d+$/;
/** A node with more cameras than this is misconfigured; the list kubelet receives stays bounded. */
const MAX_CAMERAS = 64;

function usable(file: string): boolean {
  try {
    accessSync(file, constants.R_OK | constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** Devices sorted by ID, so an unchanged node gives an identical list. Throws on a bad robot config. */
export function discoverDevices(options: DiscoveryOptions): DiscoveredDevice[] {
  const cameras = readdirSync(options.devDir)
    .filter((name) => VIDEO.test(name))
    .sort((a, b) => Number(a.slice(5)) - Number(b.slice(5)))
    .slice(0, MAX_CAMERAS)
    .map((name): DiscoveredDevice => {
      const devicePath = path.join(options.devDir, name);
      return {
        id: `camera-${name}`,
        kind: "camera",
        health: usable(devicePath) ? HEALTHY : UNHEALTHY,
        devicePath,
      };
    });
  const robots = readRobotConfig(options.robotConfig).map((robot): DiscoveredDevice => {
    const socket = controllerSocket(DEVICE_KINDS[robot.kind].controller, options.socketDir);
    return {
      id: `robot-${robot.name}`,
      kind: robot.kind,
      health: existsSync(socket) ? HEALTHY : UNHEALTHY,
      robot: robot.name,
    };
  });
  return [...cameras, ...robots].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
