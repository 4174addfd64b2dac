// Debian's Chromium driven by playwright-core, with the flags that work on a machine without a
// network (without them Chromium hangs on connections it cannot make). playwright gives every
// launch a fresh temporary profile (--user-data-dir) of its own.
import { type Browser, chromium, type Page } from "playwright-core";

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

/**
 * Waits until the page's own address matches `pattern` (a route change by a link, a login or
 * `history.replaceState`), asked of the page itself rather than from playwright's navigation
 * events. On a timeout the error says where the page is and what its login form shows.
 */
export async function waitForAddress(page: Page, pattern: RegExp, timeout = 60_000): Promise<void> {
  const test = `new RegExp(${JSON.stringify(pattern.source)}, ${JSON.stringify(pattern.flags)}).test(location.href)`;
  try {
    await page.waitForFunction(test, undefined, { timeout });
  } catch (error) {
    const at = page.url().replace(/adminToken=[^&]*/, "adminToken=…");
    const shown = await page
      .locator("#login-error")
      .textContent({ timeout: 1_000 })
      .catch(() => null);
    // The page's finished requests (a pending one is not listed): did its login answer, and how?
    const requests = await page
      .evaluate(
        `performance.getEntriesByType("resource").map((e) => e.name.replace(location.origin, "") + " " + e.responseStatus + " in " + Math.round(e.duration) + " ms").join(", ")`,
      )
      .catch(() => "unknown");
    throw new Error(
      `the page never reached ${pattern}: it is at ${at}${shown ? `, its login form says ${JSON.stringify(shown)}` : ""}; its finished requests: ${String(requests).replace(/adminToken=[^&\s]*/g, "adminToken=…")} (${(error as Error).message.split("\n")[0]})`,
    );
  }
}
