// A module of the dashboard that does not arrive (the connection dropped on its way, made here by
// failing its request in Chromium) leaves no page stuck on "Loading…": boot.mts reloads the page,
// and after two reloads in a row that fail too it says the code did not load.
import type { Route } from "playwright-core";
import t from "tap";
import { hashPassword } from "../../../operators/dashboard/index.ts";
import { passwordUserYaml } from "../../access/web-terminal-page.ts";
import { FAST } from "../../dashboard/dashboard-hub.ts";
import { launchChromium } from "../../helpers/chromium.ts";
import { startHubOnGit } from "../../helpers/hub-on-git.ts";

t.test("a page whose module did not arrive reloads itself, then says so", async (t) => {
  const password = await hashPassword("alice pw", FAST);
  const { hub } = await startHubOnGit(t, {
    dashboard: true,
    files: { "users.yaml": passwordUserYaml("alice", ["user"], password) },
  });
  const browser = await launchChromium();
  t.teardown(() => browser.close());

  /** A context whose first `failures` requests for page-clusters.mts fail as a reset connection would. */
  const failing = async (failures: number) => {
    const context = await browser.newContext();
    t.teardown(() => context.close());
    let failed = 0;
    await context.route("**/page-clusters.mts", (route: Route) => {
      if (failed < failures) {
        failed++;
        return route.abort("connectionreset");
      }
      return route.continue();
    });
    const page = await context.newPage();
    let documents = 0;
    page.on("request", (request) => {
      if (request.resourceType() === "document") documents++;
    });
    return { page, failed: () => failed, documents: () => documents };
  };

  await t.test("one failed module: the page reloads and the login form comes", async (t) => {
    const { page, failed, documents } = await failing(1);
    await page.goto(hub.url);
    await page.getByLabel("User name").waitFor({ timeout: 30_000 });
    t.equal(failed(), 1, "the module's first request failed");
    t.equal(documents(), 2, "the page was loaded again once");
    await page.getByLabel("User name").fill("alice");
    await page.getByLabel("Password", { exact: true }).fill("alice pw");
    await page.getByLabel("Password", { exact: true }).press("Enter");
    await page.locator("#nav a").first().waitFor();
    t.pass("logged in after the reload");
  });

  await t.test("a module that never arrives: two reloads, then the page says so", async (t) => {
    const { page, failed, documents } = await failing(Number.POSITIVE_INFINITY);
    await page.goto(hub.url);
    const alert = page.getByRole("alert");
    await alert.waitFor({ timeout: 30_000 });
    t.match(await alert.textContent(), /did not load.*Reload the page/);
    t.equal(documents(), 3, "the first load and two reloads");
    t.equal(failed(), 3, "the module was asked for on each");
    t.equal(await page.getByLabel("User name").count(), 0, "no form drawn by half a page");
    // a later visit that loads starts its count afresh: the marker is gone
    t.equal(await page.evaluate(() => sessionStorage.getItem("rlark-dashboard-reloads")), null);
  });
});
