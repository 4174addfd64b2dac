// gRPC over a unix socket, for the controllers and their CLIs: the services come from the .proto
// files next to this package (loaded at run time by @grpc/proto-loader), the socket's file mode is
// the access control (0660: the node's root and the group the device plugin mounts it for).
import { chmodSync, existsSync, lstatSync, mkdirSync, rmSync } from "node:fs";
import { connect } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

const PROTO_DIR = fileURLToPath(new URL("../proto/", import.meta.url));

// camelCase fields, enums as their names, 64-bit integers as numbers (counts and times, far from 2^53).
const LOAD_OPTIONS: protoLoader.Options = {
  keepCase: false,
  enums: String,
  longs: Number,
  defaults: true,
  oneofs: true,
};

export type ServiceName = "camera" | "ros";

const SERVICES: Record<ServiceName, { file: string; path: string }> = {
  camera: { file: "camera.proto", path: "rlark.device.camera.v1.CameraController" },
  ros: { file: "ros.proto", path: "rlark.device.ros.v1.RosController" },
};

function clientConstructor(name: ServiceName): grpc.ServiceClientConstructor {
  const { file, path: servicePath } = SERVICES[name];
  const definition = protoLoader.loadSync(path.join(PROTO_DIR, file), LOAD_OPTIONS);
  let node: unknown = grpc.loadPackageDefinition(definition);
  for (const part of servicePath.split(".")) node = (node as Record<string, unknown>)[part];
  return node as grpc.ServiceClientConstructor;
}

/** The service's definition, for a server. */
export function serviceDefinition(name: ServiceName): grpc.ServiceDefinition {
  return clientConstructor(name).service;
}

/** A controller serving its socket, until closed (which stops what it runs). */
export interface RunningController {
  socket: string;
  close(): Promise<void>;
}

export interface UnixServer {
  readonly socket: string;
  close(): Promise<void>;
}

/**
 * Serves `implementation` on the unix socket `socket`. A stale socket (nobody answers) is replaced;
 * a live one means another controller serves there, which is an error, as is a path that is not a
 * socket (nothing a user keeps there is deleted).
 */
export async function serveOnUnixSocket(
  socket: string,
  name: ServiceName,
  implementation: grpc.UntypedServiceImplementation,
): Promise<UnixServer> {
  mkdirSync(path.dirname(socket), { recursive: true, mode: 0o755 });
  if (existsSync(socket)) {
    if (!lstatSync(socket).isSocket())
      throw new Error(`${socket} exists and is not a socket; refusing to replace it`);
    if (await answers(socket)) throw new Error(`another controller already serves ${socket}`);
    rmSync(socket, { force: true });
  }
  const server = new grpc.Server({ "grpc.max_receive_message_length": 64 * 1024 });
  server.addService(serviceDefinition(name), implementation);
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix:${socket}`, grpc.ServerCredentials.createInsecure(), (error) =>
      error ? reject(error) : resolve(),
    ),
  );
  chmodSync(socket, 0o660);
  return {
    socket,
    close: () =>
      new Promise<void>((resolve) => {
        // Open streams (logs --follow) would hold a graceful shutdown forever.
        server.forceShutdown();
        rmSync(socket, { force: true });
        resolve();
      }),
  };
}

function answers(socket: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = connect(socket);
    probe.once("connect", () => {
      probe.destroy();
      resolve(true);
    });
    probe.once("error", () => resolve(false));
  });
}

/** A client of the service on `socket`. */
export function serviceClient(name: ServiceName, socket: string): grpc.Client {
  const Constructor = clientConstructor(name);
  return new Constructor(`unix:${socket}`, grpc.credentials.createInsecure(), {
    // The largest snapshot (16 MiB) and its envelope.
    "grpc.max_receive_message_length": 17 * 1024 * 1024,
  });
}

type UnaryMethod<Req, Res> = (
  request: Req,
  options: grpc.CallOptions,
  callback: (error: grpc.ServiceError | null, response: Res) => void,
) => grpc.ClientUnaryCall;

/** Calls a unary method with a deadline; rejects with the grpc ServiceError. */
export function unaryCall<Req, Res>(
  client: grpc.Client,
  method: string,
  request: Req,
  deadlineMs = 15_000,
): Promise<Res> {
  const call = (client as unknown as Record<string, UnaryMethod<Req, Res> | undefined>)[method];
  if (!call) throw new Error(`no method ${method}`);
  return new Promise((resolve, reject) => {
    call.call(client, request, { deadline: Date.now() + deadlineMs }, (error, response) =>
      error ? reject(error) : resolve(response),
    );
  });
}

export { grpc };
