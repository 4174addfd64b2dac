// The device plugin against a kubelet-side Registration server generated from the same proto:
// registration, ListAndWatch on device and config changes, Allocate, kubelet restarts.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import t, { type Test } from "tap";
import { DevicePlugin } from "../../operators/device/plugin/device-plugin.ts";
import type { ListAndWatchResponse } from "../../operators/device/plugin/proto.ts";
import { silentLogger } from "../../operators/lib/logger.ts";
import type { Capability } from "../../operators/lib/tunnel/index.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { call, dialPlugin, startKubeletRegistration } from "./kubelet-side.ts";

function layout(t: Test) {
  const root = mkdtempSync(path.join(tmpdir(), "rlark-devplugin-"));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const dirs = {
    pluginDir: path.join(root, "device-plugins"),
    devDir: path.join(root, "dev"),
    socketDir: path.join(root, "sockets"),
    cliDir: path.join(root, "bin"),
    configDir: path.join(root, "etc"),
  };
  for (const dir of Object.values(dirs)) mkdirSync(dir);
  return { ...dirs, robotConfig: path.join(dirs.configDir, "robots.yaml") };
}

async function startPlugin(t: Test, dirs: ReturnType<typeof layout>, capabilities: Capability[] = []) {
  const plugin = await DevicePlugin.start({
    ...dirs,
    logger: silentLogger,
    onCapability: (c) => capabilities.push(c),
  });
  t.teardown(() => plugin.stop());
  return plugin;
}

/** The lists ListAndWatch has sent, as sorted `id:health` strings each. */
function watchLists(t: Test, dir: string) {
  const client = dialPlugin(dir, "rlark-device.sock");
  const lists: string[][] = [];
  const stream = client.ListAndWatch({});
  stream.on("data", (r: ListAndWatchResponse) => lists.push(r.devices.map((d) => `${d.ID}:${d.health}`)));
  stream.on("error", () => {});
  t.teardown(() => {
    stream.cancel();
    client.close();
  });
  return lists;
}

const last = <T>(list: T[]) => list[list.length - 1];

t.test("registers rlinf.io/device with kubelet, version v1beta1, its socket as endpoint", async (t) => {
  const dirs = layout(t);
  const kubelet = await startKubeletRegistration(dirs.pluginDir);
  t.teardown(() => kubelet.stop());
  const capabilities: Capability[] = [];
  await startPlugin(t, dirs, capabilities);
  await waitFor("a registration", () => kubelet.registrations.length > 0);
  t.match(kubelet.registrations[0], {
    version: "v1beta1",
    endpoint: "rlark-device.sock",
    resource_name: "rlinf.io/device",
    options: { pre_start_required: true, get_preferred_allocation_available: true },
  });
  t.match(last(capabilities), { name: "device-plugin", process: "RUNNING", health: "READY" });
  const client = dialPlugin(dirs.pluginDir, kubelet.registrations[0]?.endpoint ?? "");
  t.teardown(() => client.close());
  t.same(await call(client.GetDevicePluginOptions, client, {}), {
    pre_start_required: true,
    get_preferred_allocation_available: true,
  });
});

t.test(
  "ListAndWatch sends the full list again when a camera appears or goes and when the robot config changes",
  async (t) => {
    const dirs = layout(t);
    writeFileSync(path.join(dirs.devDir, "video0"), "");
    writeFileSync(path.join(dirs.devDir, "null"), "");
    const kubelet = await startKubeletRegistration(dirs.pluginDir);
    t.teardown(() => kubelet.stop());
    await startPlugin(t, dirs);
    const lists = watchLists(t, dirs.pluginDir);
    await waitFor("the first list", () => lists.length === 1);
    t.same(lists[0], ["camera-video0:Healthy"]);

    writeFileSync(path.join(dirs.devDir, "video2"), "");
    await waitFor("a list with video2", () => last(lists)?.includes("camera-video2:Healthy"));
    t.same(last(lists), ["camera-video0:Healthy", "camera-video2:Healthy"], "the whole list, not a delta");

    rmSync(path.join(dirs.devDir, "video0"));
    await waitFor("a list without video0", () => last(lists)?.length === 1);
    t.same(last(lists), ["camera-video2:Healthy"]);

    // A robot whose controller socket is absent is advertised Unhealthy, then Healthy once it listens.
    writeFileSync(dirs.robotConfig, "robots:\n  - name: arm-left\n    kind: ros\n");
    await waitFor("the robot", () => last(lists)?.includes("robot-arm-left:Unhealthy"));
    writeFileSync(path.join(dirs.socketDir, "ros-controller.sock"), "");
    await waitFor("the robot healthy", () => last(lists)?.includes("robot-arm-left:Healthy"));
    t.same(last(lists), ["camera-video2:Healthy", "robot-arm-left:Healthy"]);
  },
);

t.test("a bad robot config keeps the last good list and reports DEGRADED with file:line", async (t) => {
  const dirs = layout(t);
  writeFileSync(dirs.robotConfig, "robots:\n  - name: arm-left\n    kind: ros\n");
  const kubelet = await startKubeletRegistration(dirs.pluginDir);
  t.teardown(() => kubelet.stop());
  const capabilities: Capability[] = [];
  const plugin = await startPlugin(t, dirs, capabilities);
  writeFileSync(dirs.robotConfig, "robots:\n  - name: arm-left\n    kind: ros3\n");
  const degraded = await waitFor("DEGRADED", () => capabilities.find((c) => c.health === "DEGRADED"));
  t.match(degraded.message, `${dirs.robotConfig}:3: robots[0].kind: expected one of ros, ros2`);
  t.same(
    plugin.devices().map((d) => d.id),
    ["robot-arm-left"],
    "the last good list stays",
  );
  writeFileSync(dirs.robotConfig, "robots:\n  - name: arm-left\n    kind: ros2\n");
  await waitFor("READY again", () => last(capabilities)?.health === "READY");
  t.same(
    plugin.devices().map((d) => d.kind),
    ["ros2"],
  );
});

t.test("a bad robot config at start is refused with file:line", async (t) => {
  const dirs = layout(t);
  writeFileSync(dirs.robotConfig, "robots:\n  - name: Arm_Left\n    kind: ros\n");
  await t.rejects(DevicePlugin.start({ ...dirs, logger: silentLogger }), {
    message: `${dirs.robotConfig}:2: robots[0].name: expected a DNS label`,
  });
});

t.test("Allocate mounts the controllers' sockets and the CLIs and names the devices in env", async (t) => {
  const dirs = layout(t);
  writeFileSync(path.join(dirs.devDir, "video1"), "");
  writeFileSync(
    dirs.robotConfig,
    "robots:\n  - name: arm-left\n    kind: ros\n  - name: arm-right\n    kind: ros2\n",
  );
  const kubelet = await startKubeletRegistration(dirs.pluginDir);
  t.teardown(() => kubelet.stop());
  await startPlugin(t, dirs);
  const client = dialPlugin(dirs.pluginDir, "rlark-device.sock");
  t.teardown(() => client.close());
  const response = await call(client.Allocate, client, {
    container_requests: [
      { devices_ids: ["camera-video1", "robot-arm-left"] },
      { devices_ids: ["robot-arm-right"] },
    ],
  });
  t.same(response.container_responses[0], {
    envs: {
      RLARK_DEVICE_IDS: "camera-video1,robot-arm-left",
      RLARK_CAMERA_SOCKET: "/var/run/rlark/devices/camera-controller.sock",
      RLARK_CAMERA_DEVICES: "/dev/video1",
      RLARK_ROBOTS: "arm-left",
      RLARK_ROS_SOCKET: "/var/run/rlark/devices/ros-controller.sock",
    },
    mounts: [
      {
        host_path: path.join(dirs.socketDir, "camera-controller.sock"),
        container_path: "/var/run/rlark/devices/camera-controller.sock",
        read_only: false,
      },
      {
        host_path: path.join(dirs.socketDir, "ros-controller.sock"),
        container_path: "/var/run/rlark/devices/ros-controller.sock",
        read_only: false,
      },
      {
        host_path: path.join(dirs.cliDir, "camctr"),
        container_path: "/usr/local/bin/camctr",
        read_only: true,
      },
      {
        host_path: path.join(dirs.cliDir, "rosctr"),
        container_path: "/usr/local/bin/rosctr",
        read_only: true,
      },
      {
        host_path: path.join(dirs.cliDir, "runtime"),
        container_path: "/opt/rlark/cli",
        read_only: true,
      },
    ],
    devices: [
      { host_path: path.join(dirs.devDir, "video1"), container_path: "/dev/video1", permissions: "rw" },
    ],
    annotations: {},
    cdi_devices: [],
  });
  t.same(response.container_responses[1]?.envs, {
    RLARK_DEVICE_IDS: "robot-arm-right",
    RLARK_ROBOTS: "arm-right",
    RLARK_ROS2_SOCKET: "/var/run/rlark/devices/ros2-controller.sock",
  });
  await t.rejects(
    call(client.Allocate, client, { container_requests: [{ devices_ids: ["camera-video9"] }] }),
    {
      message: /device "camera-video9" is not on this node/,
    },
  );
  // The robots' controllers are not listening: PreStartContainer refuses rather than start blind.
  await t.rejects(call(client.PreStartContainer, client, { devices_ids: ["robot-arm-left"] }), {
    message: /devices not healthy on this node: robot-arm-left/,
  });
  t.same(await call(client.PreStartContainer, client, { devices_ids: ["camera-video1"] }), {});
  const preferred = await call(client.GetPreferredAllocation, client, {
    container_requests: [
      {
        available_deviceIDs: ["robot-arm-right", "robot-arm-left", "camera-video1"],
        must_include_deviceIDs: ["camera-video1"],
        allocation_size: 2,
      },
    ],
  });
  t.same(preferred.container_responses[0]?.deviceIDs, ["camera-video1", "robot-arm-left"]);
});

t.test(
  "kubelet restarts (its socket and ours wiped, kubelet.sock recreated): the plugin serves again and re-registers",
  async (t) => {
    const dirs = layout(t);
    writeFileSync(path.join(dirs.devDir, "video0"), "");
    const first = await startKubeletRegistration(dirs.pluginDir);
    await startPlugin(t, dirs);
    await waitFor("the first registration", () => first.registrations.length === 1);
    await first.stop();
    // kubelet removes every socket in the directory when it starts
    rmSync(path.join(dirs.pluginDir, "rlark-device.sock"), { force: true });
    const second = await startKubeletRegistration(dirs.pluginDir);
    t.teardown(() => second.stop());
    await waitFor("a registration with the new kubelet", () => second.registrations.length === 1);
    t.match(second.registrations[0], { resource_name: "rlinf.io/device", endpoint: "rlark-device.sock" });
    const lists = watchLists(t, dirs.pluginDir);
    await waitFor("the list from the new socket", () => lists.length === 1);
    t.same(lists[0], ["camera-video0:Healthy"]);
  },
);

t.test("no kubelet yet: STARTING until kubelet.sock appears, then registered", async (t) => {
  const dirs = layout(t);
  const capabilities: Capability[] = [];
  await startPlugin(t, dirs, capabilities);
  t.match(last(capabilities), { process: "RUNNING", health: "STARTING" });
  const kubelet = await startKubeletRegistration(dirs.pluginDir);
  t.teardown(() => kubelet.stop());
  await waitFor("a registration", () => kubelet.registrations.length === 1);
  await waitFor("READY", () => last(capabilities)?.health === "READY");
});

t.test(
  "a plugin directory it cannot serve in is an error at start, and nothing is left running",
  async (t) => {
    const dirs = layout(t);
    rmSync(dirs.pluginDir, { recursive: true });
    const capabilities: Capability[] = [];
    await t.rejects(
      DevicePlugin.start({ ...dirs, logger: silentLogger, onCapability: (c) => capabilities.push(c) }),
      /rlark-device\.sock/,
    );
    t.match(last(capabilities), { process: "STOPPED", health: "STOPPED" });
  },
);
