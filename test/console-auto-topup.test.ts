/**
 * An account's automatic top-up in the operator console (contract section 26, "The console
 * shows an account's auto top-up and its last attempts"; docs/api.md#automatic-top-up), in
 * headless Chromium at 1280 px and at 390 px against a real listening server. The project is
 * connected to Stripe with a secret key and has a credit price; no worker runs, so no request
 * leaves the machine and a queued attempt stays `pending`.
 *
 * The walk: a buyer's top-up is set through the console's form, behind a confirmation (an
 * amount too cheap to charge is refused as a sentence); a deduction made in the console crosses
 * its threshold past its monthly limit (a failed attempt, "monthly limit reached"); turned off,
 * then on again without a limit while below the threshold, it queues a pending attempt at once.
 * A pool without a Stripe customer is refused (`STRIPE_NOT_CONFIGURED`), a member funded by it
 * gets only a note, an account that failed three times in a row shows that it turned itself
 * off, and one with 21 attempts pages them. Nothing scrolls sideways; nothing fails but the two
 * refusals the walk asks for.
 *
 * The browser part is skipped only when /usr/bin/chromium is absent.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildConsole } from "../scripts/build-console.ts";
import { autoTopupRoutes } from "../src/accounts/auto-topup-routes.ts";
import { accountRoutes } from "../src/accounts/routes.ts";
import { setConsoleAssets } from "../src/console/assets.ts";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import { projectRoutes } from "../src/projects/routes.ts";
import { connectStripe } from "../src/stripe/settings.ts";
import { browserPass, launchChromium } from "./chromium.ts";
import { makeLedger, type TestLedger } from "./harness.ts";

const WIDTHS = [1280, 390];
/** Off/on cycles of the paged account, after its first attempt: 21 attempts in all. */
const CYCLES = 20;

/** The accounts of one width's walk, by their ids. */
interface Walk {
  buyer: string;
  pool: string;
  kid: string;
  tired: string;
  busy: string;
}

describe("an account's automatic top-up in the console at 1280 px and 390 px", () => {
  let t: TestLedger;
  let base: string;
  let browser: BrowserContext;
  let profile: string;
  const walks = new Map<number, Walk>();

  const create = async (externalId: string, extra: Record<string, string> = {}) =>
    (await t.call(accountRoutes.create, { body: { externalId, ...extra } })).account.id;
  const setTopUp = (body: Record<string, unknown>) => t.call(autoTopupRoutes.set, { body });
  const setPrice = (creditsPerUsd: number | null) =>
    t.call(projectRoutes.update, { body: { creditsPerUsd } });
  const attemptsOf = async (accountId: string) =>
    (await t.call(autoTopupRoutes.attempts, { query: { accountId, limit: 200 } })).attempts;
  const topUpOf = async (accountId: string) =>
    (await t.call(autoTopupRoutes.get, { query: { accountId } })).autoTopup;

  beforeAll(async () => {
    t = await makeLedger();
    await connectStripe(t.ledger.queue, "test", {
      webhookSecret: "whsec_test_console_0123456789",
      secretKey: "sk_test_console_0123456789",
    });
    // 100 credits a dollar: 100 credits cost $1.00.
    await setPrice(100);
    // Per width: a buyer (Stripe customer, 200 credits) whose top-up the walk sets; a pool of
    // 100 without a Stripe customer and its member; an account whose top-up fails three times
    // in a row (below); and one whose top-up, turned on 21 times below its threshold with a
    // monthly limit under its amount, failed 21 times at once (`monthly_limit`).
    for (const width of WIDTHS) {
      const buyer = await create(`buyer-${width}`, { stripeCustomerId: `cus_buyer${width}` });
      await t.call(ledgerRoutes.add, { body: { accountId: buyer, amount: 200 } });
      const pool = await create(`pool-${width}`);
      await t.call(ledgerRoutes.add, { body: { accountId: pool, amount: 100 } });
      const kid = await create(`kid-${width}`, { parentId: pool });
      const tired = await create(`tired-${width}`, { stripeCustomerId: `cus_tired${width}` });
      await t.call(ledgerRoutes.add, { body: { accountId: tired, amount: 100 } });
      await setTopUp({ accountId: tired, enabled: true, threshold: 50, amount: 100 });
      const busy = await create(`busy-${width}`, { stripeCustomerId: `cus_busy${width}` });
      const busyTopUp = { accountId: busy, threshold: 50, amount: 100, monthlyLimit: 50 };
      await setTopUp({ ...busyTopUp, enabled: true });
      for (let i = 0; i < CYCLES; i++) {
        await setTopUp({ ...busyTopUp, enabled: false });
        await setTopUp({ ...busyTopUp, enabled: true });
      }
      walks.set(width, { buyer, pool, kid, tired, busy });
    }
    // Without a credit price, each write crossing a tired account's threshold queues an attempt
    // that fails at once (`not_configured`); the third in a row turns its top-up off.
    await setPrice(null);
    for (const width of WIDTHS) {
      const { tired } = walks.get(width) as Walk;
      for (let i = 0; i < 3; i++) {
        await t.call(ledgerRoutes.deduct, { body: { accountId: tired, amount: 60 } });
        await t.call(ledgerRoutes.add, { body: { accountId: tired, amount: 60 } });
      }
    }
    await setPrice(100);
    if (!browserPass) return;
    setConsoleAssets(await buildConsole());
    base = await t.listen();
    profile = mkdtempSync(join(tmpdir(), "ledger-chromium-auto-topup-"));
    browser = await launchChromium(profile);
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it("records the attempts the walks show, through the API", async () => {
    for (const width of WIDTHS) {
      const w = walks.get(width) as Walk;
      expect(await topUpOf(w.tired)).toMatchObject({
        enabled: false,
        consecutiveFailures: 3,
        disabledReason: "consecutive_failures",
        toppedUpThisMonth: 0,
        lastAttempt: { status: "failed", reason: "not_configured" },
      });
      expect(await attemptsOf(w.tired)).toHaveLength(3);
      const busy = await attemptsOf(w.busy);
      expect(busy).toHaveLength(CYCLES + 1);
      expect(new Set(busy.map((a) => `${a.status} ${a.reason} ${a.amountCents}`))).toEqual(
        new Set(["failed monthly_limit 100"]),
      );
      expect(await topUpOf(w.busy)).toMatchObject({ enabled: true, consecutiveFailures: 0 });
      expect(await topUpOf(w.buyer)).toBeNull();
    }
  });

  /** How far the page scrolls sideways: 0 when it does not. */
  const sideways = (page: Page) =>
    page.evaluate<number>("document.scrollingElement.scrollWidth - window.innerWidth");

  /** The texts of the cells of the attempts' data rows (the header row left out). */
  const attemptRows = async (section: Locator) => {
    const rows = section.getByRole("table", { name: "Top-up attempts" }).getByRole("row");
    const texts: string[][] = [];
    for (const row of (await rows.all()).slice(1)) {
      texts.push(await row.getByRole("cell").allTextContents());
    }
    return texts;
  };

  /** Waits until the settings' facts read `expected` (Status, Threshold, Amount, …). */
  const factsAre = (section: Locator, expected: string[]) =>
    expect
      .poll(() => section.locator("dl.facts dd").allTextContents(), { timeout: 10_000 })
      .toEqual(expected);

  for (const width of WIDTHS) {
    it.skipIf(!browserPass)(
      `shows and sets an account's automatic top-up and its attempts at ${width} px`,
      async () => {
        const w = walks.get(width) as Walk;
        const page = await browser.newPage();
        await page.setViewportSize({ width, height: 900 });
        const pageErrors: string[] = [];
        const consoleErrors: string[] = [];
        const statuses: string[] = [];
        const posts: { key: string | undefined; body: string | null }[] = [];
        page.on("pageerror", (err) => pageErrors.push(err.message));
        page.on("console", (msg) => {
          if (msg.type() === "error" || msg.type() === "warning") consoleErrors.push(msg.text());
        });
        page.on("request", (req) => {
          if (req.method() === "POST" && req.url() === `${base}/v1/accounts/auto-topup`) {
            posts.push({ key: req.headers()["idempotency-key"], body: req.postData() });
          }
        });
        page.on("response", (res) => {
          if (res.status() >= 400) statuses.push(`${res.status()} ${res.url()}`);
        });
        const widths: Record<string, number> = {};
        const topUp = page.getByRole("region", { name: "Automatic top-up" });
        const adjust = page.getByRole("region", { name: "Adjust credits" });
        const buyer = `buyer-${width}`;
        const fill = async (threshold: string, amount: string, limit: string) => {
          await topUp.getByLabel("Threshold (credits)").fill(threshold);
          await topUp.getByLabel("Amount (credits)").fill(amount);
          await topUp.getByLabel("Monthly limit (credits, optional)").fill(limit);
          await topUp.getByRole("button", { name: "Save" }).click();
        };
        const question = (name: string) => topUp.getByRole("group", { name });
        const done = topUp.getByRole("status");

        // A buyer without a top-up: none set, no attempts, a form to set one (on by default).
        await page.goto(`${base}/console#/accounts/${w.buyer}`, { waitUntil: "load" });
        await page.getByLabel("API key").fill(t.key);
        await page.getByRole("button", { name: "Sign in" }).click();
        await page.getByRole("heading", { name: buyer, level: 1 }).waitFor();
        await topUp.getByText("No automatic top-up set.").waitFor();
        await topUp.getByText("No attempts.").waitFor();
        expect(await topUp.getByLabel("On", { exact: true }).isChecked()).toBe(true);
        widths.unset = await sideways(page);

        // 10 credits cost 10 cents, less than Stripe charges: refused, as a sentence.
        await fill("50", "10", "");
        const tooCheap = question(
          `Turn on the automatic top-up of ${buyer}: buy 10 credits whenever its available ` +
            "credits fall below 50, with no monthly limit?",
        );
        await tooCheap.getByRole("button", { name: "Confirm" }).click();
        const refused = topUp.getByRole("alert");
        await refused.getByText("The service could not accept what was sent.").waitFor();
        expect(await refused.getAttribute("data-code")).toBe("VALIDATION_ERROR");
        expect(await refused.textContent()).toContain(
          "must cost between $0.50 and $999,999.99 at the project's credit price",
        );
        widths.refused = await sideways(page);

        // 100 credits at most 50 a month: cancelled once (nothing sent), then confirmed.
        await fill("50", "100", "50");
        const limited = question(
          `Turn on the automatic top-up of ${buyer}: buy 100 credits whenever its available ` +
            "credits fall below 50, at most 50 credits a month (UTC)?",
        );
        await limited.waitFor();
        widths.confirm = await sideways(page);
        await limited.getByRole("button", { name: "Cancel" }).click();
        await limited.waitFor({ state: "detached" });
        expect(posts).toHaveLength(1);
        await topUp.getByRole("button", { name: "Save" }).click();
        await limited.getByRole("button", { name: "Confirm" }).click();
        await done.getByText("Saved: the automatic top-up is on.", { exact: true }).waitFor();
        await factsAre(topUp, ["on", "50", "100", "50", "0", "0"]);
        expect(posts[1]?.body).toBe(
          `{"accountId":"${w.buyer}","enabled":true,"threshold":50,"amount":100,"monthlyLimit":50}`,
        );
        expect(posts[1]?.key).toMatch(/^console-[0-9a-f]{32}$/);
        await topUp.getByText("No attempts.").waitFor();

        // A deduction from 200 to 40 crosses the threshold: its attempt would pass the monthly
        // limit, so it failed at once.
        await adjust.getByLabel("Amount (credits)").fill("160");
        await adjust.getByRole("button", { name: "Deduct credits" }).click();
        await adjust.getByRole("button", { name: "Confirm" }).click();
        await adjust.getByRole("status").waitFor();
        const monthly = topUp.getByRole("row").filter({ hasText: "monthly limit reached" });
        await monthly.waitFor();
        expect(await attemptRows(topUp)).toEqual([
          [
            expect.stringMatching(/ UTC$/),
            "failed",
            "monthly limit reached",
            "100",
            "$1.00 USD",
            "–",
            expect.stringMatching(/ UTC$/),
          ],
        ]);
        expect(await monthly.getByTitle("monthly_limit").count()).toBe(1);
        await factsAre(topUp, ["on", "50", "100", "50", "0", "0"]);
        widths.failed = await sideways(page);

        // Turned off (its settings kept), then on again without a limit while 40 < 50: an
        // attempt is queued at once, and stays pending (no worker runs here).
        await topUp.getByLabel("On", { exact: true }).uncheck();
        await topUp.getByRole("button", { name: "Save" }).click();
        await question(
          `Turn off the automatic top-up of ${buyer}? Its threshold (50), amount (100) and ` +
            "monthly limit (50) are kept.",
        )
          .getByRole("button", { name: "Confirm" })
          .click();
        await done.getByText("Saved: the automatic top-up is off.", { exact: true }).waitFor();
        await factsAre(topUp, ["off", "50", "100", "50", "0", "0"]);
        expect(await topUp.getByLabel("On", { exact: true }).isChecked()).toBe(false);
        await topUp.getByLabel("On", { exact: true }).check();
        await fill("50", "100", "");
        await question(
          `Turn on the automatic top-up of ${buyer}: buy 100 credits whenever its available ` +
            "credits fall below 50, with no monthly limit?",
        )
          .getByRole("button", { name: "Confirm" })
          .click();
        await done
          .getByText(
            "Saved: the automatic top-up is on. Its available credits were below the " +
              "threshold: an attempt to buy 100 credits was queued.",
            { exact: true },
          )
          .waitFor();
        await factsAre(topUp, ["on", "50", "100", "none", "100", "0"]);
        await topUp.getByRole("row").filter({ hasText: "pending" }).waitFor();
        expect((await attemptRows(topUp)).map((cells) => cells.slice(1))).toEqual([
          ["pending", "–", "100", "$1.00 USD", "–", "–"],
          ["failed", "monthly limit reached", "100", "$1.00 USD", "–", expect.any(String)],
        ]);
        await topUp.getByText("Showing 1–2 of 2").waitFor();
        expect(posts.map((p) => p.body)).toEqual([
          `{"accountId":"${w.buyer}","enabled":true,"threshold":50,"amount":10,"monthlyLimit":null}`,
          `{"accountId":"${w.buyer}","enabled":true,"threshold":50,"amount":100,"monthlyLimit":50}`,
          `{"accountId":"${w.buyer}","enabled":false,"threshold":50,"amount":100,"monthlyLimit":50}`,
          `{"accountId":"${w.buyer}","enabled":true,"threshold":50,"amount":100,"monthlyLimit":null}`,
        ]);
        expect(new Set(posts.map((p) => p.key)).size).toBe(4);
        widths.buyer = await sideways(page);

        // A pool without a Stripe customer: turning it on is refused, as a sentence.
        await page.goto(`${base}/console#/accounts/${w.pool}`);
        await page.getByRole("heading", { name: `pool-${width}`, level: 1 }).waitFor();
        await topUp.getByText("No automatic top-up set.").waitFor();
        await fill("10", "100", "");
        await question(
          `Turn on the automatic top-up of pool-${width}: buy 100 credits whenever its ` +
            "available credits fall below 10, with no monthly limit?",
        )
          .getByRole("button", { name: "Confirm" })
          .click();
        await refused
          .getByText(
            "Stripe is not set up for this: the project needs its Stripe key and credit " +
              "price, and the account its Stripe customer.",
          )
          .waitFor();
        expect(await refused.getAttribute("data-code")).toBe("STRIPE_NOT_CONFIGURED");
        expect(await refused.textContent()).toContain("the account's stripeCustomerId");
        await topUp.getByText("No automatic top-up set.").waitFor();
        widths.pool = await sideways(page);

        // Its member: no top-up of its own, only a note naming the pool that buys.
        await page.goto(`${base}/console#/accounts/${w.kid}`);
        await page.getByRole("heading", { name: `kid-${width}`, level: 1 }).waitFor();
        await topUp
          .getByText(
            `No automatic top-up of its own: its pool pool-${width} buys its credits. Set one ` +
              "on the pool instead.",
          )
          .waitFor();
        expect(await topUp.getByRole("link").getAttribute("href")).toBe(`#/accounts/${w.pool}`);
        expect(await topUp.getByRole("button").count()).toBe(0);
        expect(await topUp.getByRole("table").count()).toBe(0);
        widths.kid = await sideways(page);

        // Three failures in a row: it turned itself off, and says so.
        await page.goto(`${base}/console#/accounts/${w.tired}`);
        await page.getByRole("heading", { name: `tired-${width}`, level: 1 }).waitFor();
        await factsAre(topUp, ["off", "50", "100", "none", "0", "3"]);
        await topUp
          .getByText(
            "It turned itself off after 3 failed attempts in a row. Turning it on again " +
              "resets the count.",
          )
          .waitFor();
        await topUp.getByText("Showing 1–3 of 3").waitFor();
        expect((await attemptRows(topUp)).map((cells) => cells.slice(1, 6))).toEqual(
          Array.from({ length: 3 }, () => ["failed", "Stripe not set up", "100", "$0.00 USD", "–"]),
        );
        expect(await topUp.getByLabel("On", { exact: true }).isChecked()).toBe(false);
        widths.tired = await sideways(page);

        // 21 attempts: 20 to a page, newest first.
        await page.goto(`${base}/console#/accounts/${w.busy}`);
        await page.getByRole("heading", { name: `busy-${width}`, level: 1 }).waitFor();
        await factsAre(topUp, ["on", "50", "100", "50", "0", "0"]);
        await topUp.getByText("Showing 1–20 of 21").waitFor();
        const first = await attemptRows(topUp);
        expect(first).toHaveLength(20);
        expect(new Set(first.map((cells) => cells.slice(1, 5).join(" ")))).toEqual(
          new Set(["failed monthly limit reached 100 $1.00 USD"]),
        );
        widths.busy = await sideways(page);
        await topUp.getByRole("button", { name: "Next" }).click();
        await topUp.getByText("Showing 21–21 of 21").waitFor();
        expect(await attemptRows(topUp)).toHaveLength(1);
        await topUp.getByRole("button", { name: "Previous" }).click();
        await topUp.getByText("Showing 1–20 of 21").waitFor();

        expect(await page.evaluate<number>("window.innerWidth")).toBe(width);
        await page.close();
        expect(widths).toEqual({
          unset: 0,
          refused: 0,
          confirm: 0,
          failed: 0,
          buyer: 0,
          pool: 0,
          kid: 0,
          tired: 0,
          busy: 0,
        });
        // Through the API: the buyer's top-up is on, its pending attempt counted in the month.
        expect(await topUpOf(w.buyer)).toMatchObject({
          enabled: true,
          threshold: 50,
          amount: 100,
          monthlyLimit: null,
          toppedUpThisMonth: 100,
          lastAttempt: { status: "pending", credits: 100, amountCents: 100 },
        });
        expect(await topUpOf(w.pool)).toBeNull();
        expect(pageErrors).toEqual([]);
        expect(statuses).toEqual([
          `400 ${base}/v1/accounts/auto-topup`,
          `409 ${base}/v1/accounts/auto-topup`,
        ]);
        expect(consoleErrors).toEqual([
          "Failed to load resource: the server responded with a status of 400 (Bad Request)",
          "Failed to load resource: the server responded with a status of 409 (Conflict)",
        ]);
        expect(await t.verify()).toEqual([]);
      },
      120_000,
    );
  }
});
