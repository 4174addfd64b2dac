// GET /api/v1/events[?jobs=a,b,…]: server-sent events for the dashboard. Jobs and Tasks
// (PER_JOB_KINDS, whose number grows with the Jobs) are sent only for the Jobs the stream names in
// `jobs` (the page on screen: a page of the Jobs list, one Job, a Workflow's Jobs); of all Jobs it
// gets a `summary` (counts by phase, each team's quota held and Jobs waiting) instead. A fresh
// connection gets `snapshot` (every other object, the named Jobs' objects, the summary, the source
// status, the page config); then `change` per store event it shows (id = its resourceVersion), a
// `summary` when a Job it may see changed (its id says how far the stream has been brought, like a
// Kubernetes watch bookmark) and `source` whenever the git source's status changes. A reconnect
// that sends Last-Event-ID (header, or `lastEventId` in the query for a client that built a new
// EventSource) gets only what it missed of the other kinds, the named Jobs' objects as they are now
// (`selection`: a page that shows other Jobs reconnects with their names and resumes, without a
// snapshot), and the summary; or a new snapshot when the cache no longer holds that far back.
// EventSource cannot set headers, so the token may come as `?token=`.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Job, Team } from "../api/index.ts";
import { type Clock, every, systemClock, type TimerId } from "../lib/clock.ts";
import { type Authenticator, bearerToken, type Principal, sendStatus } from "../lib/http/index.ts";
import type { KubeObject } from "../lib/kube-object.ts";
import { JobSummary } from "./job-summary.ts";
import { type CachedEvent, jobOf, type ObjectCache, PER_JOB_KINDS } from "./object-cache.ts";

export const EVENTS_PATH = "/api/v1/events";
const HEARTBEAT_MS = 15_000;
/** Jobs one stream may name: a page of the Jobs list is 50, a Job page one. */
export const MAX_STREAM_JOBS = 200;
const NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

export interface EventStreamLimits {
  /** Open streams per principal (its subject); one more is answered 429. Default 8. */
  perPrincipal?: number;
  /** Open streams in all; one more is answered 503. Default 256. */
  total?: number;
  /**
   * Output a client may leave unread before it is dropped (it reconnects and resumes from its last
   * event); default 1 MiB. The first snapshot may exceed it once, until it has been taken.
   */
  maxPendingBytes?: number;
  /**
   * Changes held for a stream's next batch; one more and the client is dropped (it resumes from its
   * last event, or gets a snapshot). Default 10,000: more distinct objects than that changing within
   * one batch window means the client is better served by a snapshot.
   */
  maxBatchedChanges?: number;
}

export interface EventStreamOptions {
  cache: ObjectCache;
  authenticate: Authenticator;
  /** The current source status (serialisable). */
  sourceStatus: () => unknown;
  /** Static facts for the page: the repository's web view. */
  config: Record<string, unknown>;
  /** Seconds since the epoch when a token expires, if it does; the stream ends then. */
  expiresAt?: (token: string) => number | undefined;
  limits?: EventStreamLimits;
  /** Drives heartbeats, token expiry and the batches; tests pass a FakeClock. */
  clock?: Clock;
  /**
   * Changes are written to each stream in batches, at most one write per this many ms (default
   * 100): a burst of status updates costs one write per client, and of several changes to one
   * object within a batch only the newest is sent (it carries the whole object).
   */
  batchMs?: number;
  /**
   * What a principal may see (docs/teams.md#visibility): a maker of filters over the objects as
   * held now, called again after each Job change (a Job's team and Domain decide what else shows).
   * Absent, or undefined for the principal (an admin): every object.
   */
  scope?: (principal: Principal) => Promise<(() => ObjectFilter) | undefined>;
}

export type ObjectFilter = (object: KubeObject) => boolean;

export interface EventStream {
  handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void>;
  /** Sends a `source` event to every stream when the status differs from the last one sent. */
  pollSource(): void;
  /**
   * Authenticates every open stream's token again and ends those it no longer admits, or admits
   * with another role (a User deleted or demoted in git): the browser reconnects and is refused.
   */
  recheck(): Promise<void>;
  /**
   * Ends every stream that sees less than everything (a Team or AccessPolicy changed in git):
   * the browser reconnects and gets a snapshot under the new scope.
   */
  rescope(): void;
  close(): void;
}

interface Client {
  res: ServerResponse;
  token: string;
  principal: Principal;
  scoped: boolean;
  /** Unread bytes allowed before the client is dropped. */
  allowance: number;
  /** The next batch: the newest change per object, in the order of the log. */
  batch: Map<string, CachedEvent>;
  flush: TimerId | undefined;
  /** Its summary of the Jobs it may see (the shared one for a stream that sees everything). */
  summary: JobSummary;
  /** A Job it may see changed since the last summary it was sent. */
  summaryDue: boolean;
  /** The id of the newest change the stream has been through (sent with the summary). */
  seen: string;
}

const RETRY_AFTER_SECONDS = "10";

export function createEventStream(options: EventStreamOptions): EventStream {
  const perPrincipal = options.limits?.perPrincipal ?? 8;
  const total = options.limits?.total ?? 256;
  const maxPending = options.limits?.maxPendingBytes ?? 1024 * 1024;
  const maxBatched = options.limits?.maxBatchedChanges ?? 10_000;
  const clock = options.clock ?? systemClock;
  const batchMs = options.batchMs ?? 100;
  const clients = new Set<Client>();
  const perSubject = new Map<string, number>();
  let lastSource = JSON.stringify(options.sourceStatus() ?? null);
  // One summary of all Jobs for every stream that sees everything, kept as the cache changes.
  const { cache } = options;
  const everything = new JobSummary(cache.cursor(), cache.objectsOf("Job") as Job[]);
  const stopSummary = cache.subscribe((cached) => {
    if (cached.event.object.kind !== "Job") return;
    everything.revision = cached.id;
    if (cached.previous) everything.remove(cached.previous as Job);
    if (cached.event.type !== "DELETED") everything.add(cached.event.object as Job);
  });
  const teams = () => cache.objectsOf("Team") as Team[];
  const summaryFrame = (client: Client) =>
    `id: ${client.seen}\nevent: summary\ndata: ${client.summary.json(teams())}\n\n`;

  // A browser that stops reading is dropped rather than buffered: its output is not kept.
  const send = (client: Client, text: string) => {
    // Ended at the token's expiry, a heartbeat due at the same moment must not write after it.
    if (client.res.destroyed || client.res.writableEnded) return;
    client.res.write(text);
    if (client.res.writableLength > client.allowance) client.res.destroy();
  };

  const flush = (client: Client) => {
    client.flush = undefined;
    let frames = [...client.batch.values()].map(frame).join("");
    client.batch.clear();
    if (client.summaryDue) frames += summaryFrame(client);
    client.summaryDue = false;
    if (frames) send(client, frames);
  };
  const enqueue = (client: Client, event: CachedEvent) => {
    const { object } = event.event;
    const key = `${object.kind}/${object.metadata.namespace ?? ""}/${object.metadata.name}`;
    // Re-inserted, so the batch stays in log order and the last frame carries the newest id.
    client.batch.delete(key);
    client.batch.set(key, event);
    if (client.batch.size > maxBatched) {
      client.batch.clear();
      client.res.destroy();
      return;
    }
    client.flush ??= clock.setTimeout(() => flush(client), batchMs);
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
      if (clients.size >= total) {
        res.setHeader("Retry-After", RETRY_AFTER_SECONDS);
        return sendStatus(res, 503, "ServiceUnavailable", `the hub serves at most ${total} event streams`);
      }
      const open = perSubject.get(principal.subject) ?? 0;
      if (open >= perPrincipal) {
        res.setHeader("Retry-After", RETRY_AFTER_SECONDS);
        return sendStatus(
          res,
          429,
          "TooManyRequests",
          `${principal.subject} has ${open} event streams open, the most allowed: close a dashboard tab`,
        );
      }
      const jobs = streamJobs(url);
      if (typeof jobs === "string") return sendStatus(res, 400, "BadRequest", jobs);
      const makeFilter = options.scope ? await options.scope(principal) : undefined;
      let filter = makeFilter?.();
      const shows = (object: KubeObject) => !filter || filter(object);
      const named = (object: KubeObject) => {
        if (!PER_JOB_KINDS.has(object.kind)) return true;
        const job = jobOf(object);
        return job !== undefined && jobs.has(job);
      };
      const client: Client = {
        res,
        token,
        principal,
        scoped: makeFilter !== undefined,
        allowance: maxPending,
        batch: new Map(),
        flush: undefined,
        summary: filter
          ? new JobSummary(everything.revision, (cache.objectsOf("Job") as Job[]).filter(shows))
          : everything,
        summaryDue: false,
        seen: cache.cursor(),
      };
      clients.add(client);
      perSubject.set(principal.subject, open + 1);
      res.writeHead(200, {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-store",
        connection: "keep-alive",
        "x-accel-buffering": "no",
      });
      res.socket?.setNoDelay(true);
      // The newest status for the newcomer (and everyone, if it moved since the last poll).
      this.pollSource();
      send(client, "retry: 2000\n\n");
      const lastId =
        (req.headers["last-event-id"] as string | undefined) ?? url.searchParams.get("lastEventId");
      const missed = lastId
        ? cache.since(lastId)?.filter((e) => shows(e.event.object) && !PER_JOB_KINDS.has(e.event.object.kind))
        : undefined;
      // What a newcomer is owed may be larger than the allowance: it may stay unread until taken.
      const initial = (text: string) => {
        client.allowance = maxPending + Buffer.byteLength(text);
        if (res.write(text)) client.allowance = maxPending;
        else res.once("drain", () => (client.allowance = maxPending));
      };
      if (missed) {
        // The named Jobs' objects as they are now stand for their missed changes: the page may
        // name other Jobs than before the reconnect.
        const selection = { jobs: [...jobs], objects: cache.ofJobs(jobs).filter(shows) };
        initial(
          `event: resume\ndata: ${JSON.stringify({ events: missed.length })}\n\n${missed.map(frame).join("")}` +
            `event: selection\ndata: ${JSON.stringify(selection)}\n\n${summaryFrame(client)}` +
            `event: source\ndata: ${lastSource}\n\n`,
        );
      } else {
        const { objects, cursor } = cache.snapshot(jobs);
        const body = {
          objects: filter ? objects.filter(filter) : objects,
          jobs: [...jobs],
          summary: JSON.parse(client.summary.json(teams())) as unknown,
          source: JSON.parse(lastSource) as unknown,
          config: options.config,
          principal,
        };
        initial(`id: ${cursor}\nevent: snapshot\ndata: ${JSON.stringify(body)}\n\n`);
      }
      const unsubscribe = cache.subscribe((event) => {
        const { object } = event.event;
        client.seen = event.id;
        if (object.kind === "Job") {
          if (makeFilter) filter = makeFilter();
          const { previous } = event;
          const before = previous !== undefined && shows(previous);
          const after = event.event.type !== "DELETED" && shows(object);
          if (client.summary !== everything) {
            if (before) client.summary.remove(previous as Job);
            if (after) client.summary.add(object as Job);
            if (before || after) client.summary.revision = event.id;
          }
          if (before || after) {
            client.summaryDue = true;
            client.flush ??= clock.setTimeout(() => flush(client), batchMs);
          }
        }
        if (shows(object) && named(object)) enqueue(client, event);
      });
      const stopHeartbeat = every(clock, HEARTBEAT_MS, () => send(client, ": ping\n\n"));
      const exp = options.expiresAt?.(token);
      // A session ends with its token: the browser reconnects, is refused, and shows the login.
      const expiry = exp
        ? clock.setTimeout(() => res.end(), Math.max(0, exp * 1000 - clock.now()))
        : undefined;
      res.on("close", () => {
        clients.delete(client);
        const left = (perSubject.get(principal.subject) ?? 1) - 1;
        if (left > 0) perSubject.set(principal.subject, left);
        else perSubject.delete(principal.subject);
        unsubscribe();
        if (client.flush) clock.clearTimeout(client.flush);
        client.batch.clear();
        stopHeartbeat();
        if (expiry) clock.clearTimeout(expiry);
      });
    },
    pollSource() {
      const next = JSON.stringify(options.sourceStatus() ?? null);
      if (next === lastSource) return;
      lastSource = next;
      for (const client of clients) send(client, `event: source\ndata: ${next}\n\n`);
    },
    async recheck() {
      await Promise.all(
        [...clients].map(async (client) => {
          const now = await Promise.resolve(options.authenticate(client.token)).catch(() => undefined);
          if (!now || now.subject !== client.principal.subject || now.role !== client.principal.role)
            client.res.end();
        }),
      );
    },
    rescope() {
      for (const client of clients) if (client.scoped) client.res.end();
    },
    close() {
      stopSummary();
      for (const client of clients) client.res.end();
      clients.clear();
      perSubject.clear();
    },
  };
}

function frame(cached: CachedEvent): string {
  return `id: ${cached.id}\nevent: change\ndata: ${JSON.stringify(cached.event)}\n\n`;
}

/** The Jobs a stream names (`?jobs=a,b`, repeatable), or why the parameter is refused. */
function streamJobs(url: URL): Set<string> | string {
  const names = url.searchParams
    .getAll("jobs")
    .flatMap((value) => value.split(","))
    .filter(Boolean);
  if (names.length > MAX_STREAM_JOBS)
    return `jobs: ${names.length} Jobs named, at most ${MAX_STREAM_JOBS} (the Jobs a page shows)`;
  const bad = names.find((name) => !NAME.test(name));
  if (bad !== undefined) return `jobs: ${JSON.stringify(bad.slice(0, 64))} is not a Job name`;
  return new Set(names);
}
