import path from "node:path";
import type { Command } from "commander";

export const DEVICE_PLUGIN_HELP = `
Runs the embodied runtime's kubelet device plugin on this node (docs/devices.md). It finds V4L2
cameras (video<N> in --dev-dir) and the robots listed in --robot-config, advertises them as the
extended resource rlinf.io/device, and registers with kubelet through --plugin-dir/kubelet.sock.
A pod allocated devices gets the camera nodes, the controllers' sockets from --socket-dir and the
rosctr/camctr CLIs from --cli-dir, and env RLARK_DEVICE_IDS, RLARK_CAMERA_SOCKET, RLARK_ROS_SOCKET,
RLARK_ROS2_SOCKET, RLARK_CAMERA_DEVICES, RLARK_ROBOTS.

It re-registers when kubelet restarts, sends kubelet the full list on every change, and writes its
capability state to --capability-dir/device-plugin.json for the local agent. With --node-name (the
DaemonSet passes its node's name), it also publishes every capability file of --capability-dir
(its own and the controllers') as conditions capability.rlinf.io/<component> on that Node, which
the kubernetes agent reports to the hub; it needs patch on nodes/status (in-cluster credentials,
or --kubeconfig). A robot config error
at start exits 1 naming file:line; later, the last good list stays and the state is DEGRADED.

Robot config (YAML):
  robots:
    - name: arm-left   # DNS label; device ID robot-arm-left
      kind: ros        # ros (ros-controller) or ros2 (ros2-controller)

Example:
  rlark device-plugin --robot-config /etc/rlark/robots.yaml
`;

interface DevicePluginFlags {
  pluginDir: string;
  devDir: string;
  robotConfig: string;
  socketDir: string;
  cliDir: string;
  capabilityDir: string;
  nodeName?: string;
  kubeconfig?: string;
}

export function registerDevicePlugin(program: Command): void {
  // Defaults come from operators/device/paths.ts, loaded lazily; the literals here are their values.
  program
    .command("device-plugin")
    .description("advertise this node's cameras and robots to kubelet as rlinf.io/device")
    .option("--plugin-dir <dir>", "kubelet's device-plugin directory", "/var/lib/kubelet/device-plugins")
    .option("--dev-dir <dir>", "where V4L2 device nodes (video<N>) appear", "/dev")
    .option("--robot-config <file>", "the robots this node offers (YAML)", "/etc/rlark/robots.yaml")
    .option("--socket-dir <dir>", "the controllers' socket directory", "/var/run/rlark/devices")
    .option("--cli-dir <dir>", "where rosctr and camctr are on this host", "/var/lib/rlark/bin")
    .option(
      "--capability-dir <dir>",
      "where to write the capability state for the agent",
      "/var/run/rlark/capabilities",
    )
    .option("--node-name <name>", "publish the capability states as conditions on this Node")
    .option("--kubeconfig <file>", "with --node-name: the API server (default: in-cluster)")
    .addHelpText("after", DEVICE_PLUGIN_HELP)
    .action(async (flags: DevicePluginFlags) => {
      const [
        { DevicePlugin, publishNodeCapabilities },
        { jsonLogger },
        { writeCapabilityStatus, REFRESH_MS },
        { untilSignal },
        { loadKubeConfig },
        { systemClock },
      ] = await Promise.all([
        import("../device/index.ts"),
        import("../lib/logger.ts"),
        import("../lib/capability-status.ts"),
        import("./until-signal.ts"),
        import("../lib/kube-config.ts"),
        import("../lib/clock.ts"),
      ]);
      const logger = jsonLogger("device-plugin");
      const capabilityDir = path.resolve(flags.capabilityDir);
      const write = (capability: Parameters<typeof writeCapabilityStatus>[1]) => {
        try {
          writeCapabilityStatus(capabilityDir, capability);
        } catch (error) {
          logger.warn("cannot write the capability state", { error: (error as Error).message });
        }
      };
      const plugin = await DevicePlugin.start({
        pluginDir: path.resolve(flags.pluginDir),
        devDir: path.resolve(flags.devDir),
        robotConfig: path.resolve(flags.robotConfig),
        socketDir: path.resolve(flags.socketDir),
        cliDir: path.resolve(flags.cliDir),
        onCapability: write,
        logger,
      });
      // Rewritten while alive, so the agent can tell a dead plugin from a quiet one.
      const refresh = setInterval(() => write(plugin.capability()), REFRESH_MS);
      const stopPublishing = flags.nodeName
        ? publishNodeCapabilities({
            kubeConfig: loadKubeConfig(flags.kubeconfig),
            nodeName: flags.nodeName,
            capabilityDir,
            intervalMs: REFRESH_MS,
            clock: systemClock,
            logger,
          })
        : undefined;
      await untilSignal();
      clearInterval(refresh);
      await plugin.stop();
      await stopPublishing?.();
    });
}
