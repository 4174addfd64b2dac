// The device plugin process: serves the DevicePlugin service on its socket in kubelet's
// device-plugin directory, registers `rlinf.io/device` with kubelet, and keeps both true as things
// change: devices appear and go (watched directories plus a periodic rescan, since a directory
// may not exist yet), kubelet restarts (it recreates kubelet.sock and wipes our socket: we serve
// again and re-register), the robot config is edited (a bad edit keeps the last good list and
// reports DEGRADED with file:line). Every change reaches kubelet as a full list on ListAndWatch.
import { existsSync, type FSWatcher, rmSync, statSync, watch } from "node:fs";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import { type Clock, systemClock, type TimerId } from "../../lib/clock.ts";
import type { Logger } from "../../lib/logger.ts";
import type { Capability } from "../../lib/tunnel/index.ts";
import { DEVICE_PLUGIN_SOCKET, DEVICE_RESOURCE } from "../paths.ts";
import { allocateContainer, type HostLayout, preferredAllocation, UnknownDeviceError } from "./allocate.ts";
import { type DiscoveredDevice, discoverDevices } from "./discovery.ts";
import {
  API_VERSION,
  type DevicePluginHandlers,
  devicePluginApi,
  HEALTHY,
  type ListAndWatchResponse,
  type RegisterRequest,
} from "./proto.ts";

export interface DevicePluginOptions extends HostLayout {
  /** kubelet's device-plugin directory: kubelet.sock is there and our socket goes there. */
  pluginDir: string;
  /** Where V4L2 nodes appear. */
  devDir: string;
  robotConfig: string;
  resourceName?: string;
  /** How often to rescan and re-check kubelet even when no watch fired. Default 5 s. */
  rescanMs?: number;
  /** Called with the plugin's capability whenever it changes (the caller writes the status file). */
  onCapability?: (capability: Capability) => void;
  logger: Logger;
  clock?: Clock;
}

const REGISTER_DEADLINE_MS = 10_000;
/** A burst of file events (a config editor's write, rename, chmod) becomes one rescan. */
const SETTLE_MS = 50;

export class DevicePlugin {
  readonly #options: DevicePluginOptions;
  readonly #clock: Clock;
  readonly #socket: string;
  readonly #kubeletSocket: string;
  #devices: DiscoveredDevice[] = [];
  #server: grpc.Server | undefined;
  readonly #streams = new Set<grpc.ServerWritableStream<unknown, ListAndWatchResponse>>();
  readonly #watchers: FSWatcher[] = [];
  #registeredKubelet: number | undefined;
  #registerError: string | undefined;
  #configError: string | undefined;
  #serveError: string | undefined;
  #lastCapability = "";
  #settle: TimerId | undefined;
  #tick: TimerId | undefined;
  #busy: Promise<void> = Promise.resolve();
  #stopped = false;

  private constructor(options: DevicePluginOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#socket = path.join(options.pluginDir, DEVICE_PLUGIN_SOCKET);
    this.#kubeletSocket = path.join(options.pluginDir, "kubelet.sock");
  }

  /** Scans, serves and registers; throws only when the first scan fails (a bad robot config). */
  static async start(options: DevicePluginOptions): Promise<DevicePlugin> {
    const plugin = new DevicePlugin(options);
    plugin.#devices = discoverDevices(options);
    plugin.#report();
    plugin.#watchAll();
    try {
      await plugin.#reconcile();
    } catch (error) {
      await plugin.stop();
      throw error;
    }
    plugin.#scheduleTick();
    return plugin;
  }

  devices(): DiscoveredDevice[] {
    return this.#devices;
  }

  capability(): Capability {
    const healthy = this.#devices.filter((d) => d.health === HEALTHY).length;
    const counts = `${healthy}/${this.#devices.length} devices healthy`;
    if (this.#stopped) return { name: "device-plugin", process: "STOPPED", health: "STOPPED" };
    if (this.#serveError)
      return { name: "device-plugin", process: "BACKOFF", health: "DEGRADED", message: this.#serveError };
    if (!this.#server) return { name: "device-plugin", process: "STARTING", health: "STARTING" };
    const problem = this.#registerError ?? this.#configError;
    if (problem)
      return {
        name: "device-plugin",
        process: "RUNNING",
        health: "DEGRADED",
        message: `${problem}; ${counts}`,
      };
    if (this.#registeredKubelet === undefined)
      return {
        name: "device-plugin",
        process: "RUNNING",
        health: "STARTING",
        message: `waiting for ${this.#kubeletSocket}; ${counts}`,
      };
    return { name: "device-plugin", process: "RUNNING", health: "READY", message: counts };
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    for (const watcher of this.#watchers) watcher.close();
    if (this.#settle) this.#clock.clearTimeout(this.#settle);
    if (this.#tick) this.#clock.clearTimeout(this.#tick);
    await this.#busy;
    for (const stream of this.#streams) stream.end();
    this.#streams.clear();
    await this.#shutdownServer();
    rmSync(this.#socket, { force: true });
    this.#report();
  }

  #watchAll(): void {
    const dirs = new Set([
      this.#options.pluginDir,
      this.#options.devDir,
      path.dirname(this.#options.robotConfig),
      this.#options.socketDir,
    ]);
    for (const dir of dirs) {
      // A directory that does not exist yet is covered by the periodic rescan.
      if (!existsSync(dir)) continue;
      try {
        const watcher = watch(dir, () => this.#scheduleSettle());
        watcher.on("error", (error) =>
          this.#options.logger.warn("watch failed", { dir, error: error.message }),
        );
        this.#watchers.push(watcher);
      } catch (error) {
        this.#options.logger.warn("cannot watch", { dir, error: (error as Error).message });
      }
    }
  }

  #scheduleSettle(): void {
    if (this.#settle || this.#stopped) return;
    this.#settle = this.#clock.setTimeout(() => {
      this.#settle = undefined;
      this.#reconcile().catch(() => undefined);
    }, SETTLE_MS);
  }

  #scheduleTick(): void {
    if (this.#stopped) return;
    this.#tick = this.#clock.setTimeout(async () => {
      await this.#reconcile().catch(() => undefined);
      this.#scheduleTick();
    }, this.#options.rescanMs ?? 5_000);
  }

  /** One pass, never two at once: rescan, serve if our socket is gone, register with a new kubelet. */
  #reconcile(): Promise<void> {
    const pass = this.#busy.then(async () => {
      if (this.#stopped) return;
      this.#rescan();
      if (!this.#server || !existsSync(this.#socket)) await this.#serve();
      this.#serveError = undefined;
      await this.#registerIfNeeded();
      this.#report();
    });
    // A failed pass (the socket cannot be bound) is reported and retried by the next one.
    this.#busy = pass.catch((error: Error) => {
      this.#serveError = `cannot serve ${this.#socket}: ${error.message}`;
      this.#options.logger.error("cannot serve the device plugin API; retrying", { error: error.message });
      this.#report();
    });
    return pass;
  }

  #rescan(): void {
    let devices: DiscoveredDevice[];
    try {
      devices = discoverDevices(this.#options);
      this.#configError = undefined;
    } catch (error) {
      // Keep serving the last good list: a typo in the config must not take robots away.
      const message = (error as Error).message;
      if (message !== this.#configError)
        this.#options.logger.error("discovery failed; keeping the last good device list", { error: message });
      this.#configError = message;
      return;
    }
    if (JSON.stringify(devices) === JSON.stringify(this.#devices)) return;
    this.#devices = devices;
    this.#options.logger.info("devices changed", { devices: devices.map((d) => `${d.id}:${d.health}`) });
    for (const stream of this.#streams) stream.write(this.#listResponse());
  }

  #listResponse(): ListAndWatchResponse {
    return { devices: this.#devices.map((d) => ({ ID: d.id, health: d.health })) };
  }

  async #serve(): Promise<void> {
    await this.#shutdownServer();
    // kubelet wipes the directory when it restarts; a leftover socket of ours would refuse bind.
    rmSync(this.#socket, { force: true });
    const server = new grpc.Server();
    server.addService(devicePluginApi().DevicePlugin.service, this.#handlers());
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`unix://${this.#socket}`, grpc.ServerCredentials.createInsecure(), (error) =>
        error ? reject(error) : resolve(),
      ),
    );
    this.#server = server;
    // A new socket is a new endpoint: kubelet must hear of it even if it did not restart.
    this.#registeredKubelet = undefined;
    this.#options.logger.info("serving the device plugin API", { socket: this.#socket });
  }

  async #shutdownServer(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    this.#server = undefined;
    for (const stream of this.#streams) stream.end();
    this.#streams.clear();
    await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
  }

  async #registerIfNeeded(): Promise<void> {
    let inode: number;
    try {
      inode = statSync(this.#kubeletSocket).ino;
    } catch {
      this.#registeredKubelet = undefined;
      return;
    }
    if (inode === this.#registeredKubelet) return;
    try {
      await this.#register();
      this.#registeredKubelet = inode;
      this.#registerError = undefined;
      this.#options.logger.info("registered with kubelet", {
        resource: this.#resource(),
        kubelet: this.#kubeletSocket,
      });
    } catch (error) {
      this.#registerError = `registration with ${this.#kubeletSocket} failed: ${(error as Error).message}`;
      this.#options.logger.error("registration failed; retrying", { error: (error as Error).message });
    }
  }

  #resource(): string {
    return this.#options.resourceName ?? DEVICE_RESOURCE;
  }

  #register(): Promise<void> {
    const api = devicePluginApi();
    const method = api.Registration.service.Register;
    if (!method) throw new Error("the proto has no Registration.Register");
    const client = new grpc.Client(`unix://${this.#kubeletSocket}`, grpc.credentials.createInsecure());
    const request: RegisterRequest = {
      version: API_VERSION,
      endpoint: DEVICE_PLUGIN_SOCKET,
      resource_name: this.#resource(),
      options: { pre_start_required: true, get_preferred_allocation_available: true },
    };
    return new Promise<void>((resolve, reject) => {
      client.makeUnaryRequest(
        method.path,
        method.requestSerialize,
        method.responseDeserialize,
        request,
        { deadline: Date.now() + REGISTER_DEADLINE_MS },
        (error) => {
          client.close();
          if (error) reject(error);
          else resolve();
        },
      );
    });
  }

  #report(): void {
    const capability = this.capability();
    const key = JSON.stringify(capability);
    if (key === this.#lastCapability) return;
    this.#lastCapability = key;
    this.#options.onCapability?.(capability);
  }

  #byId(): Map<string, DiscoveredDevice> {
    return new Map(this.#devices.map((d) => [d.id, d]));
  }

  #handlers(): DevicePluginHandlers {
    const host: HostLayout = { socketDir: this.#options.socketDir, cliDir: this.#options.cliDir };
    return {
      GetDevicePluginOptions: (_call, callback) =>
        callback(null, { pre_start_required: true, get_preferred_allocation_available: true }),
      ListAndWatch: (call) => {
        this.#streams.add(call);
        const drop = () => this.#streams.delete(call);
        call.on("cancelled", drop);
        call.on("close", drop);
        call.on("error", drop);
        call.write(this.#listResponse());
      },
      GetPreferredAllocation: (call, callback) => {
        const devices = this.#byId();
        callback(null, {
          container_responses: call.request.container_requests.map((r) => ({
            deviceIDs: preferredAllocation(
              r.available_deviceIDs,
              r.must_include_deviceIDs,
              r.allocation_size,
              devices,
            ),
          })),
        });
      },
      Allocate: (call, callback) => {
        const devices = this.#byId();
        try {
          callback(null, {
            container_responses: call.request.container_requests.map((r) =>
              allocateContainer(r.devices_ids, devices, host),
            ),
          });
        } catch (error) {
          if (!(error instanceof UnknownDeviceError)) throw error;
          callback({ code: grpc.status.INVALID_ARGUMENT, details: error.message });
        }
      },
      // Just before the container starts: refuse devices that went away or turned unhealthy since
      // Allocate, so the container fails visibly instead of starting without its arm or camera.
      PreStartContainer: (call, callback) => {
        const devices = this.#byId();
        const bad = call.request.devices_ids.filter((id) => devices.get(id)?.health !== HEALTHY);
        if (bad.length > 0)
          callback({
            code: grpc.status.FAILED_PRECONDITION,
            details: `devices not healthy on this node: ${bad.join(", ")}`,
          });
        else callback(null, {});
      },
    };
  }
}
