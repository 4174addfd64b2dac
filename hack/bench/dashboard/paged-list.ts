// `node hack/bench/dashboard/paged-list.ts [jobs=100000] [--samples 200] [--baseline-samples 5]
// [--data-dir DIR]`: a hub whose SQLite store holds N Jobs (each with the example's task templates
// and a status), the dashboard mounted. Prints, all in the same run:
// - the list API: a page (`limit=50`, from the start, from a continue token, filtered by phase and
//   by cluster) against the whole list (the unpaged baseline): p50, p99, bytes;
// - the dashboard in Chromium: navigation → the first Job rows on screen, against navigation →
//   every Job received and parsed in the page (what the event stream's snapshot carried before it
//   named the page's Jobs); the snapshot's size and time as it is now.
// Asserts nothing (docs/benchmarks/dashboard-paging.md).
import { rm, writeFile } from "node:fs/promises";
import { Session } from "node:inspector/promises";
import { parseArgs } from "node:util";
import type { Page } from "playwright-core";
import { startHub } from "../../../operators/hub/index.ts";
import { launchChromium } from "../../../tests/helpers/chromium.ts";
import { seedJobs } from "./seed-jobs.ts";
import { STREAM_SNAPSHOT } from "./stream-snapshot.ts";

const { values: flags, positionals } = parseArgs({
  options: {
    samples: { type: "string" },
    "baseline-samples": { type: "string" },
    "data-dir": { type: "string" },
    /** Writes a CPU profile of this process (the hub is in it) over the 5 first paints there. */
    "profile-first-paint": { type: "string" },
  },
  allowPositionals: true,
});
const count = Number(positionals[0] ?? 100_000);
const samples = Number(flags.samples ?? 200);
const baselineSamples = Number(flags["baseline-samples"] ?? 5);
const { dataDir, hubOptions, kept } = await seedJobs(count, {
  clusters: 50,
  batch: 1000,
  digits: 6,
  dirPrefix: "rlark-bench-paged-",
  ...(flags["data-dir"] ? { dataDir: flags["data-dir"] } : {}),
});

// Every Job in the page: the unpaged list, received and parsed.
const WHOLE_LIST = `(async () => {
  const session = JSON.parse(sessionStorage.getItem("rlark.session") ?? "{}");
  const started = performance.now();
  const response = await fetch("/api/v1/rlinf.io/v1alpha1/jobs", { headers: { authorization: "Bearer " + session.token } });
  const text = await response.text();
  JSON.parse(text);
  return { ms: performance.now() - started, bytes: text.length };
})()`;

let t0 = performance.now();
const hub = await startHub({ ...hubOptions, dashboard: true });
console.log(`hub started with the dashboard's cache loaded in ${Math.round(performance.now() - t0)} ms`);
const auth = { authorization: `Bearer ${hub.adminToken}` };
const JOBS = `${hub.url}/api/v1/rlinf.io/v1alpha1/jobs`;

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
async function timeGet(
  query: string,
): Promise<{ ms: number; bytes: number; body: { metadata: { continue?: string } } }> {
  const started = performance.now();
  const response = await fetch(`${JOBS}${query}`, { headers: auth });
  const text = await response.text();
  if (!response.ok) throw new Error(`${query}: ${response.status} ${text.slice(0, 200)}`);
  return { ms: performance.now() - started, bytes: text.length, body: JSON.parse(text) };
}
async function series(what: string, queries: () => string, n: number) {
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < n; i++) {
    const r = await timeGet(queries());
    times.push(r.ms);
    bytes = r.bytes;
  }
  times.sort((a, b) => a - b);
  return { what, n, p50: pct(times, 50), p99: pct(times, 99), bytes };
}

try {
  // Continue tokens spread over the whole list, collected by walking it in about 20 steps (pages
  // of 50 to 1,000): a list shorter than one page has none, and that row is left out.
  const step = Math.max(50, Math.min(1000, Math.floor(count / 20)));
  const tokens: string[] = [];
  let next: string | undefined;
  do {
    const r = await timeGet(`?limit=${step}${next ? `&continue=${next}` : ""}`);
    next = r.body.metadata.continue;
    if (next) tokens.push(next);
  } while (next);
  const rows = [
    await series("whole list, unpaged (baseline)", () => "", baselineSamples),
    await series("first page, limit=50", () => "?limit=50", samples),
    ...(tokens.length
      ? [
          await series(
            "a page from a continue token (anywhere in the list), limit=50",
            () => `?limit=50&continue=${tokens[Math.floor(Math.random() * tokens.length)]}`,
            samples,
          ),
        ]
      : []),
    await series("first page, limit=50, phase=Failed", () => "?limit=50&phase=Failed", samples),
    await series("first page, limit=50, cluster=cluster-7", () => "?limit=50&cluster=cluster-7", samples),
    await series("first page, limit=50, namePrefix=job-0999", () => "?limit=50&namePrefix=job-0999", samples),
  ];
  const base = rows[0]!;
  console.log(`\nlist API over ${count} Jobs (ms):`);
  for (const r of rows)
    console.log(
      `  ${r.what.padEnd(64)} n=${String(r.n).padStart(3)}  p50 ${r.p50.toFixed(1).padStart(8)}  p99 ${r.p99.toFixed(1).padStart(8)}  ${(r.bytes / 1024).toFixed(0).padStart(7)} KiB  p99 ${(r.p99 / base.p99).toFixed(4)}× the baseline`,
    );

  const browser = await launchChromium();
  try {
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    await page.goto(hub.dashboard!.loginUrl(hub.url));
    await page.waitForURL(/#\/overview$/);
    const firstPaints: number[] = [];
    const profiler = flags["profile-first-paint"] ? new Session() : undefined;
    if (profiler) {
      profiler.connect();
      await profiler.post("Profiler.enable");
      await profiler.post("Profiler.start");
    }
    for (let i = 0; i < 5; i++) {
      await page.goto(`${hub.url}/?load=${i}#/jobs`);
      await page.locator("tr[data-job]").first().waitFor();
      firstPaints.push(await page.evaluate(() => performance.now()));
    }
    if (profiler) {
      const { profile } = await profiler.post("Profiler.stop");
      await writeFile(flags["profile-first-paint"]!, JSON.stringify(profile));
      profiler.disconnect();
    }
    firstPaints.sort((a, b) => a - b);
    // The event stream's snapshot as the Jobs page opens it now (naming its 50 Jobs).
    const snapshots: Array<{ ms: number; bytes: number }> = [];
    for (let i = 0; i < 3; i++) snapshots.push(await inPage(page, STREAM_SNAPSHOT));
    snapshots.sort((a, b) => a.ms - b.ms);
    // Baseline: every Job received and parsed in the page, what the stream's snapshot carried
    // before it named the page's Jobs (it was that list and the rest, 87.9 MiB at 100,000).
    const wholes: Array<{ ms: number; bytes: number }> = [];
    for (let i = 0; i < baselineSamples; i++) wholes.push(await inPage(page, WHOLE_LIST));
    wholes.sort((a, b) => a.ms - b.ms);
    const median = wholes[Math.floor((wholes.length - 1) / 2)]!;
    console.log(`\ndashboard in Chromium, ${count} Jobs:`);
    console.log(
      `  first paint of the Jobs page (navigation → rows on screen), 5 loads: median ${Math.round(firstPaints[2]!)} ms, min ${Math.round(firstPaints[0]!)}, max ${Math.round(firstPaints[4]!)} (target < 1 s)`,
    );
    console.log(
      `  the event stream's snapshot (naming the page's 50 Jobs), 3 loads: median ${Math.round(snapshots[1]!.ms)} ms, ${(snapshots[1]!.bytes / 1024).toFixed(0)} KiB`,
    );
    console.log(
      `  baseline: every Job received and parsed in the page, ${wholes.length} loads: median ${Math.round(median.ms)} ms, ${(median.bytes / 2 ** 20).toFixed(1)} MiB`,
    );
    console.log(`  first paint / baseline: ${(firstPaints[2]! / median.ms).toFixed(3)}`);
    const clicks = Math.min(10, Math.ceil(count / 50) - 1);
    t0 = performance.now();
    for (let i = 0; i < clicks; i++) {
      const before = await page.locator("tr[data-job]").first().getAttribute("data-job");
      await page.getByRole("link", { name: "next →" }).click();
      await page.locator(`tr[data-job="${before}"]`).waitFor({ state: "detached" });
    }
    if (clicks > 0)
      console.log(
        `  paging: ${((performance.now() - t0) / clicks).toFixed(0)} ms per page of 50 (click → new rows)`,
      );
  } finally {
    await browser.close();
  }
} finally {
  await hub.stop();
  if (!kept) await rm(dataDir, { recursive: true, force: true });
}

/** Runs `script` (an expression, as a string: CDP evaluates it, the page's CSP allows no eval). */
async function inPage(page: Page, script: string): Promise<{ ms: number; bytes: number }> {
  await page.goto(`${hub.url}/?measure=${Math.random()}#/jobs`);
  await page.locator("tr[data-job]").first().waitFor();
  return (await page.evaluate(script)) as { ms: number; bytes: number };
}
