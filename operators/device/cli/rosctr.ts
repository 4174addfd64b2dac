// rosctr: the ROS controller's command line, mounted into pods that were allocated the robot.
import { Command, InvalidArgumentError } from "commander";
import type { LogLine } from "../controllers/index.ts";
import { SOCKETS } from "../socket-env.ts";

const { ros, ros2 } = SOCKETS;

import { callController, clientFor, describeError, targetOf } from "./controller-client.ts";
import { table } from "./format.ts";

interface RosStatus {
  flavor: string;
  process: string;
  health: string;
  message: string;
  processes: {
    name: string;
    state: string;
    pid: number;
    restarts: number;
    lastExit: string;
    restartAt: string;
  }[];
}

const HELP = `
Talks to the node's ROS controller over its unix socket: $${ros.env} (ROS 1) or
$${ros2.env} (ROS 2), which the device plugin sets in pods that request rlinf.io/device and
mounts the socket for; with neither, ${ros.path}. The commands it runs (roscore + roslaunch, or ros2 launch) are configured on
the node; rosctr starts, stops and watches them.

Examples:
  rosctr status
  rosctr restart
  rosctr logs -n 200
  rosctr logs -f
`;

function printStatus(status: RosStatus, json: boolean): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(status, null, 2)}\n`);
    return;
  }
  const head = `${status.flavor}: ${status.process}, health ${status.health}${status.message ? ` (${status.message})` : ""}`;
  const rows = status.processes.map((p) => [
    p.name,
    p.state,
    p.pid ? String(p.pid) : "-",
    String(p.restarts),
    p.lastExit || "-",
  ]);
  process.stdout.write(`${head}\n${table(["PROCESS", "STATE", "PID", "RESTARTS", "LAST EXIT"], rows)}\n`);
}

function count(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 100_000)
    throw new InvalidArgumentError(`"${value}" is not a line count (0 to 100000)`);
  return n;
}

/** The rosctr command tree; `name` is how it was invoked (rosctr, or rlark rosctr). */
export function buildRosctr(name = "rosctr"): Command {
  const program = new Command(name)
    .description("start, stop, restart and watch the robot software (ROS 1 or ROS 2) on this node")
    .option("--socket <path>", `the controller's socket (default: $${ros.env}, $${ros2.env} or ${ros.path})`)
    .addHelpText("after", HELP)
    .showHelpAfterError()
    // As rlark: 2 for usage errors (commander has printed them), 0 after --help.
    .exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : 2));
  const target = () => targetOf("ros", program.opts<{ socket?: string }>().socket);

  for (const [verb, method, what] of [
    ["status", "Status", "the process state and health of the robot software"],
    ["start", "Start", "start the robot software (ROS 1: roscore, then roslaunch once it runs)"],
    ["stop", "Stop", "stop the robot software and every process it started"],
    ["restart", "Restart", "stop, then start afresh (clears the failure count)"],
  ] as const) {
    program
      .command(verb)
      .description(what)
      .option("--json", "print JSON")
      .action(async (opts: { json?: boolean }) => {
        printStatus(await callController<RosStatus>(target(), method, {}), Boolean(opts.json));
      });
  }
  program
    .command("logs")
    .description("the last lines of the robot software's output; with -f, then every new line")
    .option("-n, --tail <lines>", "how many lines from the end", count, 100)
    .option("-f, --follow", "keep printing new lines until interrupted")
    .action(async (opts: { tail: number; follow?: boolean }) => {
      const t = target();
      const client = clientFor(t);
      const call = (
        client as unknown as { Logs: (req: object) => NodeJS.ReadableStream & { cancel(): void } }
      ).Logs({
        tail: opts.tail,
        follow: Boolean(opts.follow),
      });
      const stop = () => call.cancel();
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
      try {
        await new Promise<void>((resolve, reject) => {
          call.on("data", (line: LogLine) => {
            const who = line.process ? `[${line.process}] ` : "";
            process.stdout.write(`${line.time} ${who}${line.text}\n`);
          });
          call.on("end", resolve);
          call.on("error", (error: Error & { code?: number }) =>
            error.code === 1 /* CANCELLED: the user interrupted */
              ? resolve()
              : reject(describeError(t, error)),
          );
        });
      } finally {
        process.off("SIGINT", stop);
        process.off("SIGTERM", stop);
        client.close();
      }
    });
  return program;
}
