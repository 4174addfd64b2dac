// `node hack/bench/dashboard/first-paint.ts [jobs]`: a hub whose store holds N Jobs (default
// 10,000, each with the example's task templates and a status), the dashboard mounted, and Debian's
// Chromium opening the Jobs page. Prints the snapshot size, the time from navigation to the first
// rows on screen (median of 5 loads), and the time to page through the list and to apply a burst of
// live updates. Asserts nothing: the target is a first paint under 1 s on this machine.
import { startHub } from "../../../operators/hub/index.ts";
import { launchChromium } from "../../../tests/helpers/chromium.ts";
import { seedJobs } from "./seed-jobs.ts";

const count = Number(process.argv[2] ?? 10_000);
// The jobs are written first, then the hub starts again with the dashboard, whose cache loads them.
const { hubOptions } = await seedJobs(count, {
  clusters: 20,
  batch: 500,
  digits: 5,
  dirPrefix: "rlark-bench-dash-",
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
  let snapshotBytes = 0;
  page.on("response", async (response) => {
    if (response.url().includes("/api/v1/events"))
      snapshotBytes = Number(response.headers()["content-length"] ?? 0);
  });
  await page.goto(loginUrl);
  await page.waitForURL(/#\/overview$/);
  const firstPaints: number[] = [];
  for (let i = 0; i < 5; i++) {
    await page.goto(`${hub.url}/?load=${i}#/jobs`);
    await page.locator("tr[data-job]").first().waitFor();
    firstPaints.push(await page.evaluate(() => performance.now()));
  }
  firstPaints.sort((a, b) => a - b);
  const size = await page.evaluate(async () => {
    const session = JSON.parse(sessionStorage.getItem("rlark.session") ?? "{}") as { token: string };
    const controller = new AbortController();
    const response = await fetch(`/api/v1/events?token=${session.token}`, { signal: controller.signal });
    const reader = response.body!.getReader();
    let bytes = 0;
    const text = new TextDecoder();
    let buffered = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done || !value) break;
      bytes += value.length;
      buffered += text.decode(value, { stream: true });
      if (buffered.includes("event: snapshot") && buffered.endsWith("\n\n")) break;
    }
    controller.abort();
    return bytes;
  });
  console.log(`snapshot: ${(size / 1024 / 1024).toFixed(1)} MiB for ${count} jobs${snapshotBytes ? "" : ""}`);
  console.log(
    `first paint of the Jobs page (navigation → rows on screen): median ${Math.round(firstPaints[2]!)} ms, min ${Math.round(firstPaints[0]!)} ms, max ${Math.round(firstPaints[4]!)} ms`,
  );

  t0 = performance.now();
  for (let i = 0; i < 20; i++) {
    const before = await page.locator("tr[data-job]").first().getAttribute("data-job");
    await page.getByRole("link", { name: "next →" }).click();
    // Strings, not functions: this file is type-checked without the DOM library.
    await page.waitForFunction(
      `document.querySelector("tr[data-job]")?.getAttribute("data-job") !== ${JSON.stringify(before)}`,
    );
  }
  console.log(`paging: ${((performance.now() - t0) / 20).toFixed(0)} ms per page of 50 (click → new rows)`);

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
}
