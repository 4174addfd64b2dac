// The dashboard's log follow in a real Chromium: a process-runtime pod appends numbered lines and
// its 2 KiB log rotates every ~200 of them; the page follows across many rotations with no line
// lost or repeated, keeps only its newest lines, and stops when asked.
import type { Page } from "playwright-core";
import t from "tap";
import { hashPassword } from "../../operators/dashboard/index.ts";
import { FAST } from "../dashboard/dashboard-hub.ts";
import { launchChromium } from "../helpers/chromium.ts";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { rawJobYaml } from "../helpers/job-yaml.ts";
import { runningProcessPod } from "../helpers/process-pod-on-hub.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";
import { clusterYaml, policyYaml } from "./bastion-fixture.ts";

const FOLLOW_MAX_LINES = 1000;

const tickerJob = rawJobYaml({
  name: "ticker",
  kind: "Deployment",
  command: [
    "sh",
    "-c",
    "i=0; while :; do echo tick-$i; i=$((i+1)); if [ $((i % 20)) = 0 ]; then sleep 0.05; fi; done",
  ],
});

/** The tick numbers the page's log shows, in order. */
async function ticks(page: Page): Promise<number[]> {
  const text = (await page.locator("pre.log").textContent()) ?? "";
  return text
    .split("\n")
    .filter((line) => /^tick-\d+$/.test(line))
    .map((line) => Number(line.slice(5)));
}

t.test("the dashboard follows a pod's log across rotations, bounded", async (t) => {
  const hash = await hashPassword("dana pw", FAST);
  const { hub } = await startHubOnGit(t, {
    dashboard: true,
    files: {
      "cluster.yaml": clusterYaml,
      "user.yaml": `apiVersion: rlinf.io/v1alpha1\nkind: User\nmetadata:\n  name: dana\nspec:\n  roles: [user]\n  passwordHash: "${hash}"\n`,
      "policy.yaml": policyYaml("dana-logs", "  subjects:\n    users: [dana]\n  verbs: [logs]\n"),
      "ticker.yaml": tickerJob,
    },
  });
  await runningProcessPod(t, hub, "the ticker pod", { logs: { maxBytes: 2048 } });

  const browser = await launchChromium();
  t.teardown(() => browser.close());
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(error.message));
  await page.goto(hub.url);
  await page.getByLabel("User name").fill("dana");
  await page.getByLabel("Password", { exact: true }).fill("dana pw");
  await page.getByLabel("Password", { exact: true }).press("Enter");
  await page.locator("#nav a").first().waitFor();
  await page.goto(`${hub.url}/#/jobs/ticker`);
  await page.locator("button.pod-log-follow").click();
  await page.locator(".log-following").waitFor();

  const first = await waitFor("lines on the page", async () => (await ticks(page))[0], onRealServers);
  // 2 KiB holds ~200 lines: 1500 more lines are seven rotations. (The pod writes at most ~400
  // lines a second: a follower that falls more than a rotated file behind a faster writer loses
  // what rotation removed, which is the bound on disk doing its job.)
  const shown = await waitFor(
    "1500 more lines followed",
    async () => {
      const now = await ticks(page);
      return (now.at(-1) ?? 0) > first + 1500 ? now : undefined;
    },
    onRealServers,
  );
  t.ok(
    shown.length <= FOLLOW_MAX_LINES,
    `the page keeps at most ${FOLLOW_MAX_LINES} lines (${shown.length})`,
  );
  t.ok(shown.length > FOLLOW_MAX_LINES / 2, "and keeps the newest ones");
  const gaps = shown.slice(1).filter((n, i) => n !== (shown[i] as number) + 1);
  t.same(gaps, [], "consecutive lines: none lost or repeated across the rotations");

  await page.locator("button.pod-log-stop").click();
  await page.locator("button.pod-log-follow").waitFor();
  t.equal(await page.locator(".log-following").count(), 0, "the page says it no longer follows");
  await waitFor("the hub's log stream closed", () => hub.bastion.open === 0, onRealServers);
  t.pass("stopping ends the stream on the hub");
  t.same(errors, [], "no script errors");
});
