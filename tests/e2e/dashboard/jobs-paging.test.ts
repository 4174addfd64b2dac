// The dashboard's Jobs list in real Chromium against a real hub holding 130 Jobs: it asks the API
// for one page of 50 (before it opens the event stream), pages on with the API's continue tokens
// and back, and filters on the server. The event stream names the Jobs on screen (only theirs are
// sent; the overview counts all from the stream's summary) and follows the page as it changes.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { startHub } from "../../../operators/hub/hub.ts";
import { silentLogger } from "../../../operators/lib/logger.ts";
import type { BatchOp } from "../../../operators/lib/store/index.ts";
import { launchChromium, waitForAddress } from "../../helpers/chromium.ts";
import { onRealServers, waitFor } from "../../helpers/wait-for.ts";

const COUNT = 130;
const names = Array.from({ length: COUNT }, (_, i) => `job-${String(i).padStart(3, "0")}`);

t.test("the Jobs page shows the first page from the API and pages on", async (t) => {
  const dataDir = await mkdtemp(path.join(tmpdir(), "rlark-jobs-paging-"));
  const hub = await startHub({
    dataDir,
    http: "127.0.0.1:0",
    ssh: "127.0.0.1:0",
    logger: silentLogger,
    controllers: () => [],
    dashboard: true,
  });
  t.teardown(async () => {
    await hub.stop();
    await rm(dataDir, { recursive: true, force: true });
  });
  const ops: BatchOp[] = names.map((name, i) => ({
    op: "create",
    object: {
      apiVersion: "rlinf.io/v1alpha1",
      kind: "Job",
      metadata: { name },
      spec: { tasks: [] },
      status: { phase: i % 2 === 0 ? "Running" : "Succeeded" },
    },
  }));
  await hub.store.applyBatch(ops);

  const browser = await launchChromium();
  t.teardown(() => browser.close());
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(error.message));
  await page.goto(hub.dashboard!.loginUrl(hub.url));
  await waitForAddress(page, /#\/overview$/);

  const requests: string[] = [];
  /** The Jobs each event stream the page opened named, in order. */
  const streams: string[][] = [];
  page.on("request", (request) => {
    const url = new URL(request.url());
    // The event stream's query holds the session token: only its path is kept.
    if (url.pathname === "/api/v1/events") {
      requests.push(url.pathname);
      streams.push((url.searchParams.get("jobs") ?? "").split(",").filter(Boolean));
    } else if (url.pathname.startsWith("/api/v1/")) requests.push(`${url.pathname}${url.search}`);
  });
  const rows = () =>
    page.locator("tr[data-job]").evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-job")));
  const firstRowIs = (name: string) =>
    page
      .locator("tr[data-job]")
      .first()
      .and(page.locator(`[data-job="${name}"]`))
      .waitFor();

  await page.goto(`${hub.url}/?fresh#/jobs`);
  await firstRowIs("job-000");
  t.same(await rows(), names.slice(0, 50), "the first page: 50 Jobs in name order");
  const first = requests.findIndex((r) => r.startsWith("/api/v1/rlinf.io/v1alpha1/jobs?"));
  t.match(requests[first], /[?&]limit=50(&|$)/, "the page asks the API for 50 Jobs");
  t.ok(
    first >= 0 && requests.findIndex((r) => r.startsWith("/api/v1/events")) > first,
    `the page is asked for before the event stream opens: ${requests.join(", ")}`,
  );

  const streamNames = (jobs: string[]) =>
    waitFor(
      `a stream naming ${jobs[0]}…${jobs.at(-1)}`,
      () => streams.at(-1)?.join() === jobs.join(),
      onRealServers,
    );
  await streamNames(names.slice(0, 50));
  t.pass("the event stream names the 50 Jobs on screen, no others");

  await page.getByRole("link", { name: "next →" }).click();
  await firstRowIs("job-050");
  t.same(await rows(), names.slice(50, 100), "the second page");
  await streamNames(names.slice(50, 100));
  t.pass("on the next page, the stream follows its Jobs");
  t.match(page.url(), /continue=/, "the page's place is in the address");
  await page.getByRole("link", { name: "next →" }).click();
  await firstRowIs("job-100");
  t.same(await rows(), names.slice(100), "the last page");
  t.equal(await page.getByRole("link", { name: "next →" }).count(), 0, "no next link on the last page");
  await page.getByRole("link", { name: "← previous" }).click();
  await firstRowIs("job-050");
  t.same(await rows(), names.slice(50, 100), "back to the second page");
  await page.getByRole("link", { name: "« first" }).click();
  await firstRowIs("job-000");

  // A filter goes to the server and starts again from the first page.
  await page.getByLabel("Phase").selectOption("Succeeded");
  await firstRowIs("job-001");
  t.same(await rows(), names.filter((_, i) => i % 2 === 1).slice(0, 50), "the first page of Succeeded Jobs");
  t.ok(
    requests.some((r) => /jobs\?limit=50&phase=Succeeded$/.test(r)),
    "filtered by the API",
  );
  await page.getByRole("link", { name: "next →" }).click();
  await firstRowIs("job-101");
  t.same(await rows(), names.filter((_, i) => i % 2 === 1).slice(50));

  // A Job written now shows on the page it belongs to, live.
  await page.getByLabel("Phase").selectOption("");
  await firstRowIs("job-000");
  await hub.store.create({
    apiVersion: "rlinf.io/v1alpha1",
    kind: "Job",
    metadata: { name: "job-000a" },
    spec: { tasks: [] },
  });
  await page.locator('tr[data-job="job-000a"]').waitFor();
  t.same((await rows()).slice(0, 3), ["job-000", "job-000a", "job-001"]);

  // A Job's page: its Job is named to the stream, and a change to it shows without a reload.
  await page.goto(`${hub.url}/?one#/jobs/job-007`);
  await page.locator("h1 .phase-Succeeded").waitFor();
  await streamNames(["job-007"]);
  const seven = (await hub.store.get("Job", undefined, "job-007"))!;
  await hub.store.updateStatus({ ...seven, status: { phase: "Failed", run: 3 } });
  await page.locator("h1 .phase-Failed").waitFor();
  t.pass("a shown Job's change arrived on the stream");

  // The overview counts every Job from the stream's summary, and follows a Job no page shows.
  await page.getByRole("link", { name: "Overview" }).click();
  const count = (phase: string) => page.locator(`[data-phase-count="${phase}"]`).textContent();
  await waitFor("the counts", async () => (await count("Failed")) === "1", onRealServers);
  t.equal(await count("Running"), "65");
  t.equal(await count("Succeeded"), "64");
  t.equal(await count("Pending"), "1", "job-000a has no status yet");
  const last = (await hub.store.get("Job", undefined, "job-129"))!;
  await hub.store.updateStatus({ ...last, status: { phase: "Stopped" } });
  await waitFor("the summary's count", async () => (await count("Stopped")) === "1", onRealServers);
  t.equal(await count("Succeeded"), "63");
  t.same(streams.at(-1), [], "the overview names no Job");
  t.same(errors, [], "no errors on the page");
});
