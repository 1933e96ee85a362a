/**
 * `GET /docs` in a real headless browser (Debian's chromium through playwright-core) against a
 * real listening server: the reference renders from /openapi.json with the Scalar bundle the
 * service serves itself, lists the operations, and nothing fails: no page error, no console
 * error, no failed request, and no request leaves the service (no CDN, fonts or telemetry).
 *
 * Skipped only when /usr/bin/chromium is absent (CI: `apt-get install -y chromium`).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BrowserContext } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { browserPass, launchChromium } from "./chromium.ts";
import { makeLedger, type TestLedger } from "./harness.ts";

describe("GET /docs in a headless browser", () => {
  let t: TestLedger;
  let base: string;
  let browser: BrowserContext;
  let profile: string;

  beforeAll(async () => {
    if (!browserPass) return;
    t = await makeLedger();
    base = await t.listen();
    profile = mkdtempSync(join(tmpdir(), "ledger-chromium-"));
    // A fresh profile (--user-data-dir), which playwright takes as launchPersistentContext's.
    browser = await launchChromium(profile);
  }, 60_000);

  afterAll(async () => {
    if (!browserPass) return;
    await browser?.close();
    await t?.close();
    rmSync(profile, { recursive: true, force: true });
  });

  it.skipIf(!browserPass)(
    "renders the reference with the operations, and nothing fails or leaves the service",
    async () => {
      const page = await browser.newPage();
      const problems: string[] = [];
      const requested: string[] = [];
      page.on("pageerror", (err) => problems.push(`pageerror: ${err.message}`));
      // Errors, and warnings too: Scalar warns when it finds the document invalid.
      page.on("console", (msg) => {
        if (msg.type() === "error" || msg.type() === "warning") {
          problems.push(`console ${msg.type()}: ${msg.text()} (${msg.location().url})`);
        }
      });
      page.on("requestfailed", (req) =>
        problems.push(`request failed: ${req.url()} ${req.failure()?.errorText ?? ""}`),
      );
      page.on("request", (req) => requested.push(req.url()));
      page.on("response", (res) => {
        if (res.status() >= 400) problems.push(`HTTP ${res.status()}: ${res.url()}`);
      });

      const res = await page.goto(`${base}/docs`, { waitUntil: "load" });
      expect(res?.status()).toBe(200);

      // Rendered: the operations' summaries appear once Scalar has loaded /openapi.json.
      for (const summary of [
        "Create an account",
        "Hold credits before an expensive operation",
        "Record LLM usage; the cost is computed from the model's current prices",
        "Estimate a call's cost in USD and in credits without recording usage",
      ]) {
        await page.getByText(summary, { exact: true }).first().waitFor({ timeout: 20_000 });
      }
      await page.getByText("Credit Ledger API").first().waitFor();
      // The paths of the operations (and their examples) are in the rendered reference.
      const text = (await page.locator("body").textContent()) ?? "";
      for (const path of ["/v1/accounts/create", "/v1/reservations/confirm", "/v1/models"]) {
        expect(text).toContain(path);
      }
      // The documented examples are shown (the request example of "Create an account"). Scalar
      // goes on rendering the reference after the summaries appear: on this 2-core machine with
      // the suite running beside it, 10.6 and 16.3 s were measured, past the 10 s this waited
      // once. The wait is for the rendering, not a bound on it.
      await page
        .getByText(/"externalId": "customer-42"/)
        .first()
        .waitFor({ timeout: 30_000 });
      await page.close();

      expect(problems).toEqual([]);
      const own = requested.filter((url) => url.startsWith(`${base}/`) || url.startsWith("data:"));
      expect(requested.filter((url) => !own.includes(url))).toEqual([]);
      expect(requested).toContain(`${base}/docs/scalar.js`);
      expect(requested).toContain(`${base}/openapi.json`);
    },
    60_000,
  );
});
