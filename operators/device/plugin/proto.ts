// The kubelet device-plugin API, loaded at run time from the vendored api.proto: the wire format is
// the proto's, never a hand-written copy. The interfaces below only name, for TypeScript, the
// fields of the messages this code reads and writes (proto field names kept: `keepCase`).
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";

/** API version the plugin registers with (kubelet's `SupportedVersions`). */
export const API_VERSION = "v1beta1";
export const HEALTHY = "Healthy";
export const UNHEALTHY = "Unhealthy";

const PROTO = path.join(import.meta.dirname, "api.proto");

export interface DevicePluginOptions {
  pre_start_required: boolean;
  get_preferred_allocation_available: boolean;
}
export interface RegisterRequest {
  version: string;
  endpoint: string;
  resource_name: string;
  options?: DevicePluginOptions;
}
export interface Device {
  ID: string;
  health: string;
}
export interface ListAndWatchResponse {
  devices: Device[];
}
export interface ContainerPreferredAllocationRequest {
  available_deviceIDs: string[];
  must_include_deviceIDs: string[];
  allocation_size: number;
}
export interface PreferredAllocationRequest {
  container_requests: ContainerPreferredAllocationRequest[];
}
export interface PreferredAllocationResponse {
  container_responses: { deviceIDs: string[] }[];
}
export interface AllocateRequest {
  container_requests: { devices_ids: string[] }[];
}
export interface Mount {
  container_path: string;
  host_path: string;
  read_only: boolean;
}
export interface DeviceSpec {
  container_path: string;
  host_path: string;
  permissions: string;
}
export interface ContainerAllocateResponse {
  envs: Record<string, string>;
  mounts: Mount[];
  devices: DeviceSpec[];
  annotations: Record<string, string>;
}
export interface AllocateResponse {
  container_responses: ContainerAllocateResponse[];
}
export interface PreStartContainerRequest {
  devices_ids: string[];
}

type Empty = Record<string, never>;

/** The two services' definitions, for a server (`addService`) or a client constructor. */
export interface DevicePluginApi {
  Registration: grpc.ServiceClientConstructor;
  DevicePlugin: grpc.ServiceClientConstructor;
}

let loaded: DevicePluginApi | undefined;

export function devicePluginApi(): DevicePluginApi {
  if (loaded) return loaded;
  const definition = loadSync(PROTO, { keepCase: true, longs: Number, enums: String, defaults: true });
  const pkg = grpc.loadPackageDefinition(definition).v1beta1;
  const registration = (pkg as grpc.GrpcObject | undefined)?.Registration;
  const plugin = (pkg as grpc.GrpcObject | undefined)?.DevicePlugin;
  if (typeof registration !== "function" || typeof plugin !== "function")
    throw new Error(`${PROTO} does not define v1beta1.Registration and v1beta1.DevicePlugin`);
  loaded = {
    Registration: registration as grpc.ServiceClientConstructor,
    DevicePlugin: plugin as grpc.ServiceClientConstructor,
  };
  return loaded;
}

/** The handlers of the DevicePlugin service, typed by the messages above. */
export interface DevicePluginHandlers extends grpc.UntypedServiceImplementation {
  GetDevicePluginOptions: grpc.handleUnaryCall<Empty, DevicePluginOptions>;
  ListAndWatch: grpc.handleServerStreamingCall<Empty, ListAndWatchResponse>;
  GetPreferredAllocation: grpc.handleUnaryCall<PreferredAllocationRequest, PreferredAllocationResponse>;
  Allocate: grpc.handleUnaryCall<AllocateRequest, AllocateResponse>;
  PreStartContainer: grpc.handleUnaryCall<PreStartContainerRequest, Empty>;
}
