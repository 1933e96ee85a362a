/**
 * Reversals in the operator console (contract section 23, last bullet; docs/api.md#reversals):
 * what its ledger offers to reverse and with which amount (console/reversals.ts, in Node), then,
 * in headless Chromium at 1280 px and at 390 px against a real listening server: "Reverse" on a
 * deduction behind a confirmation with the amount prefilled, the balances and the ledger read
 * again, the reversal and its original linked both ways (the entry's thread, `reversalOf`), a
 * refusal for the amount shown as a sentence with the API's `reversible` and a retry with it, a
 * credit capped by the account's available credits, and no "Reverse" on an expiry or a
 * reversal. Nothing scrolls sideways; nothing fails but the two refusals the walk asks for.
 *
 * The browser part is skipped only when /usr/bin/chromium is absent.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LosslessNumber } from "lossless-json";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isExpiry, leftToReverse, reversibleAmount, reversibleOf } from "../console/reversals.ts";
import { buildConsole } from "../scripts/build-console.ts";
import { accountRoutes } from "../src/accounts/routes.ts";
import { setConsoleAssets } from "../src/console/assets.ts";
import { runExpireGrants } from "../src/jobs/expire-grants.ts";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import { reservationRoutes } from "../src/reservations/routes.ts";
import { browserPass, launchChromium } from "./chromium.ts";
import { makeLedger, type TestLedger } from "./harness.ts";

const WIDTHS = [1280, 390];
const HOUR = 3_600_000;

describe("what the console's ledger offers to reverse", () => {
  const n = (literal: string) => new LosslessNumber(literal);

  it("offers a debit or a credit less its reversals so far, exactly", () => {
    expect(reversibleAmount({ type: "debit", amount: n("10"), amountReversed: n("0") })).toBe("10");
    expect(
      reversibleAmount({ type: "debit", amount: n("8600000000.000001"), amountReversed: n("0.1") }),
    ).toBe("8599999999.900001");
    expect(reversibleAmount({ type: "credit", amount: n("0.3"), reversalOf: null })).toBe("0.3");
    expect(leftToReverse({ type: "credit", amount: n("0.3"), amountReversed: n("0.3") })).toBe("0");
  });

  it("offers nothing on a reversal, an expiry or an entry wholly reversed", () => {
    expect(reversibleAmount({ type: "credit", amount: n("5"), reversalOf: "txn_1" })).toBeNull();
    for (const reason of ["credits_expired", "plan_credits_expired"]) {
      const expiry = { type: "debit" as const, amount: n("5"), metadata: { reason } };
      expect(isExpiry(expiry)).toBe(true);
      expect(reversibleAmount(expiry)).toBeNull();
    }
    // A credit's metadata says nothing of expiry; a deduction's own metadata is the caller's.
    expect(isExpiry({ type: "credit", amount: 5, metadata: { reason: "credits_expired" } })).toBe(
      false,
    );
    expect(reversibleAmount({ type: "debit", amount: 5, metadata: { reason: "refund" } })).toBe(
      "5",
    );
    expect(reversibleAmount({ type: "debit", amount: n("2.5"), amountReversed: n("2.50") })).toBe(
      null,
    );
  });

  it("reads details.reversible of a refusal as its literal", () => {
    expect(reversibleOf({ reversible: n("600000000.000001") })).toBe("600000000.000001");
    expect(reversibleOf({ reversible: 20 })).toBe("20");
    expect(reversibleOf({ reversible: n("0") })).toBe("0");
    expect(reversibleOf(undefined)).toBeUndefined();
    expect(reversibleOf({ other: 1 })).toBeUndefined();
  });
});

interface Walked {
  id: string;
  credit: string;
  deduction: string;
  expiring: string;
  expiry: string;
}

describe("reversing from the console at 1280 px and 390 px", () => {
  let t: TestLedger;
  let base: string;
  let browser: BrowserContext;
  let profile: string;
  const accounts = new Map<number, Walked>();

  beforeAll(async () => {
    if (!browserPass) return;
    setConsoleAssets(await buildConsole());
    t = await makeLedger({ fakeClock: "2026-03-02T10:00:00.000Z" });
    base = await t.listen();
    // Per width: a credit of 100, a deduction of 30, 5 credits that expire (an expiry debit),
    // then a hold of 10: balance 70, available 60.
    for (const width of WIDTHS) {
      const externalId = `rev-${width}`;
      const { account } = await t.call(accountRoutes.create, {
        body: { externalId, name: `Reversals ${width}` },
      });
      const credit = await t.call(ledgerRoutes.add, {
        body: { accountId: account.id, amount: 100, description: "top-up" },
      });
      const deduction = await t.call(ledgerRoutes.deduct, {
        body: { accountId: account.id, amount: 30, description: "generation" },
      });
      const expiring = await t.call(ledgerRoutes.add, {
        body: {
          accountId: account.id,
          amount: 5,
          description: "trial",
          expiresAt: new Date(t.now() + HOUR).toISOString(),
        },
      });
      accounts.set(width, {
        id: account.id,
        credit: credit.transactionId,
        deduction: deduction.transactionId,
        expiring: expiring.transactionId,
        expiry: "",
      });
    }
    t.advance(2 * HOUR);
    expect(await runExpireGrants({ queue: t.ledger.queue, nowMs: t.now() })).toEqual({
      expiries: WIDTHS.length,
      failed: 0,
    });
    for (const walked of accounts.values()) {
      const { items } = (await t.api("GET", `/v1/transactions?accountId=${walked.id}`)).body as {
        items: { id: string; description: string }[];
      };
      walked.expiry = items.find((i) => i.description === "Credits expired")?.id ?? "";
      expect(walked.expiry).not.toBe("");
      await t.call(reservationRoutes.create, {
        body: { accountId: walked.id, amount: 10, ttlSeconds: 86_400 },
      });
    }
    profile = mkdtempSync(join(tmpdir(), "ledger-chromium-reverse-"));
    browser = await launchChromium(profile);
  }, 90_000);

  afterAll(async () => {
    if (!browserPass) return;
    await browser?.close();
    await t?.close();
    rmSync(profile, { recursive: true, force: true });
  });

  /** How far the page scrolls sideways: 0 when it does not. */
  const sideways = (page: Page) =>
    page.evaluate<number>("document.scrollingElement.scrollWidth - window.innerWidth");

  const balances = (page: Page) => page.locator("dl.balances dd").allTextContents();

  for (const width of WIDTHS) {
    it.skipIf(!browserPass)(
      `reverses a deduction and a credit, linked both ways, at ${width} px`,
      async () => {
        const a = accounts.get(width) as Walked;
        const page = await browser.newPage();
        await page.setViewportSize({ width, height: 900 });
        const pageErrors: string[] = [];
        const consoleErrors: string[] = [];
        const statuses: string[] = [];
        const posts: { url: string; key: string | undefined; body: string | null }[] = [];
        page.on("pageerror", (err) => pageErrors.push(err.message));
        page.on("console", (msg) => {
          if (msg.type() === "error" || msg.type() === "warning") consoleErrors.push(msg.text());
        });
        page.on("request", (req) => {
          if (req.method() === "POST") {
            posts.push({
              url: req.url(),
              key: req.headers()["idempotency-key"],
              body: req.postData(),
            });
          }
        });
        page.on("response", (res) => {
          if (res.status() >= 400) statuses.push(`${res.status()} ${res.url()}`);
        });
        const widths: Record<string, number> = {};

        await page.goto(`${base}/console#/accounts/${a.id}`, { waitUntil: "load" });
        await page.getByLabel("API key").fill(t.key);
        await page.getByRole("button", { name: "Sign in" }).click();
        await page.getByRole("heading", { name: `rev-${width}`, level: 1 }).waitFor();
        const ledger = page.getByRole("region", { name: "Ledger" });
        const reverseOf = (id: string) => ledger.getByRole("button", { name: `Reverse ${id}` });
        await reverseOf(a.deduction).waitFor();
        expect(await balances(page)).toEqual(["70", "10", "60"]);
        // "Reverse" on the deduction and on both credits; none on the expiry.
        expect(await reverseOf(a.credit).count()).toBe(1);
        expect(await reverseOf(a.expiring).count()).toBe(1);
        expect(await reverseOf(a.expiry).count()).toBe(0);
        expect(await ledger.getByRole("button", { name: /^Reverse / }).count()).toBe(3);
        widths.ledger = await sideways(page);

        // Reverse 10 of the deduction of 30: a confirmation first, prefilled with 30.
        await reverseOf(a.deduction).click();
        const panel = ledger.getByRole("group", { name: /^Reverse the debit / });
        const amount = panel.getByLabel("Amount to reverse (credits)");
        expect(await amount.inputValue()).toBe("30");
        widths.confirm = await sideways(page);
        expect(posts).toEqual([]);
        await panel.getByRole("button", { name: "Cancel" }).click();
        await panel.waitFor({ state: "detached" });
        await reverseOf(a.deduction).click();
        await amount.fill("10");
        await panel.getByLabel("Description (optional)").fill("refund: failed generation");
        await panel.getByRole("button", { name: "Confirm" }).click();
        await ledger
          .getByRole("status")
          .getByText(/^Reversed 10 credits of /)
          .waitFor();
        // The balances and the ledger read again.
        await page.locator("dl.balances dd").first().getByText("80", { exact: true }).waitFor();
        expect(await balances(page)).toEqual(["80", "10", "70"]);
        expect(posts).toHaveLength(1);
        expect(posts[0]?.url).toBe(`${base}/v1/transactions/reverse`);
        expect(posts[0]?.key).toMatch(/^console-[0-9a-f]{32}$/);
        expect(posts[0]?.body).toBe(
          `{"transactionId":"${a.deduction}","amount":10,"description":"refund: failed generation"}`,
        );

        // The reversal links to its original; the original to its reversals.
        const toOriginal = ledger.getByRole("link", { name: a.deduction, exact: true });
        await toOriginal.first().waitFor();
        const reversalRow = ledger
          .getByRole("row")
          .filter({ hasText: "refund: failed generation" });
        // No "Reverse" on a reversal: its last cell is empty (hidden when rows are stacked).
        expect((await reversalRow.getByRole("cell").allTextContents()).slice(0, 6)).toEqual([
          expect.stringMatching(/ UTC$/),
          "credit",
          "+10",
          "80",
          "refund: failed generation",
          `Reverses ${a.deduction}`,
        ]);
        expect(await reversalRow.getByRole("button").count()).toBe(0);
        await ledger.getByRole("link", { name: `Reversals of ${a.deduction}` }).waitFor();
        const deductionRow = ledger.getByRole("row").filter({ hasText: "generation" }).last();
        expect((await deductionRow.getByRole("cell").allTextContents()).slice(1, 6)).toEqual([
          "debit",
          "−30",
          "70",
          "generation",
          "10 reversed Reversals",
        ]);
        await toOriginal.first().click();
        await page.waitForURL(`${base}/console#/accounts/${a.id}/transactions/${a.deduction}`);
        await ledger.getByText(`Transaction ${a.deduction} and its reversals.`).waitFor();
        await ledger.getByRole("row").nth(2).waitFor();
        const threadRows = async () => (await ledger.getByRole("row").all()).length - 1; // less the header
        expect(await threadRows()).toBe(2);
        widths.thread = await sideways(page);

        // Reverse more than is left (30 − 10): refused with the API's reversible, then 20.
        await reverseOf(a.deduction).click();
        expect(await amount.inputValue()).toBe("20");
        await amount.fill("25");
        await panel.getByRole("button", { name: "Confirm" }).click();
        const refused = panel.getByRole("alert");
        await refused
          .getByText("Its reversals would add up to more than the transaction itself.")
          .waitFor();
        expect(await refused.getAttribute("data-code")).toBe("REVERSAL_EXCEEDS_ORIGINAL");
        await panel.getByText("At most 20 credits of it can be reversed now.").waitFor();
        widths.refused = await sideways(page);
        await panel.getByRole("button", { name: "Retry with 20" }).click();
        await ledger
          .getByRole("status")
          .getByText(/^Reversed 20 credits of /)
          .waitFor();
        await ledger.getByRole("row").nth(3).waitFor();
        expect(await threadRows()).toBe(3);
        // Wholly reversed: no "Reverse" on it any more.
        await reverseOf(a.deduction).waitFor({ state: "detached" });
        expect(await balances(page)).toEqual(["100", "10", "90"]);

        // Back to the whole ledger; the original's link opens its thread again.
        await ledger.getByRole("link", { name: "← The whole ledger" }).click();
        await page.waitForURL(`${base}/console#/accounts/${a.id}`);
        await ledger.getByRole("form", { name: "Ledger dates" }).waitFor();
        await ledger.getByRole("link", { name: `Reversals of ${a.deduction}` }).click();
        await page.waitForURL(`${base}/console#/accounts/${a.id}/transactions/${a.deduction}`);
        await ledger.getByRole("row").nth(3).waitFor();
        await ledger.getByRole("link", { name: "← The whole ledger" }).click();

        // The credit of 100: prefilled 100, but only the 90 available can be taken back.
        await reverseOf(a.credit).click();
        const creditPanel = ledger.getByRole("group", { name: /^Reverse the credit / });
        expect(await creditPanel.getByLabel("Amount to reverse (credits)").inputValue()).toBe(
          "100",
        );
        await creditPanel.getByRole("button", { name: "Confirm" }).click();
        const capped = creditPanel.getByRole("alert");
        await capped.waitFor();
        expect(await capped.getAttribute("data-code")).toBe("REVERSAL_EXCEEDS_REMAINING");
        await creditPanel.getByText("At most 90 credits of it can be reversed now.").waitFor();
        await creditPanel.getByRole("button", { name: "Retry with 90" }).click();
        await ledger
          .getByRole("status")
          .getByText(/^Reversed 90 credits of /)
          .waitFor();
        await page.locator("dl.balances dd").first().getByText("10", { exact: true }).waitFor();
        expect(await balances(page)).toEqual(["10", "10", "0"]);
        // A reversal is never offered "Reverse".
        const reversals = (
          await t.api("GET", `/v1/transactions?accountId=${a.id}&reversalOf=${a.credit}`)
        ).body as { items: { id: string; amount: number }[] };
        expect(reversals.items.map((i) => i.amount)).toEqual([90]);
        await ledger.getByRole("link", { name: `Reversals of ${a.credit}` }).waitFor();
        expect(await reverseOf(reversals.items[0]?.id ?? "").count()).toBe(0);
        widths.done = await sideways(page);

        expect(await page.evaluate<number>("window.innerWidth")).toBe(width);
        await page.close();
        expect(widths).toEqual({ ledger: 0, confirm: 0, thread: 0, refused: 0, done: 0 });
        expect(posts.map((p) => p.url)).toEqual(
          Array.from({ length: 5 }, () => `${base}/v1/transactions/reverse`),
        );
        // A refused request's retry is a new request, under a new key.
        expect(new Set(posts.map((p) => p.key)).size).toBe(5);
        expect(pageErrors).toEqual([]);
        expect(statuses).toEqual([
          `409 ${base}/v1/transactions/reverse`,
          `409 ${base}/v1/transactions/reverse`,
        ]);
        expect(consoleErrors).toEqual([
          "Failed to load resource: the server responded with a status of 409 (Conflict)",
          "Failed to load resource: the server responded with a status of 409 (Conflict)",
        ]);
        expect(await t.verify()).toEqual([]);
      },
      120_000,
    );
  }
});
