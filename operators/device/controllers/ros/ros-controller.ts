// The ROS controller: the robot software's lifecycle behind the RosController gRPC service on a
// unix socket, reporting its capability (ros-controller or ros2-controller).
import type { Logger } from "../../../lib/logger.ts";
import { CapabilityReporter } from "../capability-reporter.ts";
import { grpc, type RunningController, serveOnUnixSocket } from "../grpc.ts";
import type { LogLine } from "../log-ring.ts";
import type { RosControllerConfig } from "./config.ts";
import { Robot } from "./robot.ts";

export interface RosControllerOptions {
  config: RosControllerConfig;
  socket: string;
  capabilityDir: string;
  logger: Logger;
  reportIntervalMs?: number;
}

/** The capability a flavor reports: ros-controller (ROS 1) or ros2-controller. */
function rosCapabilityName(flavor: RosControllerConfig["flavor"]): string {
  return flavor === "ros1" ? "ros-controller" : "ros2-controller";
}

type Callback = grpc.sendUnaryData<unknown>;
/** A log line on the wire: the process's own, or a note from the controller. */
type WireLine = Omit<LogLine, "stream"> & { stream: LogLine["stream"] | "controller" };
type LogsCall = grpc.ServerWritableStream<{ tail?: number; follow?: boolean }, WireLine>;

const DEFAULT_TAIL = 100;

export async function startRosController(options: RosControllerOptions): Promise<RunningController> {
  const { config, logger } = options;
  const name = rosCapabilityName(config.flavor);
  let reporter: CapabilityReporter | undefined;
  const robot = new Robot(config, () => reporter?.changed());

  const act = (what: string, action: () => Promise<void>) => (_call: unknown, callback: Callback) => {
    action().then(
      () => {
        logger.info(`robot software ${what}`, { flavor: config.flavor });
        callback(null, robot.status());
      },
      (error: Error) => callback({ code: grpc.status.INTERNAL, details: error.message }),
    );
  };

  const server = await serveOnUnixSocket(options.socket, "ros", {
    Start: act("started", () => robot.start()),
    Stop: act("stopped", () => robot.stop()),
    Restart: act("restarted", () => robot.restart()),
    Status: (_call: unknown, callback: Callback) => callback(null, robot.status()),
    Logs: (call: LogsCall) => streamLogs(robot, call),
  });
  // After the socket is ours: a controller that cannot serve writes no state, and its heartbeat
  // timer does not keep the failed process alive.
  reporter = new CapabilityReporter({
    dir: options.capabilityDir,
    intervalMs: options.reportIntervalMs ?? 10_000,
    logger,
    states: () => {
      const { process, health, message } = robot.status();
      return new Map([[name, { process, health, message }]]);
    },
  });
  logger.info("ros controller serving", { socket: options.socket, flavor: config.flavor });
  if (config.autostart) await robot.start();

  return {
    socket: options.socket,
    close: async () => {
      await server.close();
      await robot.stop();
      reporter?.close();
    },
  };
}

/**
 * The tail, then (with follow) new lines as they come. A reader slower than the log is not waited
 * for: the ring moves on, and the reader is told how many lines it missed.
 */
function streamLogs(robot: Robot, call: LogsCall): void {
  const tail = Math.min(call.request.tail || DEFAULT_TAIL, robot.config.logs.maxLines);
  let cursor = robot.logs.tail(tail)[0]?.seq ?? robot.logs.nextSeq;
  let waiting = false;
  let done = false;
  const pump = () => {
    if (waiting || done) return;
    const { lines, dropped } = robot.logs.since(cursor);
    if (dropped > 0) {
      const note: WireLine = {
        seq: 0,
        time: new Date().toISOString(),
        process: "",
        stream: "controller",
        text: `${dropped} lines dropped (reader too slow)`,
      };
      cursor += dropped;
      if (!call.write(note)) waiting = true;
    }
    for (const line of lines) {
      if (waiting) break;
      cursor = line.seq + 1;
      if (!call.write(line)) waiting = true;
    }
    if (waiting) {
      call.once("drain", () => {
        waiting = false;
        pump();
      });
    }
  };
  if (!call.request.follow) {
    for (const line of robot.logs.since(cursor).lines) call.write(line);
    call.end();
    return;
  }
  const unsubscribe = robot.logs.subscribe(pump);
  const finish = () => {
    done = true;
    unsubscribe();
  };
  call.once("cancelled", finish);
  call.once("close", finish);
  call.once("error", finish);
  pump();
}
