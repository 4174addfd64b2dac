// The kubelet's side of the device-plugin API for tests, built from the same vendored proto the
// plugin uses: a Registration server on `kubelet.sock` that records every RegisterRequest, and a
// DevicePlugin client that dials the socket a registration names. Registration with a real
// kubelet, its allocatable and a pod's allocation are tests/e2e/real-nodes/embodied-runtime.test.ts;
// this stand-in stays for what a real kubelet does not do on demand (wipe and recreate
// kubelet.sock mid-test, be absent at the plugin's start, record every RegisterRequest).
import { rmSync } from "node:fs";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import {
  type AllocateRequest,
  type AllocateResponse,
  type DevicePluginOptions,
  devicePluginApi,
  type ListAndWatchResponse,
  type PreferredAllocationRequest,
  type PreferredAllocationResponse,
  type PreStartContainerRequest,
  type RegisterRequest,
} from "../../operators/device/plugin/proto.ts";

export interface FakeKubelet {
  registrations: RegisterRequest[];
  socket: string;
  stop(): Promise<void>;
}

/** Serves Registration on `<dir>/kubelet.sock`, as kubelet does when it starts. */
export async function startKubeletRegistration(dir: string): Promise<FakeKubelet> {
  const socket = path.join(dir, "kubelet.sock");
  rmSync(socket, { force: true });
  const registrations: RegisterRequest[] = [];
  const server = new grpc.Server();
  server.addService(devicePluginApi().Registration.service, {
    Register: (call: grpc.ServerUnaryCall<RegisterRequest, object>, callback: grpc.sendUnaryData<object>) => {
      registrations.push(call.request);
      callback(null, {});
    },
  });
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (error) =>
      error ? reject(error) : resolve(),
    ),
  );
  return {
    registrations,
    socket,
    async stop() {
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      rmSync(socket, { force: true });
    },
  };
}

type Unary<Req, Res> = (
  request: Req,
  callback: (error: grpc.ServiceError | null, response: Res) => void,
) => void;

/** The DevicePlugin service's methods as the generated client offers them. */
export interface DevicePluginClient extends grpc.Client {
  GetDevicePluginOptions: Unary<object, DevicePluginOptions>;
  ListAndWatch(request: object): grpc.ClientReadableStream<ListAndWatchResponse>;
  GetPreferredAllocation: Unary<PreferredAllocationRequest, PreferredAllocationResponse>;
  Allocate: Unary<AllocateRequest, AllocateResponse>;
  PreStartContainer: Unary<PreStartContainerRequest, object>;
}

/** Dials a plugin's endpoint in `dir`, as kubelet does after a registration. */
export function dialPlugin(dir: string, endpoint: string): DevicePluginClient {
  const Client = devicePluginApi().DevicePlugin;
  return new Client(
    `unix://${path.join(dir, endpoint)}`,
    grpc.credentials.createInsecure(),
  ) as unknown as DevicePluginClient;
}

/** Calls a unary method as a promise. */
export function call<Req, Res>(method: Unary<Req, Res>, client: grpc.Client, request: Req): Promise<Res> {
  return new Promise((resolve, reject) =>
    method.call(client, request, (error, response) => (error ? reject(error) : resolve(response))),
  );
}
