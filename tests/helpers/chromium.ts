// Debian's Chromium driven by playwright-core, with the flags that work on a machine without a
// network (without them Chromium hangs on connections it cannot make). playwright gives every
// launch a fresh temporary profile (--user-data-dir) of its own.
import { type Browser, chromium } from "playwright-core";

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
