// GET /api/v1/events: server-sent events for the dashboard. A fresh connection gets `snapshot`
// (every object, the source status, the page config); then `change` per store event (id = its
// resourceVersion) and `source` whenever the git source's status changes. A reconnect that sends
// Last-Event-ID (header, or `lastEventId` in the query for a client that built a new EventSource)
// gets only what it missed, or a new snapshot when the cache no longer holds that far back.
// EventSource cannot set headers, so the token may come as `?token=`.
import type { IncomingMessage, ServerResponse } from "node:http";
import { sendStatus } from "../hub/http/api-server.ts";
import { type Authenticator, bearerToken, type Principal } from "../hub/http/auth.ts";
import type { CachedEvent, ObjectCache } from "./object-cache.ts";

export const EVENTS_PATH = "/api/v1/events";
const HEARTBEAT_MS = 15_000;
// A browser that stops reading is dropped rather than buffered without end; it resumes later.
const MAX_BUFFERED = 32 * 1024 * 1024;

export interface EventStreamOptions {
  cache: ObjectCache;
  authenticate: Authenticator;
  /** The current source status (serialisable). */
  sourceStatus: () => unknown;
  /** Static facts for the page: the repository's web view. */
  config: Record<string, unknown>;
  /** Seconds since the epoch when a token expires, if it does; the stream ends then. */
  expiresAt?: (token: string) => number | undefined;
}

export interface EventStream {
  handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void>;
  /** Sends a `source` event to every stream when the status differs from the last one sent. */
  pollSource(): void;
  close(): void;
}

export function createEventStream(options: EventStreamOptions): EventStream {
  const clients = new Set<ServerResponse>();
  let lastSource = JSON.stringify(options.sourceStatus() ?? null);

  const send = (res: ServerResponse, text: string) => {
    res.write(text);
    if (res.writableLength > MAX_BUFFERED) res.destroy();
  };

  return {
    async handle(req, res, url) {
      if (req.method !== "GET") {
        res.setHeader("Allow", "GET");
        return sendStatus(res, 405, "MethodNotAllowed", "the event stream is read with GET");
      }
      const token = url.searchParams.get("token") ?? bearerToken(req);
      const principal: Principal | undefined = token ? await options.authenticate(token) : undefined;
      if (!token || !principal) {
        res.setHeader("WWW-Authenticate", 'Bearer realm="rlark"');
        return sendStatus(res, 401, "Unauthorized", "log in first: a token is required (?token= or Bearer)");
      }
      res.writeHead(200, {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-store",
        connection: "keep-alive",
        "x-accel-buffering": "no",
      });
      res.socket?.setNoDelay(true);
      // The newest status for the newcomer (and everyone, if it moved since the last poll).
      this.pollSource();
      send(res, "retry: 2000\n\n");
      const lastId =
        (req.headers["last-event-id"] as string | undefined) ?? url.searchParams.get("lastEventId");
      const missed = lastId ? options.cache.since(lastId) : undefined;
      if (missed) {
        send(res, `event: resume\ndata: ${JSON.stringify({ events: missed.length })}\n\n`);
        for (const event of missed) send(res, frame(event));
        send(res, `event: source\ndata: ${lastSource}\n\n`);
      } else {
        const { objects, cursor } = options.cache.snapshot();
        const body = {
          objects,
          source: JSON.parse(lastSource) as unknown,
          config: options.config,
          principal,
        };
        send(res, `id: ${cursor}\nevent: snapshot\ndata: ${JSON.stringify(body)}\n\n`);
      }
      clients.add(res);
      const unsubscribe = options.cache.subscribe((event) => send(res, frame(event)));
      const heartbeat = setInterval(() => send(res, ": ping\n\n"), HEARTBEAT_MS);
      const exp = options.expiresAt?.(token);
      // A session ends with its token: the browser reconnects, is refused, and shows the login.
      const expiry = exp ? setTimeout(() => res.end(), Math.max(0, exp * 1000 - Date.now())) : undefined;
      res.on("close", () => {
        clients.delete(res);
        unsubscribe();
        clearInterval(heartbeat);
        if (expiry) clearTimeout(expiry);
      });
    },
    pollSource() {
      const next = JSON.stringify(options.sourceStatus() ?? null);
      if (next === lastSource) return;
      lastSource = next;
      for (const res of clients) send(res, `event: source\ndata: ${next}\n\n`);
    },
    close() {
      for (const res of clients) res.end();
      clients.clear();
    },
  };
}

function frame(cached: CachedEvent): string {
  return `id: ${cached.id}\nevent: change\ndata: ${JSON.stringify(cached.event)}\n\n`;
}
