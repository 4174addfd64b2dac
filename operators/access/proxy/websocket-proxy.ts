// WebSockets through the pod and task proxies: an upgrade to
// /api/v1/namespaces/<ns>/(pods|tasks)/<name>/proxy/<port>/<path>, or to a Task's TensorBoard
// route (tensorboard/tensorboard-route.ts), (authenticated by the hub's
// upgrade entrance) is authorized for `proxy`, then opened to the pod's port over one tunnel
// stream; only once the pod has accepted it is the client's upgrade completed, with the
// subprotocol the pod chose. Messages are relayed whole, bounded in size both ways, with
// backpressure; the connection is held under watch (a revocation in git cuts it) and audited
// when it ends.

import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { WebSocket, WebSocketServer } from "ws";
import { type Clock, systemClock } from "../../lib/clock.ts";
import { offeredProtocols, refuseUpgrade, type UpgradeRoute } from "../../lib/http/index.ts";
import type { Store } from "../../lib/store/index.ts";
import type { TunnelServer } from "../../lib/tunnel/index.ts";
import { PauseReasons } from "../byte-rate.ts";
import {
  type AccessCheck,
  type AccessHold,
  type AuditSink,
  type HeldAccess,
  holdNothing,
  notHeld,
  podAccessTarget,
  startAudit,
} from "../hooks.ts";
import { TENSORBOARD_ROUTE, tensorBoardTarget } from "../tensorboard/tensorboard-route.ts";
import { podCookies } from "./headers.ts";
import { firstReadyPod } from "./pod-proxy.ts";

const PATH = /^\/api\/v1\/namespaces\/([^/]+)\/(pods|tasks)\/([^/]+)\/proxy\/(\d{1,5})(\/.*)?$/;
/** Bytes queued toward a slow side before the other side stops being read. */
const HIGH_WATER = 1024 * 1024;
const CHOSEN = new WeakMap<IncomingMessage, string>();

export interface WebSocketProxyOptions {
  store: Store;
  tunnel: Pick<TunnelServer, "openStream">;
  authorize: AccessCheck;
  audit: AuditSink;
  hold?: AccessHold;
  /** Largest message either side may send. Default 16 MiB. */
  maxMessageBytes?: number;
  clock?: Clock;
}

export function webSocketProxyRoute(
  options: WebSocketProxyOptions,
): UpgradeRoute & { serves(url: URL): boolean; close(): void } {
  const clock = options.clock ?? systemClock;
  const maxPayload = options.maxMessageBytes ?? 16 * 1024 * 1024;
  const server = new WebSocketServer({
    noServer: true,
    maxPayload,
    perMessageDeflate: false,
    // The client's upgrade answer carries the subprotocol the pod chose, and no other.
    handleProtocols: (protocols, request) => {
      const chosen = CHOSEN.get(request);
      return chosen && protocols.has(chosen) ? chosen : false;
    },
  });
  const route: UpgradeRoute = async ({ principal, url, req, socket, head }) => {
    const match = PATH.exec(url.pathname);
    const board = match ? undefined : TENSORBOARD_ROUTE.exec(url.pathname);
    if (!match && !board) return false;
    let ns: string;
    let plural: string;
    let asked: string;
    let portText: string;
    let rest: string | undefined;
    let prefix: string;
    if (match) {
      [, ns, plural, asked, portText, rest] = match as unknown as [
        string,
        string,
        string,
        string,
        string,
        string?,
      ];
      prefix = `/api/v1/namespaces/${ns}/${plural}/${asked}/proxy/${portText}`;
    } else {
      const [, task, path] = board as unknown as [string, string, string?];
      const target = await tensorBoardTarget(options.store, decodeURIComponent(task));
      if ("status" in target) {
        refuseUpgrade(
          socket,
          target.status,
          target.status === 404 ? "Not Found" : "Conflict",
          target.message,
        );
        return true;
      }
      [ns, plural, asked, portText, rest, prefix] = [
        encodeURIComponent(target.namespace),
        "tasks",
        task,
        String(target.port),
        path,
        target.prefix,
      ];
    }
    const namespace = decodeURIComponent(ns);
    const port = Number(portText);
    if (port < 1 || port > 65535) {
      refuseUpgrade(socket, 400, "Bad Request", "port must be 1 to 65535");
      return true;
    }
    const pod =
      plural === "pods"
        ? await options.store.get("Pod", namespace, decodeURIComponent(asked))
        : await firstReadyPod(options.store, namespace, decodeURIComponent(asked));
    if (!pod) {
      refuseUpgrade(
        socket,
        404,
        "Not Found",
        `no ${plural === "pods" ? "pod" : "ready pod of task"} ${asked} in ${namespace}`,
      );
      return true;
    }
    const target = podAccessTarget(namespace, pod, { port });
    const audit = startAudit(options.audit, clock, principal, "proxy", target);
    let bytesIn = 0;
    let bytesOut = 0;
    const record = (result: "ok" | "denied" | "error", error?: string) =>
      audit({
        bytesIn,
        bytesOut,
        result,
        detail: { method: "GET", websocket: true },
        ...(error ? { error } : {}),
      });
    const decision = await options.authorize(principal, "proxy", target);
    if (!decision.allowed) {
      record("denied", decision.reason);
      if (decision.hidden) {
        // Another team's pod is answered as one that does not exist (docs/teams.md#visibility).
        refuseUpgrade(
          socket,
          404,
          "Not Found",
          `no ${plural === "pods" ? "pod" : "ready pod of task"} ${asked} in ${namespace}`,
        );
        return true;
      }
      refuseUpgrade(
        socket,
        403,
        "Forbidden",
        `proxy to ${namespace}/${pod.metadata.name}:${port}: ${decision.reason}`,
      );
      return true;
    }
    let channel: Duplex;
    try {
      channel = await options.tunnel.openStream(target.cluster, {
        purpose: "proxy",
        meta: {
          name: pod.metadata.name,
          namespace: (pod.spec as { namespace?: string } | undefined)?.namespace ?? "",
          port,
        },
      });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      record("error", message);
      refuseUpgrade(socket, 502, "Bad Gateway", message);
      return true;
    }
    const protocols = offeredProtocols(req);
    // The pod's own cookies go along; the hub's login cookie never does.
    const cookie = podCookies(req.headers.cookie);
    const upstream = new WebSocket(`ws://127.0.0.1:${port}${rest ?? "/"}${url.search}`, protocols, {
      createConnection: () => {
        channel.resume();
        return channel as unknown as Socket;
      },
      maxPayload,
      perMessageDeflate: false,
      headers: {
        "x-forwarded-prefix": prefix,
        ...(req.headers.host ? { "x-forwarded-host": req.headers.host } : {}),
        ...(cookie ? { cookie } : {}),
      },
    });
    upstream.once("unexpected-response", (_request, response) => {
      record("error", `the pod answered the upgrade with ${response.statusCode}`);
      refuseUpgrade(socket, 502, "Bad Gateway", `the pod answered the upgrade with ${response.statusCode}`);
      channel.destroy();
    });
    upstream.once("error", (error) => {
      if (upstream.readyState === WebSocket.CLOSED && !socket.destroyed) {
        record("error", error.message);
        refuseUpgrade(socket, 502, "Bad Gateway", error.message);
      }
    });
    upstream.once("open", () => {
      if (upstream.protocol) CHOSEN.set(req, upstream.protocol);
      server.handleUpgrade(req, socket, head, (client) => {
        void relay(client, upstream, options, principal, target, {
          count: (direction, n) => {
            if (direction === "in") bytesIn += n;
            else bytesOut += n;
          },
          done: (error) => record(error ? "error" : "ok", error),
        });
      });
    });
    return true;
  };
  return Object.assign(route, {
    serves: (url: URL) => PATH.test(url.pathname) || TENSORBOARD_ROUTE.test(url.pathname),
    close: () => {
      for (const client of server.clients) client.terminate();
      server.close();
    },
  });
}

async function relay(
  client: WebSocket,
  upstream: WebSocket,
  options: WebSocketProxyOptions,
  principal: Parameters<AccessCheck>[0],
  target: ReturnType<typeof podAccessTarget>,
  account: { count(direction: "in" | "out", n: number): void; done(error?: string): void },
): Promise<void> {
  let ended = false;
  // Until the hold is in place nothing is held back; the first messages then count against the
  // rate only through their debt.
  let held: HeldAccess = notHeld;
  const end = (error?: string) => {
    if (ended) return;
    ended = true;
    held.release();
    client.terminate();
    upstream.terminate();
    account.done(error);
  };
  const pipe = (from: WebSocket, to: WebSocket, direction: "in" | "out") => {
    // `from` waits for `to` to drain and for the user's byte rate, whichever is later.
    const holds = new PauseReasons(from);
    const full = holds.toggle();
    from.on("message", (data: Buffer, isBinary: boolean) => {
      account.count(direction, data.length);
      const wait = held.take(direction, data.length);
      if (to.readyState !== WebSocket.OPEN) return;
      to.send(data, { binary: isBinary }, () => {
        if (to.bufferedAmount < HIGH_WATER / 2) full.off();
      });
      if (to.bufferedAmount >= HIGH_WATER) full.on();
      holds.holdFor(wait);
    });
    from.on("close", (code: number, reason: Buffer) => {
      if (to.readyState === WebSocket.OPEN) {
        // 1005/1006 say "no code" and may not be sent.
        if (code === 1005 || code === 1006) to.close();
        else to.close(code, reason);
      }
      if (!ended) {
        ended = true;
        held.release();
        account.done();
      }
    });
    from.on("error", (error: Error) => end(error.message));
  };
  pipe(client, upstream, "in");
  pipe(upstream, client, "out");
  const hold = await (options.hold ?? holdNothing)(principal, "proxy", target, (reason) => end(reason));
  if (ended) hold.release();
  else held = hold;
}
