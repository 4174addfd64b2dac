// The dashboard in a real Chromium (Debian's, driven by playwright-core) against a real hub on
// the example repository: log in, every page, live updates from git and from the store, refusals.
// One browser for the whole file. RLARK_SCREENSHOTS=1 also saves a screenshot of every page under
// docs/dashboard/. What agents would report comes from a fixture (agent-state.ts) for what cannot
// run here; real-state.test.ts shows what real agents report.
import path from "node:path";
import type { Page } from "playwright-core";
import t from "tap";
import { exampleFiles, exampleRepository, startDashboardHub } from "../../dashboard/dashboard-hub.ts";
import { launchChromium, waitForAddress } from "../../helpers/chromium.ts";
import { onRealServers, waitFor } from "../../helpers/wait-for.ts";
import { reportAgentState } from "./agent-state.ts";

const SCREENSHOTS = process.env.RLARK_SCREENSHOTS
  ? path.join(import.meta.dirname, "..", "..", "..", "docs", "dashboard")
  : undefined;

async function shot(page: Page, name: string) {
  if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`) });
}

t.test("the dashboard in a browser", async (t) => {
  const git = await exampleRepository(t);
  const running = await startDashboardHub(t, git, {
    repoUrl: "https://github.com/lab/manifests.git",
  });
  // Until the restart test; after it, running.hub is the new one.
  const { hub } = running;
  await waitFor(
    "examples applied",
    async () => (await hub.store.get("Addon", "agent-shanghai-edge", "embodied-runtime")) !== undefined,
    onRealServers,
  );
  await reportAgentState(hub.store);

  const browser = await launchChromium();
  t.teardown(() => browser.close());
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const errors: string[] = [];
  // The page's own files (the favicon a browser asks for unprompted, assets) never fail: a 401
  // there is a console error on every page. The API's refusals are tested on purpose below.
  const failedFiles: string[] = [];
  const watchFiles = (p: Page) => {
    p.on("response", (response) => {
      if (response.status() >= 400 && !new URL(response.url()).pathname.startsWith("/api/"))
        failedFiles.push(`${response.status()} ${response.url()}`);
    });
    // A request with no answer at all (a reset connection) is no response: listed with the
    // reason. One the page itself gave up (a reload, a sibling module that failed) is not.
    p.on("requestfailed", (request) => {
      const reason = request.failure()?.errorText ?? "failed";
      if (!new URL(request.url()).pathname.startsWith("/api/") && reason !== "net::ERR_ABORTED")
        failedFiles.push(`${reason} ${request.url()}`);
    });
    p.on("pageerror", (error) => errors.push(error.message));
  };
  watchFiles(page);

  await t.test("without a session the page asks to log in, and the API refuses", async (t) => {
    await page.goto(hub.url);
    await page.getByLabel("User name").waitFor();
    t.match(page.url(), /#\/login$/);
    const status = await page.evaluate(async () => (await fetch("/api/v1/events")).status);
    t.equal(status, 401, "no token, no events");
    const api = await page.evaluate(async () => (await fetch("/api/v1/rlinf.io/v1alpha1/jobs")).status);
    t.equal(api, 401, "no token, no objects");
    await shot(page, "login");
  });

  await t.test("a wrong password is refused with a message", async (t) => {
    await page.getByLabel("User name").fill("carol");
    await page.getByLabel("Password", { exact: true }).fill("wrong");
    const answer = page.waitForResponse((r) => r.url().endsWith("/api/v1/auth/login"));
    await page.getByRole("button", { name: "Log in" }).first().click();
    t.equal((await answer).status(), 401);
    await page.getByRole("alert").filter({ hasText: "wrong user name or password" }).waitFor();
    t.match(page.url(), /#\/login$/, "still on the login page");
  });

  await t.test("the right password opens the overview with the hub's state", async (t) => {
    await page.getByLabel("Password", { exact: true }).fill("correct horse");
    await page.getByLabel("Password", { exact: true }).press("Enter");
    await page.locator("#synced-revision").waitFor();
    const revision = (await git.git("rev-parse", "HEAD")).trim();
    await waitFor(
      "synced revision shown",
      async () => (await page.locator("#synced-revision").textContent()) === revision.slice(0, 12),
      onRealServers,
    );
    t.equal(await page.locator("#clusters-online").textContent(), "1");
    t.equal(
      await page.locator("#clusters-offline").textContent(),
      "2",
      "shanghai-edge reports offline, local never reported",
    );
    t.equal(await page.locator('[data-phase-count="Running"]').textContent(), "1");
    t.equal(
      await page.evaluate(() => sessionStorage.getItem("rlark.session") !== null),
      true,
      "token in sessionStorage",
    );
    await page.locator("#connection.live").waitFor();
    await shot(page, "overview");
  });

  await t.test("jobs: list with phase, tasks, clusters and source link; filters; detail", async (t) => {
    await page.getByRole("link", { name: "Jobs", exact: true }).click();
    const row = page.locator('tr[data-job="ppo-cartpole-v1"]');
    await row.waitFor();
    t.match(await row.textContent(), /Running.*1\/2.*beijing/s);
    const source = row.locator("a.source");
    const href = await source.getAttribute("href");
    const stored = await hub.store.get("Job", undefined, "ppo-cartpole-v1");
    const revision = stored?.metadata.annotations?.["rlark.io/source-revision"];
    t.match(revision, /^[0-9a-f]{40}$/);
    t.equal(
      href,
      `https://github.com/lab/manifests/blob/${revision}/jobs/ppo-cartpole-v1.yaml#L2`,
      "file and line in the repo's web view",
    );
    await page.getByLabel("Phase").selectOption("Succeeded");
    await page.locator('tr[data-job="ppo-cartpole-v1"]').waitFor({ state: "detached" });
    t.match(page.url(), /phase=Succeeded/, "the filter is in the address");
    await page.getByLabel("Phase").selectOption("");
    // Redrawn with every filter: let it settle before typing into the next field.
    await page.locator('tr[data-job="ppo-cartpole-v1"]').waitFor();
    await page.getByLabel("Label").fill("env=cartpole");
    await waitForAddress(page, /label=env%3Dcartpole/);
    await page
      .locator("#jobs-count")
      .filter({ hasText: /^2 of / })
      .waitFor();
    t.equal(
      await page.evaluate('document.activeElement?.id === "filter-label"'),
      true,
      "focus survives redraws",
    );
    await shot(page, "jobs");
    await page.getByRole("link", { name: "ppo-cartpole-v1", exact: true }).click();
    const task = page.locator('tr[data-task="actor-head"]');
    await task.waitFor();
    const text = (await task.textContent()) ?? "";
    t.match(text, /gpu-node-01/, "node");
    t.match(text, /172\.16\.3\.7/, "pod IP");
    t.match(text, /137/, "exit code");
    t.match(await page.locator("main").textContent(), /HeadRunning/, "conditions on the timeline");
    // No agent serves this test's cluster: asking for a pod's log shows the hub's answer why.
    await task.getByRole("button", { name: "show log" }).first().click();
    await task.locator(".log-error").waitFor();
    t.match(
      await task.locator(".log-error").textContent(),
      /no agent connected/,
      "log request reached the hub",
    );
    await shot(page, "job-detail");
  });

  await t.test("workflows: the DAG with each node's phase and run", async (t) => {
    await page.getByRole("link", { name: "Workflows" }).click();
    const train = page.locator('svg.dag g.dag-node[data-node="train"]');
    await train.waitFor();
    t.match(await train.textContent(), /train.*Running/s);
    t.match((await train.getAttribute("class")) ?? "", /phase-Running/);
    t.equal(await page.locator("svg.dag path.edge").count(), 2, "collect → train → deploy-to-robot");
    await shot(page, "workflows");
  });

  await t.test("clusters: bars, disk warning, cordon, control plane apart, filters", async (t) => {
    await page.getByRole("link", { name: "Clusters" }).click();
    const node = page.locator('article[data-node="gpu-node-01"]');
    await node.waitFor();
    const gpu = node.getByRole("meter", { name: "GPU" });
    t.equal(await gpu.getAttribute("value"), "6");
    t.equal(await gpu.getAttribute("max"), "8");
    t.match(
      await node.locator('[data-resource="Disk"]').textContent(),
      /disk nearly full/,
      "95 % used warns",
    );
    t.notMatch(
      await page.locator('article[data-node="gpu-node-02"] [data-resource="Disk"]').textContent(),
      /nearly full/,
    );
    t.match(await page.locator('article[data-node="gpu-node-02"]').textContent(), /cordoned/);
    t.match(await node.textContent(), /A100/, "GPU model");
    t.match(
      await node.locator("details.workers").textContent(),
      /1 pod.*ppo-cartpole-v1.*172\.16\.3\.7/s,
      "its workers",
    );
    const images = node.locator('details[data-images="gpu-node-01"]');
    t.match(await images.locator("summary").textContent(), /Images: 1 present · 1 failed/);
    t.equal(await images.getAttribute("open"), "", "a failure opens the list");
    t.match(
      await images.locator('[data-image="registry.example.com/rlinf/robot:2"]').textContent(),
      /Failed.*3 failed in a row.*connection refused/s,
      "the failed image with the runtime's message",
    );
    t.equal(await page.locator('details[data-images="gpu-node-02"]').count(), 0, "none without images");
    t.match(await page.locator('article[data-node="edge-arm-01"]').textContent(), /Franka.*/, "device model");
    t.equal(
      await page.locator('article[data-node="master-01"]').count(),
      0,
      "control plane is not a worker card",
    );
    t.equal(await page.locator('[data-control-plane="master-01"]').count(), 1, "but is listed apart");
    await shot(page, "clusters");
    await page.getByLabel("Category").selectOption("robot");
    await page.locator('article[data-node="gpu-node-01"]').waitFor({ state: "detached" });
    t.equal(await page.locator('article[data-node="edge-arm-01"]').count(), 1);
    await page.getByLabel("Category").selectOption("");
    await page.getByLabel("City").selectOption("beijing");
    await page.locator('article[data-node="edge-arm-01"]').waitFor({ state: "detached" });
    t.equal(await page.locator('article[data-node="gpu-node-01"]').count(), 1);
  });

  await t.test("domains and addons", async (t) => {
    await page.getByRole("link", { name: "Domains" }).click();
    const domain = page.locator('section[data-domain="ppo-experiment-1"]');
    await domain.waitFor();
    t.match(await domain.textContent(), /10\.0\.1\.2.*ppo-cartpole-v1.*actor-head/s, "allocations");
    await shot(page, "domains");
    await page.getByRole("link", { name: "Addons" }).click();
    const addon = page.locator('tr[data-addon="embodied-runtime"]');
    await addon.waitFor();
    t.match(await addon.textContent(), /shanghai-edge.*Pending.*wanted 0\.1\.0/s, "not reported yet");
    await shot(page, "addons");
  });

  await t.test("keyboard: a skip link to the content, then the page's links in order", async (t) => {
    await page.goto(`${hub.url}/#/workflows`);
    await page.reload(); // start from the top of a fresh page, as a keyboard user arriving does
    await page.locator("svg.dag").waitFor();
    await page.keyboard.press("Tab");
    t.equal(await page.evaluate("document.activeElement?.className"), "skip");
    await page.keyboard.press("Enter");
    t.equal(await page.evaluate("document.activeElement?.id"), "page", "focus on the content");
    t.match(page.url(), /#\/workflows$/, "the route stays");
    await page.keyboard.press("Tab");
    t.match(
      await page.evaluate("document.activeElement?.textContent"),
      /workflows\/collect-train-deploy\.yaml/,
    );
    await page.keyboard.press("Tab");
    await page.keyboard.press("Enter");
    await waitForAddress(page, /#\/jobs\/collect-train-deploy-collect$/);
    t.pass("a Job reached and opened with the keyboard alone");
  });

  await t.test("live: a store status update and a git push show up without a reload", async (t) => {
    await page.getByRole("link", { name: "Jobs", exact: true }).click();
    await page.getByLabel("Label").fill("");
    await page.locator('tr[data-job="cartpole-local"]').waitFor();
    const navigations: string[] = [];
    page.on("framenavigated", (frame) => navigations.push(frame.url()));
    // A keyboard user on a link keeps the focus there while the page redraws around it.
    await page.locator('tr[data-job="cartpole-local"] a[href="#/jobs/cartpole-local"]').focus();
    const job = (await hub.store.get("Job", undefined, "cartpole-local"))!;
    await hub.store.updateStatus({ ...job, status: { phase: "Failed", run: 2 } });
    await page.locator('tr[data-job="cartpole-local"] .phase-Failed').waitFor();
    t.equal(
      await page.evaluate("document.activeElement?.getAttribute('href')"),
      "#/jobs/cartpole-local",
      "the focused link keeps the focus through the redraw",
    );
    const pushed = (await exampleFiles())["jobs/cartpole-local.yaml"]!.replace(
      "name: cartpole-local",
      "name: cartpole-pushed",
    );
    await git.commit({ "jobs/cartpole-pushed.yaml": pushed });
    await page.locator('tr[data-job="cartpole-pushed"]').waitFor();
    t.same(
      navigations.filter((u) => !u.includes("#/jobs")),
      [],
      "no reload",
    );
    t.pass("both changes arrived live");
  });

  await t.test("a lost connection shows reconnecting and resumes", async (t) => {
    await page.locator("#connection.live").waitFor();
    const restarted = running.restart();
    await page.locator("#connection.reconnecting").waitFor();
    t.pass("reconnecting shown while the hub is away");
    await restarted;
    await page.locator("#connection.live").waitFor();
    const job = (await running.hub.store.get("Job", undefined, "cartpole-local"))!;
    await running.hub.store.updateStatus({ ...job, status: { phase: "Stopped", run: 2 } });
    await page.locator('tr[data-job="cartpole-local"] .phase-Stopped').waitFor();
    t.pass("the session survives the restart and changes flow again");
  });

  await t.test("the one-click admin URL logs in once and leaves no code in the address", async (t) => {
    const admin = await context.newPage();
    const link = running.dashboard.loginUrl(running.hub.url);
    t.notOk(link.includes(running.hub.adminToken), "the link holds no admin token");
    await admin.goto(link);
    await waitForAddress(admin, /#\/overview$/);
    t.notMatch(admin.url(), /code=/);
    // Another tab (its own sessionStorage) with the same link: the code is spent.
    const reused = await context.newPage();
    await reused.goto(link);
    await reused.locator("#login-error", { hasText: /used already/ }).waitFor();
    t.notMatch(reused.url(), /code=/, "a refused code leaves the address too");
    await reused.close();
    await admin.locator("#synced-revision").waitFor();
    t.equal(
      await admin.evaluate("getComputedStyle(document.querySelector('main')).outlineStyle"),
      "none",
      "no focus ring around the whole page after the login",
    );
    await admin.close();
  });

  await t.test("readable at phone width and in dark mode", async (t) => {
    const phone = await browser.newContext({ viewport: { width: 375, height: 812 }, colorScheme: "dark" });
    const mobile = await phone.newPage();
    watchFiles(mobile);
    await mobile.goto(running.dashboard.loginUrl(running.hub.url));
    await waitForAddress(mobile, /#\/overview$/);
    await mobile.goto(`${running.hub.url}/#/clusters`);
    await mobile.locator('article[data-node="gpu-node-01"]').waitFor();
    // Strings, not functions: tests are type-checked without the DOM library.
    const overflow = Number(
      await mobile.evaluate("document.documentElement.scrollWidth - window.innerWidth"),
    );
    t.ok(overflow <= 0, `no sideways scrolling of the page (${overflow}px)`);
    const background = await mobile.evaluate("getComputedStyle(document.body).backgroundColor");
    t.equal(background, "rgb(15, 19, 24)", "dark colours");
    if (SCREENSHOTS) await mobile.screenshot({ path: path.join(SCREENSHOTS, "clusters-phone-dark.png") });

    // The Jobs table is wider than a phone: it scrolls inside its box, the page does not.
    await mobile.goto(`${running.hub.url}/#/jobs`);
    await mobile.locator('tr[data-job="ppo-cartpole-v1"]').waitFor();
    const box = JSON.parse(
      String(
        await mobile.evaluate(`(() => {
          const box = document.querySelector("main .table-box");
          const before = box.scrollWidth - box.clientWidth;
          box.scrollLeft = box.scrollWidth;
          const source = [...box.querySelectorAll("th")].at(-1).getBoundingClientRect();
          return JSON.stringify({ overflowX: getComputedStyle(box).overflowX, more: before, scrolled: box.scrollLeft,
            sourceRight: source.right, width: innerWidth, page: document.documentElement.scrollWidth - innerWidth });
        })()`),
      ),
    ) as Record<string, number | string>;
    t.equal(box.overflowX, "auto");
    t.ok(
      Number(box.more) > 0 && Number(box.scrolled) > 0,
      `the table scrolls sideways (${JSON.stringify(box)})`,
    );
    t.ok(Number(box.sourceRight) <= Number(box.width), "scrolled, its last column comes into view");
    t.ok(Number(box.page) <= 0, "the page itself does not scroll sideways");
    await phone.close();
  });

  t.same(errors, [], "no script errors");
  t.same(failedFiles, [], "no request of the page's own fails (a favicon answering 401 did)");
});
