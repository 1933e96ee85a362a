/**
 * The headless Chromium every browser test of the console and the docs drives (Debian's
 * `chromium`; the tests skip without it, and on the remote libSQL pass): one set of flags, a
 * fresh profile each.
 */
import { existsSync } from "node:fs";
import { type BrowserContext, chromium } from "playwright-core";
import { TEST_TARGET } from "./pg-harness.ts";

/** Where Debian installs Chromium. */
export const CHROMIUM = "/usr/bin/chromium";

/**
 * Whether this pass of the suite runs the browser tests: this machine has Chromium (they are
 * skipped without it), and the pass is on the embedded file or on PostgreSQL. The remote libSQL
 * pass runs the embedded file's very SQL over another transport, which the API's tests of that
 * pass cover; the pages would show the same answers again, for a minute of the suite.
 */
export const browserPass = existsSync(CHROMIUM) && TEST_TARGET !== "libsql";

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
