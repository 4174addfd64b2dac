// The Jobs list as pages from the hub's API, not from the live snapshot: the first page is asked
// for at once (before the event stream opens), so it paints in one small request however many
// Jobs the hub holds. Filters go to the server (phase, cluster, labelSelector) and pages follow
// its continue tokens. A page is fetched again when the live stream's summary says Jobs changed
// (its revision), at most once a second while they keep changing; the Jobs on the page are named
// to the stream, which sends their changes as they happen.
import type { Job } from "../../api/index.ts";

export const PAGE_SIZE = 50;
const REFRESH_MS = 1000;

export interface JobsPage {
  items: Job[];
  continue?: string;
  error?: string;
}

interface Entry {
  page?: JobsPage;
  /** The summary's revision (JobSummaryView.revision) the page was asked for at. */
  revision: string;
  fetchedAt: number;
  loading: boolean;
  timer?: ReturnType<typeof setTimeout>;
}

const pages = new Map<string, Entry>();
/** Where "← previous" leads from a page: the token of the page whose "next" led here ("" = first). */
const previous = new Map<string, string>();

/** The API query of a dashboard address (`#/jobs?phase=…&cluster=…&label=…&continue=…`). */
export function apiQuery(query: URLSearchParams): URLSearchParams {
  const api = new URLSearchParams({ limit: String(PAGE_SIZE) });
  for (const [from, to] of [
    ["phase", "phase"],
    ["cluster", "cluster"],
    ["label", "labelSelector"],
    ["continue", "continue"],
  ] as const) {
    const value = query.get(from)?.trim();
    if (value) api.set(to, value);
  }
  return api;
}

/** Records that the page with token `next` is reached from the page with token `from`. */
export function rememberPrevious(next: string, from: string): void {
  if (!previous.has(next)) previous.set(next, from);
  // Bounded: a long session of paging keeps the newest thousand steps.
  if (previous.size > 1000) previous.delete(previous.keys().next().value!);
}

export function previousOf(token: string): string | undefined {
  return previous.get(token);
}

/**
 * The page for `query` as last fetched (undefined while the first fetch runs); fetches it when it
 * is missing or older than `revision`, and calls `loaded` when an answer arrives.
 */
export function jobsPage(query: URLSearchParams, token: string, revision: string, loaded: () => void): Entry {
  const key = apiQuery(query).toString();
  let entry = pages.get(key);
  if (!entry) {
    entry = { revision, fetchedAt: 0, loading: false };
    pages.set(key, entry);
    if (pages.size > 50) pages.delete(pages.keys().next().value!);
  }
  if (!entry.loading && !entry.timer && (entry.fetchedAt === 0 || entry.revision !== revision)) {
    const wait = Math.max(0, entry.fetchedAt + REFRESH_MS - Date.now());
    const target = entry;
    const run = () => {
      target.timer = undefined;
      void fetchPage(key, target, token, revision, loaded);
    };
    if (wait === 0) run();
    else target.timer = setTimeout(run, wait);
  }
  return entry;
}

/** Starts the fetch of the page an address shows (called before the event stream opens). */
export function prefetchJobs(query: URLSearchParams, token: string): Promise<void> {
  const key = apiQuery(query).toString();
  if (pages.get(key)?.page) return Promise.resolve();
  const entry: Entry = { revision: "", fetchedAt: 0, loading: false };
  pages.set(key, entry);
  return fetchPage(key, entry, token, "", () => undefined);
}

/** The names of the Jobs on the page an address shows, as last fetched: what the stream follows. */
export function shownJobs(query: URLSearchParams): string[] {
  return (pages.get(apiQuery(query).toString())?.page?.items ?? []).map((job) => job.metadata.name);
}

async function fetchPage(key: string, entry: Entry, token: string, revision: string, loaded: () => void) {
  entry.loading = true;
  try {
    const response = await fetch(`/api/v1/rlinf.io/v1alpha1/jobs?${key}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const body = (await response.json()) as {
      items?: Job[];
      metadata?: { continue?: string };
      message?: string;
    };
    entry.page = response.ok
      ? { items: body.items ?? [], ...(body.metadata?.continue ? { continue: body.metadata.continue } : {}) }
      : { items: [], error: body.message ?? `the hub answered ${response.status}` };
  } catch (error) {
    entry.page = { items: entry.page?.items ?? [], error: `the hub did not answer: ${String(error)}` };
  } finally {
    entry.loading = false;
    entry.fetchedAt = Date.now();
    entry.revision = revision;
  }
  loaded();
}
