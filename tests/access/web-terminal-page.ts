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
 * Opens the dashboard and logs in. The form is drawn by the page's module script: when it does not
 * come (twice in whole runs under load, cause not yet seen) the error says what the page held,
 * what it threw, what it logged and which requests failed, so the next time names the cause.
 */
export async function logIn(page: Page, url: string, user: string, password: string): Promise<void> {
  const seen: string[] = [];
  page.on("pageerror", (error) => seen.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error") seen.push(`console: ${message.text()}`);
  });
  page.on("requestfailed", (request) =>
    seen.push(`failed: ${request.url()}: ${request.failure()?.errorText}`),
  );
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
        `${error.message}\nthe page loaded in ${loaded} ms; ${seen.join("; ") || "no errors, no failed requests"}\npage: ${shown}`,
      );
    });
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
