// The devices a docker machine offers its containers, for the Node report: the character devices
// of its device directory that edge work maps in with `docker.devices`. Cameras are `video<N>`
// (V4L2, as the device plugin finds them, operators/device/plugin/discovery.ts); robot arms and
// sensors hang on USB serial ports, `ttyUSB<N>` (FTDI, CH340, CP210x adapters) and `ttyACM<N>`
// (CDC-ACM: Arduino-style boards, many arm controllers). Anything else under /dev is the
// machine's own and not reported.
import { readdirSync, statSync } from "node:fs";
import path from "node:path";

export type HostDeviceKind = "camera" | "serial";

export interface HostDevice {
  /** The node's path, as a Task's `docker.devices` names it. */
  path: string;
  kind: HostDeviceKind;
}

const PATTERNS: [RegExp, HostDeviceKind][] = [
  [/^video\d+$/, "camera"],
  [/^tty(USB|ACM)\d+$/, "serial"],
];

/** A machine with more than this is misconfigured; the Node report stays bounded. */
const MAX_DEVICES = 64;

/** Character devices of `devDir` that look like cameras or serial ports, sorted by path. */
export function hostDevices(devDir = "/dev"): HostDevice[] {
  let names: string[];
  try {
    names = readdirSync(devDir);
  } catch {
    return [];
  }
  const found: HostDevice[] = [];
  for (const name of names.sort()) {
    const kind = PATTERNS.find(([pattern]) => pattern.test(name))?.[1];
    if (!kind) continue;
    const file = path.join(devDir, name);
    try {
      // A regular file or a link to one named like a device is not one.
      if (!statSync(file).isCharacterDevice()) continue;
    } catch {
      continue; // gone meanwhile, or a dangling link
    }
    found.push({ path: file, kind });
    if (found.length >= MAX_DEVICES) break;
  }
  return found;
}

/** The Node's resource counting devices, as the device plugin advertises it on Kubernetes nodes. */
export const DEVICE_RESOURCE = "rlinf.io/device";
/** The Node's annotation listing them: `camera:/dev/video0,serial:/dev/ttyUSB0`. */
export const DEVICES_ANNOTATION = "rlinf.io/devices";
