// Finds where a JSON pointer's field is written, from js-yaml's event stream (offsets only, no
// document model): the cheap way to put a line and column on a diagnostic after the fast parse.
import { EVENT_ID, type Event, getScalarValue, parseEvents, SCALAR_STYLE } from "js-yaml";
import { pointerSegments } from "./json-pointer-segments.ts";

export interface Offsets {
  /** Where the document's root node starts. */
  start: number;
  locate(pointer: string, target: "value" | "key"): number;
}

/** Offsets for each document of `text`, by document index; undefined if the text does not parse. */
export function documentOffsets(text: string, maxDepth: number): (index: number) => Offsets | undefined {
  let events: Event[] | undefined;
  let documentStarts: number[] | undefined;
  const load = () => {
    if (!events) {
      try {
        events = parseEvents(text, { maxDepth });
      } catch {
        events = [];
      }
      documentStarts = [];
      events.forEach((e, i) => {
        if (e.type === EVENT_ID.DOCUMENT) documentStarts?.push(i + 1);
      });
    }
    return { events, documentStarts: documentStarts as number[] };
  };
  return (index) => {
    const { events, documentStarts } = load();
    const root = documentStarts[index];
    if (root === undefined || events[root] === undefined) return undefined;
    return {
      start: startOf(text, events[root] as Event),
      locate: (pointer, target) => locate(text, events, root, pointerSegments(pointer), target),
    };
  };
}

/**
 * Where each document's root node starts, by document index, from the events of a parse (the
 * fast parse's own: the starts need no second one).
 */
export function documentStartOffsets(text: string, events: readonly Event[]): number[] {
  // A plain loop, measured: with a callback per event (forEach) a 100,000-Job revision peaked
  // 0.4 GiB higher, the same live heap (V8 came to allocate the parser's events in old space: the
  // difference went with --no-allocation-site-pretenuring).
  const starts: number[] = [];
  for (let i = 0; i < events.length; i++) {
    if (events[i]?.type !== EVENT_ID.DOCUMENT) continue;
    const root = events[i + 1];
    starts.push(root === undefined ? 0 : startOf(text, root));
  }
  return starts;
}

/** Where a node is written, as a reader sees it: at the opening quote or the `|`/`>` indicator. */
function startOf(text: string, event: Event): number {
  switch (event.type) {
    case EVENT_ID.SCALAR:
      if (event.style === SCALAR_STYLE.SINGLE_QUOTED || event.style === SCALAR_STYLE.DOUBLE_QUOTED) {
        return event.valueStart - 1;
      }
      if (event.style === SCALAR_STYLE.LITERAL_BLOCK || event.style === SCALAR_STYLE.FOLDED_BLOCK) {
        return Math.max(text.lastIndexOf("|", event.valueStart), text.lastIndexOf(">", event.valueStart));
      }
      return event.valueStart;
    case EVENT_ID.MAPPING:
    case EVENT_ID.SEQUENCE:
      return event.start;
    default:
      return "start" in event && typeof event.start === "number" ? event.start : 0;
  }
}

/** Index of the event after the node that starts at `i`. */
function skip(events: Event[], i: number): number {
  const first = events[i];
  if (first?.type !== EVENT_ID.MAPPING && first?.type !== EVENT_ID.SEQUENCE) return i + 1;
  let depth = 0;
  for (let j = i; j < events.length; j++) {
    const type = events[j]?.type;
    if (type === EVENT_ID.MAPPING || type === EVENT_ID.SEQUENCE) depth++;
    else if (type === EVENT_ID.POP && --depth === 0) return j + 1;
  }
  return events.length;
}

function locate(
  text: string,
  events: Event[],
  root: number,
  segments: string[],
  target: "value" | "key",
): number {
  let node = root;
  let best = startOf(text, events[node] as Event);
  for (const [depth, segment] of segments.entries()) {
    const event = events[node];
    const last = depth === segments.length - 1;
    let found: number | undefined;
    if (event?.type === EVENT_ID.MAPPING) {
      for (let i = node + 1; events[i] && events[i]?.type !== EVENT_ID.POP; ) {
        const key = events[i] as Event;
        const valueAt = skip(events, i);
        if (key.type === EVENT_ID.SCALAR && getScalarValue(text, key) === segment) {
          if (last && target === "key") return startOf(text, key);
          found = valueAt;
          break;
        }
        i = skip(events, valueAt);
      }
    } else if (event?.type === EVENT_ID.SEQUENCE) {
      let i = node + 1;
      for (let n = 0; n < Number(segment) && events[i] && events[i]?.type !== EVENT_ID.POP; n++)
        i = skip(events, i);
      if (events[i] && events[i]?.type !== EVENT_ID.POP && /^\d+$/.test(segment)) found = i;
    }
    if (found === undefined) return best;
    node = found;
    best = startOf(text, events[node] as Event);
  }
  return best;
}
