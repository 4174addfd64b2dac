// The sidecar of a Domain pod (seed 001 §4.2), unprivileged (uid 1337):
//   outbound: starts `rlark-net outbound`, which takes the connections the init container's
//     REDIRECT captured and hands each one over a unix socket in a private directory with a PROXY line naming its original destination; the sidecar asks the
//     nodeserver for a stream to it (CONNECT over the nodeserver's unix socket) and joins the two.
//   inbound: :5700 takes the streams nodeservers bring (a PROXY line, then bytes) and connects to
//     the pod's own port: 127.0.0.1 first, the pod's virtual IP when nothing listens there.

import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import { type Logger, silentLogger } from "../lib/logger.ts";
import { REASON_HEADER, splice } from "../lib/relay/index.ts";
import { POD_HEADER } from "./nodeserver.ts";
import { readProxyHeader } from "./proxy-header.ts";

export interface SidecarOptions {
  /** `<namespace>/<name>` of this pod, as the nodeserver's peers state lists it. */
  pod: string;
  nodeserverSocket: string;
  outboundPort: number;
  inboundPort: number;
  /** The rlark-net binary. */
  rlarkNet: string;
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
      { socketPath: options.nodeserverSocket, path: `/get_ip?pod=${encodeURIComponent(options.pod)}` },
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

/** Asks the nodeserver for a stream to `target`; resolves with the joined socket. */
function connectVia(options: SidecarOptions, target: string): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      socketPath: options.nodeserverSocket,
      method: "CONNECT",
      path: target,
      headers: { [POD_HEADER]: options.pod },
    });
    req.on("connect", (res, socket, head) => {
      if (res.statusCode !== 200) {
        socket.destroy();
        reject(new Error(`${target}: ${res.statusCode} ${res.headers[REASON_HEADER] ?? ""}`));
        return;
      }
      if (head.length > 0) socket.unshift(head);
      resolve(socket);
    });
    req.on("response", (res) => {
      res.resume();
      reject(new Error(`${target}: ${res.statusCode} ${res.headers[REASON_HEADER] ?? ""}`));
    });
    req.on("error", reject);
    req.end();
  });
}

function dialLocal(port: number, ip: string): Promise<net.Socket> {
  const attempt = (host: string) =>
    new Promise<net.Socket>((resolve, reject) => {
      const s = net.connect({ host, port, noDelay: true });
      s.once("connect", () => {
        s.off("error", reject);
        resolve(s);
      });
      s.once("error", reject);
    });
  return attempt("127.0.0.1").catch((error: NodeJS.ErrnoException) => {
    if (error.code !== "ECONNREFUSED") throw error;
    return attempt(ip);
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
  const { ip } = identity;
  const sockets = new Set<Duplex>();
  const track = (s: Duplex) => {
    sockets.add(s);
    s.on("error", () => {});
    s.once("close", () => sockets.delete(s));
  };

  const inbound = net.createServer({ noDelay: true }, async (socket) => {
    track(socket);
    try {
      const header = await readProxyHeader(socket);
      const app = await dialLocal(header.dstPort, ip);
      track(app);
      splice(socket, app);
    } catch (error) {
      logger.warn("inbound connection dropped", { error: (error as Error).message });
      socket.destroy();
    }
  });
  await new Promise<void>((resolve, reject) => {
    inbound.once("error", reject);
    inbound.listen(options.inboundPort, "0.0.0.0", () => resolve());
  });

  // A private directory (0700, this uid) holds the hand-off socket: only rlark-net, which runs as
  // the same user, can write PROXY lines into it.
  const handoffDir = mkdtempSync(join(tmpdir(), "rlark-sidecar-"));
  const handoff = join(handoffDir, "outbound.sock");
  const outbound = net.createServer(async (socket) => {
    track(socket);
    try {
      const header = await readProxyHeader(socket);
      const upstream = await connectVia(options, `${header.dst}:${header.dstPort}`);
      track(upstream);
      splice(socket, upstream);
    } catch (error) {
      logger.warn("outbound connection refused", { error: (error as Error).message });
      socket.destroy();
    }
  });
  await new Promise<void>((resolve, reject) => {
    outbound.once("error", reject);
    outbound.listen(handoff, () => resolve());
  });

  const helper: ChildProcess = spawn(options.rlarkNet, ["outbound"], {
    env: {
      ...process.env,
      RLARK_OUTBOUND_PORT: String(options.outboundPort),
      RLARK_SIDECAR_SOCKET: handoff,
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  await new Promise<void>((resolve, reject) => {
    helper.once("error", reject);
    helper.once("exit", (code) => reject(new Error(`rlark-net outbound exited (${code}) before listening`)));
    helper.stdout?.once("data", () => resolve());
  });
  helper.removeAllListeners("exit");
  helper.stdout?.resume();
  let closing = false;
  const exited = new Promise<void>((resolve) => helper.once("exit", () => resolve()));
  helper.once("exit", (code) => {
    if (!closing) logger.error("rlark-net outbound exited", { code });
  });
  logger.info("sidecar ready", { ...identity, pod: options.pod });

  return {
    ...identity,
    async close() {
      closing = true;
      helper.kill();
      await exited;
      for (const s of sockets) s.destroy();
      await Promise.all([inbound, outbound].map((s) => new Promise((r) => s.close(() => r(undefined)))));
      rmSync(handoffDir, { recursive: true, force: true });
    },
  };
}
