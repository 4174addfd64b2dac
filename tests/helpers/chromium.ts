// Debian's Chromium driven by playwright-core, with the flags that work on a machine without a
// network (without them Chromium hangs on connections it cannot make). playwright gives every
// launch a fresh temporary profile (--user-data-dir) of its own.
import { type Browser, chromium, type Page } from "playwright-core";
import { claimNumber } from "./claim-number.ts";
import { waitFor } from "./wait-for.ts";

/**
 * One Chromium at a time on this machine. Test files run two at a time, and in three whole runs
 * the dashboard's browser test failed only while the other dashboard test's Chromium ran beside
 * it: once a fresh context's page loaded half its modules and none of the rest. Each of these
 * tests holds its browser for seconds, so taking turns costs little.
 */
async function takeTurn(): Promise<() => void> {
  // 1,500 tries 200 ms apart: another test's Chromium may hold the turn for up to 5 minutes.
  return waitFor(
    "a turn at Chromium (another test's browser is open)",
    () => {
      try {
        return claimNumber("chromium", 0, 1).release;
      } catch {
        return undefined;
      }
    },
    { attempts: 1500, everyMs: 200 },
  );
}

export async function launchChromium(): Promise<Browser> {
  const release = await takeTurn();
  try {
    const browser = await launch();
    browser.on("disconnected", release);
    return browser;
  } catch (error) {
    release();
    throw error;
  }
}

function launch(): Promise<Browser> {
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
 * events. On a timeout the error says where the page is, what its login form shows and which of
 * its requests finished.
 */
export async function waitForAddress(page: Page, pattern: RegExp): Promise<void> {
  // page.evaluate, not waitForFunction: the dashboard's CSP forbids the eval that polls a string.
  let at = "";
  try {
    await waitFor(
      `the page at ${pattern}`,
      async () => {
        at = String(await page.evaluate("location.href"));
        return pattern.test(at);
      },
      { attempts: 1200, everyMs: 50 },
    );
  } catch (error) {
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
    const redact = (text: string) => text.replace(/code=[^&\s]*/g, "code=…");
    throw new Error(
      redact(
        `the page never reached ${pattern}: it is at ${at || page.url()}${shown ? `, its login form says ${JSON.stringify(shown)}` : ""}; its finished requests: ${String(requests)} (${(error as Error).message.split("\n")[0]})`,
      ),
    );
  }
}
