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

export async function logIn(page: Page, url: string, user: string, password: string): Promise<void> {
  await page.goto(url);
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
