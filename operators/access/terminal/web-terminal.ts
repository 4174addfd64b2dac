// The dashboard's web terminal (seed 000 §17): a WebSocket at
// /api/v1/namespaces/<agent-ns>/pods/<pod>/terminal runs the pod's login shell on a pty through
// the SAME session service as the SSH bastion (verb `shell`, AccessPolicies from git, the per-user
// limit, the idle timeout, revocation, one audit line with via "web"). Everything is decided
// before the upgrade completes: a refusal is an HTTP answer, never an open socket.
//
// Wire protocol (subprotocol rlark.terminal.v1):
//   client -> hub  binary: the program's input;  text: {"type":"resize","cols":N,"rows":N}
//   hub -> client  binary: the program's output; text: {"type":"exit","code":N} or
//                  {"type":"exit","signal":"NAME"} (the program ended), or
//                  {"type":"error","message":"…"} (the session broke: revoked, idle, the agent
//                  gone), each followed by the close.

import { WebSocket, WebSocketServer } from "ws";
import type { ExitStatus } from "../../lib/access-stream/index.ts";
import { offeredProtocols, refuseUpgrade, type UpgradeRoute } from "../../lib/http/index.ts";
import type { AccessSessions, SessionControl } from "../sessions.ts";

export const TERMINAL_PROTOCOL = "rlark.terminal.v1";
const PATH = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/terminal$/;
/** The two subjects of the hub's admin token (the API's, a dashboard session's): not people in git. */
const ADMIN_TOKEN_SUBJECTS = new Set(["admin-token", "rlark:admin-token"]);
const MAX_SIZE = 1000;

export interface WebTerminalOptions {
  sessions: AccessSessions;
  /** Largest message a client may send (input or a resize). Default 64 KiB. */
  maxMessageBytes?: number;
  /** Output the hub holds for a slow browser before it stops reading the program. Default 1 MiB. */
  maxBufferedBytes?: number;
}

/** Window sizes from the query or a resize message: whole numbers 1 to 1000. */
function size(value: unknown, fallback: number): number | undefined {
  if (value === undefined || value === null) return fallback;
  const n = Number(value);
  return Number.isInteger(n) && n >= 1 && n <= MAX_SIZE ? n : undefined;
}

/** The reason of a close frame is at most 123 bytes. */
function closeReason(text: string): string {
  let reason = text;
  while (Buffer.byteLength(reason) > 123) reason = reason.slice(0, -1);
  return reason;
}

export function webTerminalRoute(options: WebTerminalOptions): UpgradeRoute & { close(): void } {
  const highWater = options.maxBufferedBytes ?? 1024 * 1024;
  const server = new WebSocketServer({
    noServer: true,
    maxPayload: options.maxMessageBytes ?? 64 * 1024,
    perMessageDeflate: false,
    // The token subprotocol is never chosen: the answer would echo it.
    handleProtocols: (protocols) => (protocols.has(TERMINAL_PROTOCOL) ? TERMINAL_PROTOCOL : false),
  });
  const route: UpgradeRoute = async ({ principal, url, req, socket, head }) => {
    const match = PATH.exec(url.pathname);
    if (!match) return false;
    const [namespace, name] = [
      decodeURIComponent(match[1] as string),
      decodeURIComponent(match[2] as string),
    ];
    if (!offeredProtocols(req).includes(TERMINAL_PROTOCOL)) {
      refuseUpgrade(socket, 400, "Bad Request", `ask for the ${TERMINAL_PROTOCOL} subprotocol`);
      return true;
    }
    const cols = size(url.searchParams.get("cols"), 80);
    const rows = size(url.searchParams.get("rows"), 24);
    if (cols === undefined || rows === undefined) {
      refuseUpgrade(socket, 400, "Bad Request", `cols and rows must be whole numbers from 1 to ${MAX_SIZE}`);
      return true;
    }
    if (ADMIN_TOKEN_SUBJECTS.has(principal.subject)) {
      refuseUpgrade(socket, 403, "Forbidden", "a terminal is for a User in git: log in with a user name");
      return true;
    }
    const pod = await options.sessions.access.mirroredPod(namespace, name);
    if (!pod) {
      refuseUpgrade(socket, 404, "Not Found", `pods "${name}" not found in ${namespace}`);
      return true;
    }
    const who = { user: principal.subject, ip: req.socket.remoteAddress ?? "", via: "web" as const };
    const admission = await options.sessions.admit(who, "shell", pod);
    if ("denied" in admission) {
      refuseUpgrade(socket, 403, "Forbidden", admission.denied);
      return true;
    }
    server.handleUpgrade(req, socket, head, (ws) => {
      void serve(
        ws,
        options.sessions,
        { ...who, verb: "shell", ...admission, pty: { term: "xterm-256color", cols, rows } },
        highWater,
      );
    });
    return true;
  };
  return Object.assign(route, {
    close: () => {
      for (const client of server.clients) client.terminate();
      server.close();
    },
  });
}

async function serve(
  ws: WebSocket,
  sessions: AccessSessions,
  request: Parameters<AccessSessions["runSession"]>[0],
  highWater: number,
): Promise<void> {
  // Input that arrives before the agent's stream is open waits in the socket, not in memory.
  ws.pause();
  let paused = false;
  let gone = false;
  let control: SessionControl | undefined;
  const leave = () => {
    gone = true;
    control?.close();
  };
  ws.on("close", leave);
  ws.on("error", leave);
  const finish = (message: Record<string, unknown>, code: number, reason: string) => {
    if (ws.readyState !== WebSocket.OPEN) return;
    ws.send(JSON.stringify(message));
    ws.close(code, closeReason(reason));
  };
  control = await sessions.runSession(request, {
    output: (_kind, data) => {
      if (ws.readyState !== WebSocket.OPEN) return true;
      ws.send(data, { binary: true }, () => {
        if (paused && ws.bufferedAmount < highWater / 2) {
          paused = false;
          control?.resume();
        }
      });
      paused = ws.bufferedAmount >= highWater;
      return !paused;
    },
    exit: (status: ExitStatus) =>
      finish(
        { type: "exit", ...(status.signal ? { signal: status.signal } : { code: status.code ?? 255 }) },
        1000,
        "the program exited",
      ),
    broken: (error) => finish({ type: "error", message: error }, 1011, error),
  });
  if (!control) return;
  const session = control;
  if (gone) return session.close();
  ws.on("message", (data: Buffer, isBinary: boolean) => {
    if (isBinary) {
      if (!session.input(data)) {
        ws.pause();
        session.drained(() => ws.resume());
      }
      return;
    }
    let message: { type?: unknown; cols?: unknown; rows?: unknown };
    try {
      message = JSON.parse(data.toString("utf8")) as typeof message;
    } catch {
      return ws.close(1008, "a text message is JSON");
    }
    const cols = size(message.cols, 0);
    const rows = size(message.rows, 0);
    if (message.type !== "resize" || !cols || !rows)
      return ws.close(1008, `expected {"type":"resize","cols":1-${MAX_SIZE},"rows":1-${MAX_SIZE}}`);
    session.resize(cols, rows);
  });
  ws.resume();
}
