// How rosctr and camctr reach their controller: the socket from --socket, else the environment
// variable the device plugin sets in the pod, else the default path; and errors that name the
// socket and the variable when nobody is there.
import { existsSync } from "node:fs";
import { grpc, type ServiceName, serviceClient, unaryCall } from "../controllers/index.ts";
import { controllerSocket, rosSocket } from "../socket-env.ts";

/** An error the CLIs print as one line and exit with. */
export class CtlError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode = 1) {
    super(message);
    this.exitCode = exitCode;
  }
}

export interface ControllerTarget {
  kind: ServiceName;
  socket: string;
  env: string;
}

const TITLE: Record<ServiceName, string> = { camera: "camera controller", ros: "ROS controller" };

export function targetOf(
  kind: ServiceName,
  socketFlag: string | undefined,
  env = process.env,
): ControllerTarget {
  const location = kind === "ros" ? rosSocket(env) : controllerSocket(kind, env);
  return { kind, socket: socketFlag || location.path, env: location.env };
}

function unreachable(target: ControllerTarget, detail: string): CtlError {
  return new CtlError(
    `${detail} (the socket comes from --socket or $${target.env}; in a pod, the device plugin mounts it for containers that request rlinf.io/device)`,
  );
}

/** Fails early, with the path, when the socket is not there at all. */
export function clientFor(target: ControllerTarget): grpc.Client {
  if (!existsSync(target.socket))
    throw unreachable(target, `no ${TITLE[target.kind]} socket at ${target.socket}`);
  return serviceClient(target.kind, target.socket);
}

/** A gRPC error as a sentence: unreachable sockets name the path and the variable. */
export function describeError(target: ControllerTarget, error: unknown): CtlError {
  const e = error as grpc.ServiceError;
  if (e instanceof CtlError) return e;
  if (e.code === grpc.status.UNAVAILABLE || e.code === grpc.status.DEADLINE_EXCEEDED)
    return unreachable(
      target,
      `the ${TITLE[target.kind]} at ${target.socket} does not answer: ${e.details || e.message}`,
    );
  if (typeof e.code === "number") return new CtlError(e.details || e.message);
  return new CtlError((error as Error).message ?? String(error));
}

export async function callController<Res>(
  target: ControllerTarget,
  method: string,
  request: object,
): Promise<Res> {
  const client = clientFor(target);
  try {
    return await unaryCall<object, Res>(client, method, request);
  } catch (error) {
    throw describeError(target, error);
  } finally {
    client.close();
  }
}

/** Runs a CLI's command line; errors print as `<cli>: message` with their exit code. */
export async function runCli(name: string, parse: () => Promise<unknown>): Promise<void> {
  try {
    await parse();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    for (const line of message.split("\n")) process.stderr.write(`${name}: ${line}\n`);
    process.exitCode = error instanceof CtlError ? error.exitCode : 1;
  }
}
