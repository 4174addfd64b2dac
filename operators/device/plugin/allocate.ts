// What a container that kubelet gave some of our devices receives: the camera nodes themselves,
// the sockets of the controllers that serve its devices, the CLIs that talk to them, and env
// naming it all (paths.ts). Sockets and CLIs sit at fixed paths in the container whatever the
// host layout, so a task image is written once.
import path from "node:path";
import {
  CLI_CONTAINER_DIR,
  CLI_RUNTIME_CONTAINER_DIR,
  type CliName,
  type ControllerName,
  controllerSocket,
  DEVICE_KINDS,
  ENV,
} from "../paths.ts";
import type { DiscoveredDevice } from "./discovery.ts";
import type { ContainerAllocateResponse, DeviceSpec, Mount } from "./proto.ts";

export interface HostLayout {
  /** The controllers' socket directory on the host. */
  socketDir: string;
  /** The CLIs' directory on the host. */
  cliDir: string;
}

export class UnknownDeviceError extends Error {}

/** The allocation of `ids`; throws UnknownDeviceError for an ID this node does not have. */
export function allocateContainer(
  ids: string[],
  devices: ReadonlyMap<string, DiscoveredDevice>,
  host: HostLayout,
): ContainerAllocateResponse {
  const chosen = ids.map((id) => {
    const device = devices.get(id);
    if (!device) throw new UnknownDeviceError(`device "${id}" is not on this node`);
    return device;
  });
  const controllers = new Set<ControllerName>();
  const clis = new Set<CliName>();
  const specs: DeviceSpec[] = [];
  for (const device of chosen) {
    controllers.add(DEVICE_KINDS[device.kind].controller);
    clis.add(DEVICE_KINDS[device.kind].cli);
    if (device.devicePath)
      specs.push({
        host_path: device.devicePath,
        container_path: `/dev/${path.basename(device.devicePath)}`,
        permissions: "rw",
      });
  }
  const mounts: Mount[] = [
    ...[...controllers].sort().map((controller) => ({
      host_path: controllerSocket(controller, host.socketDir),
      container_path: controllerSocket(controller),
      // connecting to a unix socket needs write permission on it
      read_only: false,
    })),
    ...[...clis].sort().map((cli) => ({
      host_path: path.join(host.cliDir, cli),
      container_path: path.posix.join(CLI_CONTAINER_DIR, cli),
      read_only: true,
    })),
    // what the CLIs run on (rlark install-clis): node, its libraries and the package
    ...(clis.size > 0
      ? [
          {
            host_path: path.join(host.cliDir, "runtime"),
            container_path: CLI_RUNTIME_CONTAINER_DIR,
            read_only: true,
          },
        ]
      : []),
  ];
  const envs: Record<string, string> = { [ENV.DEVICE_IDS]: chosen.map((d) => d.id).join(",") };
  const cameras = chosen.filter((d) => d.kind === "camera");
  if (cameras.length > 0) {
    envs[ENV.CAMERA_SOCKET] = controllerSocket("camera-controller");
    envs[ENV.CAMERA_DEVICES] = specs.map((s) => s.container_path).join(",");
  }
  const robots = chosen.filter((d) => d.robot !== undefined);
  if (robots.length > 0) envs[ENV.ROBOTS] = robots.map((d) => d.robot).join(",");
  if (controllers.has("ros-controller")) envs[ENV.ROS_SOCKET] = controllerSocket("ros-controller");
  if (controllers.has("ros2-controller")) envs[ENV.ROS2_SOCKET] = controllerSocket("ros2-controller");
  return { envs, mounts, devices: specs, annotations: {} };
}

/**
 * kubelet's question "which `size` of these would you rather give": the ones it must include,
 * then healthy devices of kinds already chosen (a camera with a camera), then the rest by ID.
 */
export function preferredAllocation(
  available: string[],
  mustInclude: string[],
  size: number,
  devices: ReadonlyMap<string, DiscoveredDevice>,
): string[] {
  const chosen = [...new Set(mustInclude)].slice(0, size);
  const kinds = new Set(chosen.map((id) => devices.get(id)?.kind));
  const rest = available
    .filter((id) => !chosen.includes(id))
    .sort((a, b) => {
      const rank = (id: string) => (kinds.has(devices.get(id)?.kind) ? 0 : 1);
      return rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0);
    });
  return [...chosen, ...rest].slice(0, Math.max(0, size));
}
