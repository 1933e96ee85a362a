/**
 * The headless Chromium every browser test of the console and the docs drives (Debian's
 * `chromium`; the tests skip without it): one set of flags, a fresh profile each.
 */
import { existsSync } from "node:fs";
import { type BrowserContext, chromium } from "playwright-core";

/** Where Debian installs Chromium. */
export const CHROMIUM = "/usr/bin/chromium";

/** Whether this machine has it (the browser tests are skipped without it). */
export const hasChromium = existsSync(CHROMIUM);

/**
 * Headless Chromium with its profile (`--user-data-dir`) in the empty folder `profile`, which
 * playwright takes as `launchPersistentContext`'s; no network of its own, no first-run pages.
 */
export function launchChromium(profile: string): Promise<BrowserContext> {
  return chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
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
