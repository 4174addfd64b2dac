// The dashboard's web terminal as a test drives it in Chromium: log in, read what xterm shows, wait
// for the status line. Shared by the web-terminal tests of every runtime.
import type { Page } from "playwright-core";
import type { Test } from "tap";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

export function passwordUserYaml(name: string, roles: string[], hash: string): string {
  return `apiVersion: rlinf.io/v1alpha1\nkind: User\nmetadata:\n  name: ${name}\nspec:\n  roles: [${roles.join(", ")}]\n  passwordHash: "${hash}"\n`;
}

/** What the terminal shows now, row by row (xterm's DOM renderer). */
export const screen = (page: Page) =>
  page
    .locator(".xterm-rows > div")
    .evaluateAll((rows) => rows.map((row) => row.textContent ?? "").join("\n"));

export async function shows(page: Page, pattern: RegExp): Promise<void> {
  await waitFor(
    `the terminal shows ${pattern}`,
    async () => pattern.test(await screen(page)),
    onRealServers,
  ).catch(async (error: Error) => {
    throw new Error(`${error.message}; it shows ${JSON.stringify((await screen(page)).slice(-800))}`);
  });
}

export async function statusIs(page: Page, pattern: RegExp): Promise<string> {
  return waitFor(
    `the terminal status shows ${pattern}`,
    async () => {
      const text = (await page.locator("#terminal-status").textContent()) ?? "";
      return pattern.test(text) ? text : undefined;
    },
    onRealServers,
  );
}

/**
 * Opens the dashboard and logs in. A module of the page that did not arrive makes the page reload
 * itself (web/boot.mts): in whole runs Chromium failed the modules in flight with
 * ERR_NETWORK_CHANGED while other tests added and removed interfaces. When the form still does not come, the error begins with
 * the failed requests and their reasons (a CI summary keeps only a line's start), then what the
 * page threw, logged and held.
 */
export async function logIn(page: Page, url: string, user: string, password: string): Promise<void> {
  const seen: string[] = [];
  page.on("pageerror", (error) => seen.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error") seen.push(`console: ${message.text()}`);
  });
  page.on("requestfailed", (request) => {
    const failure = `${request.failure()?.errorText} ${new URL(request.url()).pathname.split("/").pop()}`;
    // the cause first: the siblings of a module that failed are aborted by the browser
    if (failure.startsWith("net::ERR_ABORTED")) seen.push(failure);
    else seen.unshift(failure);
  });
  page.on("response", (response) => {
    if (response.status() >= 400) seen.push(`${response.status()}: ${response.url()}`);
  });
  const started = Date.now();
  await page.goto(url);
  const loaded = Date.now() - started;
  await page
    .getByLabel("User name")
    .waitFor({ timeout: 90_000 })
    .catch(async (error: Error) => {
      const shown = (await page.content().catch(() => "")).slice(0, 1500);
      throw new Error(
        `${seen.join("; ") || "no errors, no failed requests"}; the page loaded in ${loaded} ms; ${error.message}\npage: ${shown}`,
      );
    });
  // recovered by a reload: said on stderr, where a whole run's log keeps it
  if (seen.length) process.stderr.write(`logIn: the page recovered from: ${seen.join("; ")}\n`);
  await page.getByLabel("User name").fill(user);
  await page.getByLabel("Password", { exact: true }).fill(password);
  await page.getByLabel("Password", { exact: true }).press("Enter");
  await page.locator("#nav a").first().waitFor();
}

/**
 * Narrows the page and checks that the program in the terminal sees fewer columns (`stty size`
 * before and after), then types `exit 3` and checks the status line says so.
 */
export async function resizeThenExit(t: Test, page: Page): Promise<void> {
  await page.keyboard.type("clear; stty size; echo size-one\n");
  await shows(page, /\d+ \d+\s*\n\s*size-one/);
  const before = /(\d+) (\d+)\s*\n\s*size-one/.exec(await screen(page));
  await page.setViewportSize({ width: 700, height: 500 });
  await page.keyboard.type("clear; stty size; echo size-two\n");
  await shows(page, /\d+ \d+\s*\n\s*size-two/);
  const after = /(\d+) (\d+)\s*\n\s*size-two/.exec(await screen(page));
  t.ok(before && after, "stty printed the sizes");
  t.ok(
    Number(after?.[2]) < Number(before?.[2]),
    `the program sees fewer columns (${before?.[2]} -> ${after?.[2]})`,
  );
  await page.keyboard.type("exit 3\n");
  t.equal(await statusIs(page, /exited/), "exited with code 3");
}
