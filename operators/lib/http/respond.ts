import type { ServerResponse } from "node:http";

export function sendJson(res: ServerResponse, code: number, body: unknown) {
  res.writeHead(code, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" });
  res.end(JSON.stringify(body));
}

/** Errors in the shape Kubernetes clients know: a Status object. */
export function sendStatus(res: ServerResponse, code: number, reason: string, message: string) {
  sendJson(res, code, { apiVersion: "v1", kind: "Status", status: "Failure", reason, message, code });
}
