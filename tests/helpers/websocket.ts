// A WebSocket opened with the `ws` client, for tests of who may open one through the hub.
import WebSocket from "ws";

/** The socket when it opened; the HTTP status and body when the server refused the upgrade. */
export interface WebSocketAttempt {
  ws?: WebSocket;
  status?: number;
  body?: string;
}

/** Resolves on open or refusal; a socket error (nothing answered) resolves with nothing. */
export function openWebSocket(
  url: string,
  protocols: string[],
  headers: Record<string, string>,
): Promise<WebSocketAttempt> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, protocols, { headers });
    ws.once("open", () => resolve({ ws }));
    ws.once("unexpected-response", (_req, res) => {
      let body = "";
      res.on("data", (d: Buffer) => (body += d.toString()));
      res.on("end", () => resolve({ status: res.statusCode, body }));
    });
    ws.once("error", () => resolve({}));
  });
}
