// The sidecar of a Domain pod (seed 001 §4.2), unprivileged (uid 1337): learns the pod's virtual
// IP from the nodeserver, then runs `rlark-net sidecar`, which carries every byte of the pod's
// Domain traffic (Go, splice(2); ADR 0007 measured Node hops as what bounds throughput):
//   outbound: the connections the init container's REDIRECT captured, each sent to the
//     nodeserver as CONNECT <original destination> with this pod's name;
//   inbound: :5700 takes the streams nodeservers bring (a PROXY line, then bytes) and connects to
//     the pod's own port: 127.0.0.1 first, the pod's virtual IP when nothing listens there.

import { type ChildProcess, spawn } from "node:child_process";
import { renameSync, writeFileSync } from "node:fs";
import http from "node:http";
import { type Logger, silentLogger } from "../lib/logger.ts";

export interface SidecarOptions {
  /** `<namespace>/<name>` of this pod, as the nodeserver's peers state lists it. */
  pod: string;
  nodeserverSocket: string;
  outboundPort: number;
  inboundPort: number;
  /** The rlark-net binary. */
  rlarkNet: string;
  /**
   * Where to write the pod's virtual IP once known (a file in a volume the pod's own containers
   * mount: a Ray node advertises that address, seed 000 §9). Written whole, by rename.
   */
  ipFile?: string;
  logger?: Logger;
}

export interface Sidecar {
  ip: string;
  prefixLength: number;
  domain: string;
  close(): Promise<void>;
}

async function getIp(options: SidecarOptions): Promise<{ ip: string; prefixLength: number; domain: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      // agent: false: a one-off request; a kept-alive socket would sit idle in the nodeserver.
      {
        socketPath: options.nodeserverSocket,
        path: `/get_ip?pod=${encodeURIComponent(options.pod)}`,
        agent: false,
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          if (body.length < 65536) body += c;
        });
        res.on("end", () => {
          if (res.statusCode !== 200) reject(new Error(`/get_ip: ${res.statusCode} ${body.trim()}`));
          else resolve(JSON.parse(body));
        });
      },
    );
    req.on("error", reject);
  });
}

export async function startSidecar(options: SidecarOptions): Promise<Sidecar> {
  const logger = options.logger ?? silentLogger;
  let identity: Awaited<ReturnType<typeof getIp>> | undefined;
  // The nodeserver may learn of this pod a moment after the pod starts.
  for (let attempt = 0; !identity; attempt++) {
    try {
      identity = await getIp(options);
    } catch (error) {
      if (attempt % 20 === 0)
        logger.warn("waiting for the nodeserver to know this pod", { error: (error as Error).message });
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  const helper: ChildProcess = spawn(options.rlarkNet, ["sidecar"], {
    env: {
      ...process.env,
      RLARK_OUTBOUND_PORT: String(options.outboundPort),
      RLARK_INBOUND_PORT: String(options.inboundPort),
      RLARK_NODESERVER_SOCKET: options.nodeserverSocket,
      RLARK_POD: options.pod,
      RLARK_POD_IP: identity.ip,
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  await new Promise<void>((resolve, reject) => {
    helper.once("error", reject);
    helper.once("exit", (code) => reject(new Error(`rlark-net sidecar exited (${code}) before listening`)));
    helper.stdout?.once("data", () => resolve());
  });
  helper.removeAllListeners("exit");
  helper.stdout?.resume();
  let closing = false;
  const exited = new Promise<void>((resolve) => helper.once("exit", () => resolve()));
  helper.once("exit", (code) => {
    if (!closing) logger.error("rlark-net sidecar exited", { code });
  });
  if (options.ipFile) {
    writeFileSync(`${options.ipFile}.tmp`, `${identity.ip}\n`, { mode: 0o644 });
    renameSync(`${options.ipFile}.tmp`, options.ipFile);
  }
  logger.info("sidecar ready", { ...identity, pod: options.pod });

  return {
    ...identity,
    async close() {
      closing = true;
      helper.kill();
      await exited;
    },
  };
}
