// The event stream: a snapshot, then changes. EventSource reconnects by itself with Last-Event-ID;
// when it gives up (the server refused or was gone) a new one is built with the last id in the
// query, so the hub sends only what was missed.
import type { ChangeEvent, Snapshot, SourceStatus, State } from "./state.mts";

export type Connection = "connecting" | "live" | "reconnecting";

export interface LiveOptions {
  state: State;
  token: string;
  onChange: () => void;
  onConnection: (connection: Connection) => void;
  /** The hub refused the token (expired, revoked): log in again. */
  onUnauthorized: () => void;
}

export function connect(options: LiveOptions): { close(): void } {
  let lastId = "";
  let source: EventSource | undefined;
  let retry: ReturnType<typeof setTimeout> | undefined;
  let closed = false;

  const open = () => {
    const query = new URLSearchParams({ token: options.token });
    if (lastId) query.set("lastEventId", lastId);
    source = new EventSource(`/api/v1/events?${query}`);
    source.addEventListener("open", () => options.onConnection("live"));
    source.addEventListener("snapshot", (e) => {
      const message = e as MessageEvent<string>;
      options.state.load(JSON.parse(message.data) as Snapshot);
      lastId = message.lastEventId;
      options.onChange();
    });
    source.addEventListener("change", (e) => {
      const message = e as MessageEvent<string>;
      options.state.apply(JSON.parse(message.data) as ChangeEvent);
      lastId = message.lastEventId;
      options.onChange();
    });
    source.addEventListener("source", (e) => {
      options.state.source = JSON.parse((e as MessageEvent<string>).data) as SourceStatus;
      options.onChange();
    });
    source.addEventListener("error", () => {
      if (closed) return;
      options.onConnection("reconnecting");
      if (source?.readyState !== EventSource.CLOSED) return;
      // Refused outright: find out whether it was the token before trying again.
      void fetch("/api/v1/source", { headers: { authorization: `Bearer ${options.token}` } })
        .then((r) => (r.status === 401 ? "unauthorized" : "retry"))
        .catch(() => "retry")
        .then((next) => {
          if (closed) return;
          if (next === "unauthorized") options.onUnauthorized();
          else retry = setTimeout(open, 2000);
        });
    });
  };
  options.onConnection("connecting");
  open();
  return {
    close() {
      closed = true;
      if (retry) clearTimeout(retry);
      source?.close();
    },
  };
}
