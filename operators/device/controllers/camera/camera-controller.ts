// The camera controller: the node's configured cameras behind the CameraController gRPC service
// on a unix socket, each reporting its capability (camera-<name>).
import type { Logger } from "../../../lib/logger.ts";
import type { CapabilityState } from "../../capability-file.ts";
import { CapabilityReporter } from "../capability-reporter.ts";
import { grpc, type RunningController, serveOnUnixSocket } from "../grpc.ts";
import { Camera, SnapshotError } from "./camera.ts";
import type { CameraControllerConfig } from "./config.ts";

export interface CameraControllerOptions {
  config: CameraControllerConfig;
  socket: string;
  capabilityDir: string;
  logger: Logger;
  /** How often the capability files are rewritten even without a change. */
  reportIntervalMs?: number;
}

type Callback = grpc.sendUnaryData<unknown>;
type Call = grpc.ServerUnaryCall<{ name?: string }, unknown>;

export async function startCameraController(options: CameraControllerOptions): Promise<RunningController> {
  const { config, logger } = options;
  let reporter: CapabilityReporter | undefined;
  const cameras = new Map(
    config.cameras.map((c) => [c.name, new Camera(c, config, () => reporter?.changed())] as const),
  );

  const named = (call: Call, callback: Callback): Camera | undefined => {
    const camera = cameras.get(call.request.name ?? "");
    if (!camera)
      callback({
        code: grpc.status.NOT_FOUND,
        details: `no camera ${JSON.stringify((call.request.name ?? "").slice(0, 64))} is configured (configured: ${[...cameras.keys()].join(", ") || "none"})`,
      });
    return camera;
  };
  const fail = (callback: Callback, error: unknown) =>
    callback({
      code: error instanceof SnapshotError ? grpc.status.FAILED_PRECONDITION : grpc.status.INTERNAL,
      details: (error as Error).message,
    });

  const server = await serveOnUnixSocket(options.socket, "camera", {
    Start: (call: Call, callback: Callback) => {
      const camera = named(call, callback);
      camera?.start().then(
        () => {
          logger.info("camera started", { camera: camera.config.name });
          callback(null, camera.status());
        },
        (error) => fail(callback, error),
      );
    },
    Stop: (call: Call, callback: Callback) => {
      const camera = named(call, callback);
      camera?.stop().then(
        () => {
          logger.info("camera stopped", { camera: camera.config.name });
          callback(null, camera.status());
        },
        (error) => fail(callback, error),
      );
    },
    Status: (call: Call, callback: Callback) => {
      if (!call.request.name) {
        callback(null, { cameras: [...cameras.values()].map((c) => c.status()) });
        return;
      }
      const camera = named(call, callback);
      if (camera) callback(null, { cameras: [camera.status()] });
    },
    Snapshot: (call: Call, callback: Callback) => {
      const camera = named(call, callback);
      if (!camera) return;
      try {
        callback(null, camera.snapshot());
      } catch (error) {
        fail(callback, error);
      }
    },
  });
  // After the socket is ours: a controller that cannot serve writes no state, and its heartbeat
  // timer does not keep the failed process alive.
  reporter = new CapabilityReporter({
    dir: options.capabilityDir,
    intervalMs: options.reportIntervalMs ?? 10_000,
    logger,
    states: () =>
      new Map<string, CapabilityState>(
        [...cameras].map(([name, camera]) => [`camera-${name}`, camera.capability()]),
      ),
  });
  logger.info("camera controller serving", { socket: options.socket, cameras: [...cameras.keys()] });
  for (const camera of cameras.values()) if (camera.config.autostart) await camera.start();

  return {
    socket: options.socket,
    close: async () => {
      await server.close();
      await Promise.all([...cameras.values()].map((c) => c.stop()));
      reporter?.close();
    },
  };
}
