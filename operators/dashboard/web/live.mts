// The event stream: a snapshot, then changes. EventSource reconnects by itself with Last-Event-ID;
// when it gives up (the server refused or was gone) a new one is built with the last id in the
// query, so the hub sends only what was missed. The stream names the Jobs the page shows (`jobs=`):
// only theirs are sent in full, of the rest a summary. When the page shows other Jobs, the stream
// is opened again with their names and the last id: it resumes (their objects as they are now,
// what else was missed) without a snapshot.
import type { KubeObject } from "../../lib/kube-object.ts";
import type { ChangeEvent, JobSummaryView, Snapshot, SourceStatus, State } from "./state.mts";

export type Connection = "connecting" | "live" | "reconnecting";

/** As many as the hub lets one stream name (events.ts MAX_STREAM_JOBS). */
const MAX_JOBS = 200;

export interface LiveOptions {
  state: State;
  token: string;
  /** The Jobs the page shows at first. */
  jobs: string[];
  onChange: () => void;
  onConnection: (connection: Connection) => void;
  /** The hub refused the token (expired, revoked): log in again. */
  onUnauthorized: () => void;
}

export interface Live {
  /** The page shows these Jobs now: the stream follows them (reopened only when they differ). */
  select(jobs: string[]): void;
  close(): void;
}

export function connect(options: LiveOptions): Live {
  let lastId = "";
  let source: EventSource | undefined;
  let retry: ReturnType<typeof setTimeout> | undefined;
  let closed = false;
  let jobs = normalise(options.jobs);

  const open = () => {
    const query = new URLSearchParams({ token: options.token });
    if (jobs) query.set("jobs", jobs);
    if (lastId) query.set("lastEventId", lastId);
    const opened = new EventSource(`/api/v1/events?${query}`);
    source = opened;
    // An event of a stream replaced by a newer one is not applied (it may name other Jobs).
    const on = (type: string, handle: (message: MessageEvent<string>) => void) =>
      opened.addEventListener(type, (e) => {
        if (source === opened) handle(e as MessageEvent<string>);
      });
    on("open", () => options.onConnection("live"));
    on("snapshot", (message) => {
      options.state.load(JSON.parse(message.data) as Snapshot);
      lastId = message.lastEventId;
      options.onChange();
    });
    on("change", (message) => {
      options.state.apply(JSON.parse(message.data) as ChangeEvent);
      lastId = message.lastEventId;
      options.onChange();
    });
    on("selection", (message) => {
      options.state.select((JSON.parse(message.data) as { objects: KubeObject[] }).objects);
      options.onChange();
    });
    on("summary", (message) => {
      options.state.summary = JSON.parse(message.data) as JobSummaryView;
      // Like a watch's bookmark: the stream has been brought this far.
      if (message.lastEventId) lastId = message.lastEventId;
      options.onChange();
    });
    on("source", (message) => {
      options.state.source = JSON.parse(message.data) as SourceStatus;
      options.onChange();
    });
    on("error", () => {
      if (closed) return;
      options.onConnection("reconnecting");
      if (opened.readyState !== EventSource.CLOSED) return;
      // Refused outright: find out whether it was the token before trying again.
      void fetch("/api/v1/source", { headers: { authorization: `Bearer ${options.token}` } })
        .then((r) => (r.status === 401 ? "unauthorized" : "retry"))
        .catch(() => "retry")
        .then((next) => {
          if (closed || source !== opened) return;
          if (next === "unauthorized") options.onUnauthorized();
          else retry = setTimeout(open, 2000);
        });
    });
  };
  options.onConnection("connecting");
  open();
  return {
    select(next) {
      const wanted = normalise(next);
      if (closed || wanted === jobs) return;
      jobs = wanted;
      if (retry) clearTimeout(retry);
      retry = undefined;
      source?.close();
      // Before the first snapshot there is nothing to resume from: it starts again.
      open();
    },
    close() {
      closed = true;
      if (retry) clearTimeout(retry);
      source?.close();
    },
  };
}

/** The names as the stream's query carries them: sorted, unique, bounded. */
function normalise(jobs: string[]): string {
  return [...new Set(jobs)].sort().slice(0, MAX_JOBS).join(",");
}
