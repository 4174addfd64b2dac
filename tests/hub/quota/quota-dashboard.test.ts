// The dashboard's Teams page in Chromium, on a real hub on git with a real process agent: per
// team and resource what its Jobs hold, its nominal quota and what it borrows, and the Jobs that
// wait with the reason.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { ProcessRuntime } from "../../../operators/agent/runtimes/process/index.ts";
import type { Job } from "../../../operators/api/index.ts";
import { startAgentOnHub } from "../../helpers/agent-on-hub.ts";
import { launchChromium, waitForAddress } from "../../helpers/chromium.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";
import { onRealServers, waitFor } from "../../helpers/wait-for.ts";

const team = (name: string, nominal: number) => `apiVersion: rlinf.io/v1alpha1
kind: Team
metadata:
  name: ${name}
spec:
  cohort: lab
  weight: 2
  quota:
    - resource: pods
      nominal: "${nominal}"
`;

const marker = `rlark-quota-dash-${process.pid}`;
const job = (name: string, teamName: string) => `apiVersion: rlinf.io/v1alpha1
kind: Job
metadata:
  name: ${name}
spec:
  team: ${teamName}
  tasks:
    - name: main
      role: Env
      agentType: Raw
      raw:
        kind: Deployment
        command: ["sh", "-c", "exec sleep 600 # ${marker}-${name}"]
`;

t.test("the Teams page shows used, nominal, borrowed and who waits for what", async (t) => {
  const { hub } = await startHubOnGit(t, {
    intervalMs: 100,
    dashboard: { sourcePollMs: 100 },
    files: {
      "clusters/local.yaml":
        "apiVersion: rlinf.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: local\nspec:\n  runtime: process\n",
      "teams.yaml": `${team("vision", 1)}---\n${team("robots", 1)}`,
      // a1 within vision's quota, a2 on robots' idle pod, a3 finds the cohort full.
      "jobs.yaml": [job("a1", "vision"), job("a2", "vision"), job("a3", "vision")].join("---\n"),
    },
  });
  await waitFor("Cluster local applied", () => hub.store.get("Cluster", undefined, "local"), onRealServers);
  const stateDir = await mkdtemp(path.join(tmpdir(), "rlark-quota-dash-"));
  const runtime = await ProcessRuntime.open({ stateDir });
  t.teardown(async () => {
    await runtime.stop({ terminatePods: true });
    await rm(stateDir, { recursive: true, force: true });
  });
  await startAgentOnHub(t, hub, "local", { runtime, runtimeKind: "process" });
  const phases = async () =>
    Promise.all(
      ["a1", "a2", "a3"].map(async (n) => (await hub.store.get<Job>("Job", undefined, n))?.status?.phase),
    );
  await waitFor(
    "two Jobs Running, one waiting",
    async () => (await phases()).filter((p) => p === "Running").length === 2,
    onRealServers,
  );
  const waiting = (
    await Promise.all(["a1", "a2", "a3"].map((n) => hub.store.get<Job>("Job", undefined, n)))
  ).find((j) => j?.status?.phase === "Pending");
  t.ok(waiting, "one Job waits");

  if (!hub.dashboard) throw new Error("the hub mounted no dashboard");
  const browser = await launchChromium();
  t.teardown(() => browser.close());
  const page = await (await browser.newContext()).newPage();
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(error.message));
  await page.goto(hub.dashboard.loginUrl(hub.url));
  await waitForAddress(page, /#\/overview$/);
  await page.getByRole("link", { name: "Teams" }).click();
  await waitForAddress(page, /#\/teams$/);
  const cells = (team: string) =>
    page.locator(`[data-team="${team}"] tr[data-resource="pods"] td`).allInnerTexts();
  await waitFor("vision's line", async () => (await cells("vision")).length === 4, onRealServers);
  t.same(await cells("vision"), ["pods", "2", "1", "1"], "vision holds 2 pods of its 1, borrowing 1");
  t.same(await cells("robots"), ["pods", "0", "1", "0"]);
  const row = page.locator(`[data-team="vision"] tr[data-waiting="${waiting?.metadata.name}"] td`);
  t.same(await row.allInnerTexts(), [waiting?.metadata.name, "team vision needs 1 pods, 0 free"]);
  t.same(errors, [], "no script errors");
});
