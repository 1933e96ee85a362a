/**
 * An account's purchases through Stripe in the operator console (contract section 25;
 * docs/api.md#selling-credits-through-stripe), in headless Chromium at 1280 px and at 390 px
 * against a real listening server. The project is connected to Stripe in-process and signed
 * events are posted to its webhook route: a purchase in usd partly refunded (credits clawed
 * back, "partially refunded"), one in jpy (a zero-decimal currency) found by the account's
 * Stripe customer, and a member's purchase whose refund finds its credits already spent
 * (uncollected). The account's page shows its Stripe customer and its purchases newest first,
 * with the amounts in their currencies; a purchase's credit links to its thread in the ledger
 * (its pool's for a member); an account without purchases says so. Nothing scrolls sideways;
 * nothing fails.
 *
 * The browser part is skipped only when /usr/bin/chromium is absent.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildConsole } from "../scripts/build-console.ts";
import { accountRoutes } from "../src/accounts/routes.ts";
import { setConsoleAssets } from "../src/console/assets.ts";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import { stripeRoutes } from "../src/stripe/routes.ts";
import { connectStripe } from "../src/stripe/settings.ts";
import { browserPass, launchChromium } from "./chromium.ts";
import { makeLedger, type TestLedger } from "./harness.ts";
import {
  charge,
  checkoutSession,
  type Metadata,
  seconds,
  signedDelivery,
  stripeEvent,
} from "./stripe-events.ts";

const WIDTHS = [1280, 390];
const SECRET = "whsec_test_console_0123456789";

/** The accounts and purchases of one width's walk. */
interface Walk {
  buyer: string;
  pool: string;
  kid: string;
  /** The credits of the buyer's usd purchase, of its jpy one and of the kid's. */
  usdCredit: string;
  jpyCredit: string;
  kidCredit: string;
  usdIntent: string;
  kidIntent: string;
}

describe("an account's purchases in the console at 1280 px and 390 px", () => {
  let t: TestLedger;
  let base: string;
  let browser: BrowserContext;
  let profile: string;
  const walks = new Map<number, Walk>();

  /** Posts `type` about `object` to the project's Stripe webhook, signed; expects 200. */
  const deliver = async (type: string, object: Record<string, unknown> & { id: string }) => {
    const { body, headers } = signedDelivery(SECRET, stripeEvent(type, object));
    const res = await t.api("POST", `/stripe/webhooks/${t.projectId}`, {
      body,
      headers,
      key: null,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ outcome: "applied" });
    // Purchases are listed newest first by the millisecond they were booked.
    await new Promise((resolve) => setTimeout(resolve, 5));
  };

  /** A paid Checkout Session of `amount` (smallest unit) in `currency`; @returns its intent */
  const pay = async (
    amount: number,
    currency: string,
    naming: { clientReferenceId?: string; customer?: string; metadata: Metadata },
  ) => {
    const intent = `pi_console_${Math.random().toString(36).slice(2, 12)}`;
    await deliver(
      "checkout.session.completed",
      checkoutSession({
        paymentIntent: intent,
        amountTotal: amount,
        currency,
        clientReferenceId: naming.clientReferenceId ?? null,
        customer: naming.customer ?? null,
        metadata: naming.metadata,
        created: seconds(Date.now()),
      }),
    );
    return intent;
  };

  /** Refunds `refunded` (cumulative, smallest unit) of the payment `intent` of `amount`. */
  const refund = (intent: string, amount: number, refunded: number, currency: string) =>
    deliver(
      "charge.refunded",
      charge({
        paymentIntent: intent,
        amount,
        amountRefunded: refunded,
        currency,
        created: seconds(Date.now()),
      }),
    );

  const purchasesOf = async (accountId: string) =>
    (await t.call(stripeRoutes.purchases, { query: { accountId } })).purchases;

  beforeAll(async () => {
    t = await makeLedger();
    await connectStripe(t.ledger.queue, "test", { webhookSecret: SECRET });
    // Per width: a buyer (Stripe customer `cus_buyer<width>`) with a usd purchase of 100
    // credits for $25.00, refunded $7.50 (30 credits back), then one of 50 credits for ¥3,000;
    // a pool whose member (its Stripe customer id 255 characters long) bought 40 credits for
    // $10.00, spent 35 of them, then was refunded $5.00 (20 asked: 5 back, 15 uncollected).
    for (const width of WIDTHS) {
      const create = async (externalId: string, extra: Record<string, string> = {}) =>
        (await t.call(accountRoutes.create, { body: { externalId, ...extra } })).account.id;
      const buyer = await create(`buyer-${width}`, { stripeCustomerId: `cus_buyer${width}` });
      const pool = await create(`pool-${width}`);
      const kid = await create(`kid-${width}`, {
        parentId: pool,
        stripeCustomerId: `cus_${"K".repeat(247)}${width}`,
      });
      const usdIntent = await pay(2500, "usd", {
        clientReferenceId: `buyer-${width}`,
        metadata: { ledger_credits: "100" },
      });
      await refund(usdIntent, 2500, 750, "usd");
      await pay(3000, "jpy", { customer: `cus_buyer${width}`, metadata: { ledger_credits: "50" } });
      const kidIntent = await pay(1000, "usd", {
        clientReferenceId: kid,
        metadata: { ledger_credits: "40" },
      });
      await t.call(ledgerRoutes.deduct, { body: { accountId: kid, amount: 35 } });
      await refund(kidIntent, 1000, 500, "usd");
      const [jpy, usd] = await purchasesOf(buyer);
      const [bought] = await purchasesOf(kid);
      walks.set(width, {
        buyer,
        pool,
        kid,
        usdCredit: usd?.transactionId ?? "",
        jpyCredit: jpy?.transactionId ?? "",
        kidCredit: bought?.transactionId ?? "",
        usdIntent,
        kidIntent,
      });
    }
    if (!browserPass) return;
    setConsoleAssets(await buildConsole());
    base = await t.listen();
    profile = mkdtempSync(join(tmpdir(), "ledger-chromium-purchases-"));
    browser = await launchChromium(profile);
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it("books the purchases the walks show, through the API", async () => {
    for (const width of WIDTHS) {
      const w = walks.get(width) as Walk;
      expect(await purchasesOf(w.buyer)).toMatchObject([
        { currency: "jpy", amountPaid: 3000, credits: 50, amountRefunded: 0, status: "paid" },
        {
          paymentIntentId: w.usdIntent,
          currency: "usd",
          amountPaid: 2500,
          credits: 100,
          amountRefunded: 750,
          creditsClawedBack: 30,
          creditsUncollected: 0,
          status: "partially_refunded",
        },
      ]);
      expect(await purchasesOf(w.kid)).toMatchObject([
        {
          paymentIntentId: w.kidIntent,
          credits: 40,
          amountRefunded: 500,
          creditsClawedBack: 5,
          creditsUncollected: 15,
          status: "partially_refunded",
        },
      ]);
      expect(await purchasesOf(w.pool)).toEqual([]);
    }
    expect(await t.verify()).toEqual([]);
  });

  /** How far the page scrolls sideways: 0 when it does not. */
  const sideways = (page: Page) =>
    page.evaluate<number>("document.scrollingElement.scrollWidth - window.innerWidth");

  /** The texts of the cells of the row of `purchases` that holds `text`. */
  const cells = async (purchases: ReturnType<Page["getByRole"]>, text: string) => {
    const row = purchases.getByRole("row").filter({ hasText: text });
    await row.waitFor();
    return row.getByRole("cell").allTextContents();
  };

  for (const width of WIDTHS) {
    it.skipIf(!browserPass)(
      `shows an account's purchases and links their credits to the ledger at ${width} px`,
      async () => {
        const w = walks.get(width) as Walk;
        const page = await browser.newPage();
        await page.setViewportSize({ width, height: 900 });
        const failures: string[] = [];
        page.on("pageerror", (err) => failures.push(err.message));
        page.on("console", (msg) => {
          if (msg.type() === "error" || msg.type() === "warning") failures.push(msg.text());
        });
        page.on("response", (res) => {
          if (res.status() >= 400) failures.push(`${res.status()} ${res.url()}`);
        });
        const widths: Record<string, number> = {};
        const purchases = page.getByRole("region", { name: "Purchases" });
        const ledger = page.getByRole("region", { name: "Ledger" });

        // The buyer: its Stripe customer, and its two purchases, newest first.
        await page.goto(`${base}/console#/accounts/${w.buyer}`, { waitUntil: "load" });
        await page.getByLabel("API key").fill(t.key);
        await page.getByRole("button", { name: "Sign in" }).click();
        await page.getByRole("heading", { name: `buyer-${width}`, level: 1 }).waitFor();
        const customer = page.locator("dl.facts div").filter({ hasText: "Stripe customer" });
        expect(await customer.locator("dd").textContent()).toBe(`cus_buyer${width}`);
        await purchases.getByRole("row").nth(2).waitFor();
        const rows = await purchases.getByRole("row").allTextContents();
        expect(rows).toHaveLength(3);
        expect(rows[1]).toContain("¥3,000 JPY");
        expect(rows[2]).toContain("$25.00 USD");
        expect((await cells(purchases, "$25.00 USD")).slice(1)).toEqual([
          "100",
          "$25.00 USD",
          "$7.50 USD",
          "30",
          "0",
          "partially refunded",
          w.usdIntent,
          w.usdCredit,
        ]);
        expect((await cells(purchases, "¥3,000 JPY")).slice(1)).toEqual([
          "50",
          "¥3,000 JPY",
          "¥0 JPY",
          "0",
          "0",
          "paid",
          expect.stringMatching(/^pi_console_/),
          w.jpyCredit,
        ]);
        await purchases.getByText("Showing 1–2 of 2").waitFor();
        widths.buyer = await sideways(page);

        // A purchase's credit opens its thread: the credit and the refund's reversal of it.
        const link = purchases.getByRole("link", {
          name: `Credit of ${w.usdIntent} in the ledger`,
        });
        expect(await link.getAttribute("href")).toBe(
          `#/accounts/${w.buyer}/transactions/${w.usdCredit}`,
        );
        await link.click();
        await page.waitForURL(`${base}/console#/accounts/${w.buyer}/transactions/${w.usdCredit}`);
        await ledger.getByText(`Transaction ${w.usdCredit} and its reversals.`).waitFor();
        const reversal = ledger.getByRole("row").filter({ hasText: `Reverses ${w.usdCredit}` });
        await reversal.waitFor();
        expect((await reversal.getByRole("cell").allTextContents()).slice(1, 3)).toEqual([
          "debit",
          "−30",
        ]);
        const credit = ledger.getByRole("row").filter({ hasText: "30 reversed" });
        expect((await credit.getByRole("cell").allTextContents()).slice(1, 3)).toEqual([
          "credit",
          "+100",
        ]);
        widths.thread = await sideways(page);

        // The member: its purchase's credit is in its pool's ledger; 15 could not be taken back.
        await page.goto(`${base}/console#/accounts/${w.kid}`);
        await page.getByRole("heading", { name: `kid-${width}`, level: 1 }).waitFor();
        expect(await customer.locator("dd").textContent()).toMatch(/^cus_K{247}\d+$/);
        expect((await cells(purchases, w.kidIntent)).slice(1)).toEqual([
          "40",
          "$10.00 USD",
          "$5.00 USD",
          "5",
          "15",
          "partially refunded",
          w.kidIntent,
          w.kidCredit,
        ]);
        await purchases
          .getByText(`A member's purchases grant their credits to its pool, pool-${width},`)
          .waitFor();
        widths.member = await sideways(page);
        await purchases
          .getByRole("link", { name: `Credit of ${w.kidIntent} in the ledger` })
          .click();
        await page.waitForURL(`${base}/console#/accounts/${w.pool}/transactions/${w.kidCredit}`);
        await page.getByRole("heading", { name: `pool-${width}`, level: 1 }).waitFor();
        await ledger
          .getByRole("row")
          .filter({ hasText: `Reverses ${w.kidCredit}` })
          .waitFor();
        const kidCredit = ledger.getByRole("row").filter({ hasText: "5 reversed" });
        expect((await kidCredit.getByRole("cell").allTextContents()).slice(1, 3)).toEqual([
          "credit",
          "+40",
        ]);

        // The pool bought nothing itself; it has no Stripe customer.
        await purchases.getByText("No purchases through Stripe.").waitFor();
        expect(await customer.locator("dd").textContent()).toBe("–");
        widths.pool = await sideways(page);

        expect(await page.evaluate<number>("window.innerWidth")).toBe(width);
        await page.close();
        expect(widths).toEqual({ buyer: 0, thread: 0, member: 0, pool: 0 });
        expect(failures).toEqual([]);
      },
      120_000,
    );
  }
});
