// `node hack/bench/dashboard/first-paint.ts [jobs] [--data-dir DIR]`: a hub whose store holds N Jobs (default
// 10,000, each with the example's task templates and a status), the dashboard mounted, and Debian's
// Chromium opening the Jobs page. Prints the snapshot size, the time from navigation to the first
// rows on screen (median of 5 loads), and the time to page through the list and to apply a burst of
// live updates. Asserts nothing: the target is a first paint under 1 s on this machine.
import { rm } from "node:fs/promises";
import { parseArgs } from "node:util";
import { startHub } from "../../../operators/hub/index.ts";
import { launchChromium } from "../../../tests/helpers/chromium.ts";
import { seedJobs } from "./seed-jobs.ts";
import { STREAM_SNAPSHOT } from "./stream-snapshot.ts";

const { values: flags, positionals } = parseArgs({
  options: { "data-dir": { type: "string" } },
  allowPositionals: true,
});
const count = Number(positionals[0] ?? 10_000);
// The jobs are written first, then the hub starts again with the dashboard, whose cache loads them.
const { dataDir, hubOptions, kept } = await seedJobs(count, {
  clusters: 20,
  batch: 500,
  digits: 5,
  dirPrefix: "rlark-bench-dash-",
  ...(flags["data-dir"] ? { dataDir: flags["data-dir"] } : {}),
});

let t0 = performance.now();
const hub = await startHub({ ...hubOptions, dashboard: true });
const dashboard = hub.dashboard;
if (!dashboard) throw new Error("the hub mounted no dashboard");
console.log(`hub started with the dashboard's cache loaded in ${Math.round(performance.now() - t0)} ms`);

const loginUrl = dashboard.loginUrl(hub.url);
const browser = await launchChromium();
try {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  await page.goto(loginUrl);
  await page.waitForURL(/#\/overview$/);
  const firstPaints: number[] = [];
  for (let i = 0; i < 5; i++) {
    await page.goto(`${hub.url}/?load=${i}#/jobs`);
    await page.locator("tr[data-job]").first().waitFor();
    firstPaints.push(await page.evaluate(() => performance.now()));
  }
  firstPaints.sort((a, b) => a - b);
  const { bytes: size } = (await page.evaluate(STREAM_SNAPSHOT)) as { bytes: number };
  console.log(`snapshot: ${(size / 1024).toFixed(0)} KiB for ${count} jobs (the page's 50 named)`);
  console.log(
    `first paint of the Jobs page (navigation → rows on screen): median ${Math.round(firstPaints[2]!)} ms, min ${Math.round(firstPaints[0]!)} ms, max ${Math.round(firstPaints[4]!)} ms`,
  );

  // As many pages as there are after the first, at most 20 (1,050 Jobs or fewer have fewer).
  const clicks = Math.min(20, Math.ceil(count / 50) - 1);
  t0 = performance.now();
  for (let i = 0; i < clicks; i++) {
    const before = await page.locator("tr[data-job]").first().getAttribute("data-job");
    await page.getByRole("link", { name: "next →" }).click();
    // The old first row gone (a waitForFunction string is eval, which the page's CSP refuses).
    await page.locator(`tr[data-job="${before}"]`).waitFor({ state: "detached" });
  }
  if (clicks > 0)
    console.log(
      `paging: ${((performance.now() - t0) / clicks).toFixed(0)} ms per page of 50 (click → new rows)`,
    );

  const jobs = (await hub.store.list("Job")).items.slice(0, 200);
  t0 = performance.now();
  for (const job of jobs)
    await hub.store.updateStatus({ ...job, status: { ...(job.status as object), phase: "Failed" } });
  const last = jobs.at(-1)!.metadata.name;
  await page.goto(`${hub.url}/#/jobs/${last}`);
  await page.locator("h1 .phase-Failed").waitFor();
  console.log(
    `live: 200 status updates written and the last one on screen after ${Math.round(performance.now() - t0)} ms`,
  );
} finally {
  await browser.close();
  await hub.stop();
  if (!kept) await rm(dataDir, { recursive: true, force: true });
}
