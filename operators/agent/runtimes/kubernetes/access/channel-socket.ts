// A WebSocket to one of the kube-apiserver's streaming subresources (pods/exec, pods/portforward),
// with this agent's own credentials, speaking the channel protocol: each binary message starts
// with one byte naming its channel. Written on `ws` directly rather than client-node's Exec and
// PortForward classes: those write what arrives without backpressure (a slow SSH client would
// make the agent buffer a pod's whole output), pause process.stdin on a close frame, and cannot
// half-close stdin. Here the socket stops reading while its consumer is full, and a writer waits
// while more than HIGH_WATER bytes have not left for the network.
import type { KubeConfig } from "@kubernetes/client-node";
import WebSocket from "ws";

/** Largest message the apiserver may send us: bounds what one message makes the agent hold. */
const MAX_MESSAGE = 1024 * 1024;
/** How much of a refusal's body (a Status JSON) is kept for the error message. */
const MAX_REFUSAL_BODY = 4096;
/** Bytes queued for the apiserver before a writer is told to wait. */
const HIGH_WATER = 256 * 1024;
/** An apiserver that has not answered the upgrade by then is not going to. */
const HANDSHAKE_TIMEOUT_MS = 30_000;

export interface ChannelSocket {
  /** The subprotocol the apiserver chose (v5.channel.k8s.io can half-close stdin). */
  readonly protocol: string;
  /** Sends `data` on `channel`; false when the writer should wait for drain(). */
  send(channel: number, data: Buffer): boolean;
  /** Resolves once what was sent has left the process (or the socket is gone). */
  drain(): Promise<void>;
  /** Stops delivering messages until resume() (its consumer is full). */
  pause(): void;
  resume(): void;
  close(): void;
}

export interface ChannelHandlers {
  /** One message of `channel`, without the channel byte. */
  message(channel: number, data: Buffer): void;
  /** The socket is gone; `error` when it did not close cleanly. */
  closed(error?: Error): void;
}

function refusal(what: string, status: number | undefined, body: string): Error {
  let message = body.trim();
  try {
    const parsed = JSON.parse(body) as { message?: unknown };
    if (typeof parsed.message === "string") message = parsed.message;
  } catch {
    // not a Status object: the text itself
  }
  return new Error(`${what}: the kube-apiserver answered ${status ?? "?"}${message ? `: ${message}` : ""}`);
}

/**
 * Opens the socket; resolves once the apiserver has accepted the upgrade, rejects with its
 * reason (RBAC, a pod or container that is not there) otherwise.
 */
export async function openChannelSocket(
  kubeConfig: KubeConfig,
  what: string,
  path: string,
  protocols: string[],
  handlers: ChannelHandlers,
): Promise<ChannelSocket> {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error("the kubeconfig has no current cluster");
  const options: WebSocket.ClientOptions = {
    maxPayload: MAX_MESSAGE,
    perMessageDeflate: false,
    handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
  };
  await kubeConfig.applyToHTTPSOptions(options);
  const url = `${cluster.server.replace(/^http/, "ws").replace(/\/$/, "")}${path}`;
  const ws = new WebSocket(url, protocols, options);
  // Listening before the upgrade is answered: ws delivers what came with the 101 response (the
  // kubelet's first messages, such as portforward's port prefix on each channel) on a nextTick,
  // before an await after "open" resumes; a listener added there lost them, and a forward lost
  // the first two bytes of the pod's data in their stead ("TP/1.1 200 OK").
  ws.on("message", (data: Buffer, isBinary) => {
    if (!isBinary) data = Buffer.from(data);
    if (data.length === 0) return;
    handlers.message(data.readUInt8(0), data.subarray(1));
  });
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => {
      ws.off("error", reject);
      resolve();
    });
    ws.once("error", (error) => reject(new Error(`${what}: ${error.message}`)));
    ws.once("unexpected-response", (_request, response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        if (body.length < MAX_REFUSAL_BODY) body += chunk.slice(0, MAX_REFUSAL_BODY - body.length);
      });
      response.on("end", () => reject(refusal(what, response.statusCode, body)));
      response.on("error", () => reject(refusal(what, response.statusCode, body)));
      // nothing more to read from this request: let its socket go
      response.once("end", () => ws.terminate());
    });
  });
  let closedError: Error | undefined;
  ws.on("error", (error) => {
    closedError = new Error(`${what}: ${error.message}`);
  });
  ws.on("close", (code, reason) => {
    const clean = code === 1000 || code === 1005;
    handlers.closed(closedError ?? (clean ? undefined : new Error(`${what}: closed (${code} ${reason})`)));
  });
  // bytes handed to ws.send whose callback has not come: ws reports a send done once it has
  // left for the socket, which is the backpressure a writer waits on
  let pending = 0;
  let waiters: (() => void)[] = [];
  const settle = () => {
    if (pending >= HIGH_WATER && ws.readyState === WebSocket.OPEN) return;
    const ready = waiters;
    waiters = [];
    for (const wake of ready) wake();
  };
  ws.on("close", settle);
  return {
    protocol: ws.protocol,
    send(channel, data) {
      if (ws.readyState !== WebSocket.OPEN) return true;
      const message = Buffer.allocUnsafe(data.length + 1);
      message.writeUInt8(channel, 0);
      data.copy(message, 1);
      pending += message.length;
      ws.send(message, () => {
        pending -= message.length;
        settle();
      });
      return pending < HIGH_WATER;
    },
    drain: () =>
      new Promise<void>((resolve) => {
        waiters.push(resolve);
        settle();
      }),
    pause: () => ws.pause(),
    resume: () => ws.resume(),
    close: () => {
      if (ws.readyState === WebSocket.CONNECTING || ws.readyState === WebSocket.OPEN) ws.close(1000);
    },
  };
}
