// The ROS controller's configuration: the commands that run the robot software (argv lists, no
// shell), their environment, the readiness check and the restart policy. Commands are the node
// operator's: ROS 1 defaults to `roscore` for the master, the launch command is always given.
import { ConfigSource, Fields, type RestartPolicy, readRestartPolicy } from "../config-file.ts";

export type Flavor = "ros1" | "ros2";

export interface RosProcessConfig {
  /** Names the process in status and logs. */
  name: string;
  command: string[];
}

export interface RosControllerConfig {
  flavor: Flavor;
  /** In start order: roscore then roslaunch (ROS 1), launch (ROS 2). */
  processes: RosProcessConfig[];
  env: Record<string, string>;
  cwd?: string;
  ready?: { command: string[]; intervalMs: number; timeoutMs: number };
  restart: RestartPolicy;
  logs: { maxLines: number; maxLineBytes: number };
  autostart: boolean;
}

const TOP = ["flavor", "core", "launch", "env", "cwd", "ready", "restart", "logs", "autostart"];

export function readRosConfig(file: string, flavor?: Flavor): RosControllerConfig {
  return parseRosConfig(ConfigSource.read(file), flavor);
}

/** `flavor` (the --flavor flag) wins over the file's; the file's core is refused for ROS 2. */
export function parseRosConfig(source: ConfigSource, flavorFlag?: Flavor): RosControllerConfig {
  const f = new Fields(source, [], source.root, TOP);
  const chosen = flavorFlag ?? f.oneOf("flavor", ["ros1", "ros2"] as const, "ros1");
  if (flavorFlag && f.has("flavor") && f.raw("flavor") !== flavorFlag)
    throw f.fail("flavor", `is ${String(f.raw("flavor"))} but --flavor is ${flavorFlag}`);
  if (chosen === "ros2" && f.has("core")) throw f.fail("core", "ROS 2 has no master: remove core");
  const launch = f.nested("launch", ["command"]).command("command");
  const processes: RosProcessConfig[] =
    chosen === "ros1"
      ? [
          { name: "roscore", command: f.nested("core", ["command"]).command("command", ["roscore"]) },
          { name: "roslaunch", command: launch },
        ]
      : [{ name: "launch", command: launch }];
  const logs = f.nested("logs", ["maxLines", "maxLineBytes"]);
  const cwd = f.optionalString("cwd");
  let ready: RosControllerConfig["ready"];
  if (f.has("ready")) {
    const r = f.nested("ready", ["command", "intervalSeconds", "timeoutSeconds"]);
    ready = {
      command: r.command("command"),
      intervalMs: r.number("intervalSeconds", 5, 0.05, 3600) * 1000,
      timeoutMs: r.number("timeoutSeconds", 5, 0.05, 3600) * 1000,
    };
  }
  return {
    flavor: chosen,
    processes,
    env: f.stringMap("env"),
    ...(cwd ? { cwd } : {}),
    ...(ready ? { ready } : {}),
    restart: readRestartPolicy(f),
    logs: {
      maxLines: logs.number("maxLines", 2000, 10, 100_000),
      maxLineBytes: logs.number("maxLineBytes", 4096, 80, 65_536),
    },
    autostart: f.boolean("autostart", false),
  };
}
