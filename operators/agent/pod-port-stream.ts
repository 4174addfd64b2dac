// The `proxy` stream purpose: a byte stream to one port of one pod, for the hub's HTTP proxies.
// The runtime decides what "the pod's port" is and refuses a port the pod does not own.
import type { StreamHandler } from "../lib/tunnel/index.ts";
import type { Runtime } from "./runtimes/types.ts";

export const PROXY_PURPOSE = "proxy";

export function podPortStream(runtime: Runtime): StreamHandler {
  return async (meta) => {
    const name = typeof meta.name === "string" ? meta.name : "";
    const namespace = typeof meta.namespace === "string" ? meta.namespace : "";
    const port = meta.port;
    if (!name) throw new Error("a proxy stream needs the pod's name");
    if (typeof port !== "number" || !Number.isInteger(port) || port < 1 || port > 65535)
      throw new Error("a proxy stream needs a port between 1 and 65535");
    if (!runtime.access) throw new Error("this agent's runtime proxies to no pods");
    return runtime.access.connect({ namespace, name }, port);
  };
}
