/**
 * The operator console's pages of contract section 16 (docs/design.md#operator-console) in
 * headless Chromium, at 1280 px and at 390 px wide, with an account, a plan and a webhook whose
 * ids and names are 255 characters long: sign-in, overview, accounts, an account (with its plan
 * assignment and next grant), plans, webhooks (with deliveries) and models. On every page, at
 * both widths: the figures the API gives are there, exactly, grouped by thousands; the page does
 * not scroll sideways (`document.scrollingElement.scrollWidth <= innerWidth`); every amount,
 * balance, price, date, status, event type, time zone, model id and button is whole on the
 * screen, cut by no box that clips, and not broken across lines (`wholeness`); and nothing
 * fails: no page error, no console message, no failed request, no answer of 400 or above. The
 * data has long values: 255-character ids and names, a balance of 9,000,000,000, a total of
 * 17,600,000,628.965079, the catalog's longest model id, a spend limit in Europe/Paris, usage
 * charged in credits, a webhook with a failed delivery (its Retry button), and a deduction
 * reversed in two parts: its thread in the ledger, and a reversal waiting for its confirmation
 * and then refused for its amount, with the API's figure and a retry (contract section 23).
 *
 * With `CONSOLE_SHOTS=<folder>`, each page is also saved there as a PNG, at each width.
 *
 * Then webhook management at both widths (docs/operations.md#operator-console), against a
 * loopback receiver that verifies every delivery with the secret the page showed: create an
 * endpoint with a 255-character URL and description (the secret shown once), pause, resume,
 * send a test event, retry a test event that failed, and delete behind a confirmation.
 *
 * Skipped only when /usr/bin/chromium is absent (CI: `apt-get install -y chromium`).
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildConsole } from "../scripts/build-console.ts";
import { accountRoutes } from "../src/accounts/routes.ts";
import { setConsoleAssets } from "../src/console/assets.ts";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import { planRoutes } from "../src/plans/routes.ts";
import { reservationRoutes } from "../src/reservations/routes.ts";
import { usageRoutes } from "../src/usage/routes.ts";
import type { DeliveryWorker } from "../src/webhooks/delivery.ts";
import { webhookRoutes } from "../src/webhooks/routes.ts";
import { browserPass, launchChromium } from "./chromium.ts";
import { makeLedger, type TestLedger } from "./harness.ts";
import { type Receiver, startReceiver, startWorker } from "./webhooks-receiver.ts";

const WIDTHS = [1280, 390];

/** 255 characters without a space: the longest id or name the API takes, and the hardest to wrap. */
const LONG_ID = `customer-${"0123456789abcdef".repeat(16)}`.slice(0, 255);
const LONG_NAME = `Ada${"L".repeat(252)}`;
const LONG_PLAN = `Pro-${"monthly".repeat(40)}`.slice(0, 255);
const LONG_URL = `http://127.0.0.1:9/hooks/${"segment".repeat(30)}`;
/** The longest model id of the shipped catalog (data/models.json). */
const LONG_MODEL = "meta-llama/llama-4-maverick-17b-128e-instruct";
/** Where to save each page as a PNG, when set. */
const SHOTS = process.env.CONSOLE_SHOTS;

/** Saves the whole page as PNGs of at most 1,200 px high each: `<path>-1.png`, `-2.png`… */
async function shoot(page: Page, path: string): Promise<void> {
  mkdirSync(join(path, ".."), { recursive: true });
  const height = await page.evaluate<number>("document.documentElement.scrollHeight");
  const width = await page.evaluate<number>("document.documentElement.clientWidth");
  for (let y = 0, i = 1; y < height; y += 1200, i++) {
    const clip = { x: 0, y, width, height: Math.min(1200, height - y) };
    await page.screenshot({ path: `${path}-${i}.png`, clip, fullPage: true });
  }
}

/**
 * What is not whole on the page: each amount, balance, price, count (`.num`), date (`time`),
 * status (`.badge`), event type, time zone or model id (`.word`), pager line and button that
 * is shown but reaches past the window's left or right edge or out of its table cell or of the
 * page's content (over a border, into the margin), is cut by an ancestor that clips
 * (`overflow` other than visible, or a `clip-path`), overflows its own box, or lies on more
 * than one line (a word broken inside); and any other word of up to 24 characters broken across
 * lines (longer ones are ids and names). Every `details` is opened first, so that what it holds
 * is checked too. One sentence per problem, for the failure's message.
 */
const wholeness = (page: Page) =>
  page.evaluate<string[]>(`(async () => {
    for (const d of document.querySelectorAll("details")) d.open = true;
    // Two frames: the tables measure themselves (data-table.tsx) once they are laid out.
    for (let i = 0; i < 2; i++) await new Promise((go) => requestAnimationFrame(go));
    const width = document.documentElement.clientWidth;
    const problems = [];
    const name = (e) => e.tagName.toLowerCase() + [...e.classList].map((c) => "." + c).join("");
    const clippers = (e) => {
      const found = [];
      for (let a = e.parentElement; a && a !== document.documentElement; a = a.parentElement) {
        const style = getComputedStyle(a);
        const clips = style.overflowX !== "visible" || style.overflowY !== "visible" || style.clipPath !== "none";
        if (clips) found.push(a);
      }
      return found;
    };
    for (const e of document.querySelectorAll(".num, time, .badge, .word, .pager span, button")) {
      if (e.getClientRects().length === 0) continue; // not shown
      const box = e.getBoundingClientRect();
      const what = name(e) + " " + JSON.stringify((e.textContent || "").trim().slice(0, 40));
      if (box.left < -0.5 || box.right > width + 0.5) {
        problems.push(what + " reaches past the screen: " + Math.round(box.left) + " to " + Math.round(box.right) + " of " + width + " px");
      }
      // Inside the page's content, and inside its table cell: not over a border or a margin.
      for (const a of [e.closest("td"), e.closest("main, header")]) {
        if (!a) continue;
        const c = a.getBoundingClientRect();
        const style = getComputedStyle(a);
        const left = c.left + parseFloat(style.paddingLeft) - 0.5;
        const right = c.right - parseFloat(style.paddingRight) + 0.5;
        if (box.left < left || box.right > right) {
          problems.push(what + " reaches out of its " + name(a) + ": " + Math.round(box.left) + " to " + Math.round(box.right) + " of " + Math.round(left) + " to " + Math.round(right) + " px");
        }
      }
      for (const a of clippers(e)) {
        const c = a.getBoundingClientRect();
        if (box.left < c.left - 0.5 || box.right > c.right + 0.5 || box.top < c.top - 0.5 || box.bottom > c.bottom + 0.5) {
          problems.push(what + " is cut by " + name(a) + " (" + Math.round(c.left) + " to " + Math.round(c.right) + " px)");
        }
      }
      if (getComputedStyle(e).display !== "inline" && e.scrollWidth > e.clientWidth + 1) {
        problems.push(what + " overflows its own box: " + e.scrollWidth + " > " + e.clientWidth + " px");
      }
      const range = document.createRange();
      range.selectNodeContents(e);
      const lines = [...range.getClientRects()].filter((r) => r.width > 0);
      const apart = (a, b) => a.top >= b.bottom - 1 || a.bottom <= b.top + 1;
      if (lines.some((a) => lines.some((b) => apart(a, b)))) {
        problems.push(what + " is broken across " + new Set(lines.map((r) => Math.round(r.top))).size + " lines");
      }
    }
    // Any other word of the page up to 24 characters (a label, a "never", an "unlimited") is
    // not broken inside either; longer ones are ids and names, which may wrap anywhere.
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const parent = n.parentElement;
      if (!parent || parent.getClientRects().length === 0 || clippers(parent).length > 0) continue;
      for (const word of n.textContent.matchAll(/\\S+/g)) {
        if (word[0].length < 2 || word[0].length > 24) continue;
        const range = document.createRange();
        range.setStart(n, word.index);
        range.setEnd(n, word.index + word[0].length);
        const lines = [...range.getClientRects()].filter((r) => r.width > 0);
        if (lines.some((a) => lines.some((b) => a.top >= b.bottom - 1 || a.bottom <= b.top + 1))) {
          problems.push("word " + JSON.stringify(word[0]) + " in " + name(parent) + " is broken across lines");
        }
      }
    }
    return problems;
  })()`);

/**
 * 0 when the page does not scroll sideways; else how far it does, in CSS pixels, and the
 * first elements that reach past the window's right edge outside any box of their own that
 * scrolls (for the failure's message).
 */
const overflow = (page: Page) =>
  page.evaluate<number | string>(`(() => {
    const over = document.scrollingElement.scrollWidth - window.innerWidth;
    if (over <= 0) return 0;
    const clipped = (e) => {
      for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
        if (getComputedStyle(a).overflowX !== "visible") return true;
      }
      return false;
    };
    const name = (e) => e.tagName.toLowerCase() + (e.className ? "." + e.className : "");
    const past = [...document.querySelectorAll("body *")]
      .filter((e) => e.getBoundingClientRect().right > window.innerWidth && !clipped(e))
      .map(name);
    // Text that overflows its element's box reaches past the edge without the element.
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const range = document.createRange();
      range.selectNodeContents(n);
      if (range.getBoundingClientRect().right > window.innerWidth && !clipped(n)) {
        past.push("text " + JSON.stringify(n.textContent.slice(0, 20)) + " in " + name(n.parentElement));
      }
    }
    return over + " px: " + past.slice(0, 5).join(", ");
  })()`);

/** What fails on `page`: page errors, console messages, failed requests, answers of 400 or above. */
function problemsOf(page: Page): string[] {
  const problems: string[] = [];
  page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
  page.on("console", (msg) => problems.push(`console ${msg.type()}: ${msg.text()}`));
  page.on("requestfailed", (req) =>
    problems.push(`failed: ${req.url()} ${req.failure()?.errorText}`),
  );
  page.on("response", (res) => {
    if (res.status() >= 400) problems.push(`${res.status()} ${res.url()}`);
  });
  return problems;
}

describe("the operator console at 1280 px and 390 px, with 255-character names", () => {
  let t: TestLedger;
  let base: string;
  let browser: BrowserContext;
  let profile: string;
  let longId: string;
  /** The long account's credit of 600000000.000001, and a deduction reversed in two. */
  let topUpId: string;
  let reversedId: string;

  beforeAll(async () => {
    if (!browserPass) return;
    setConsoleAssets(await buildConsole());
    t = await makeLedger();
    base = await t.listen();
    const created = await t.call(accountRoutes.create, {
      body: { externalId: LONG_ID, name: LONG_NAME, email: "ada@example.com" },
    });
    longId = created.account.id;
    for (let i = 0; i < 8; i++) {
      await t.call(ledgerRoutes.add, { body: { accountId: longId, amount: 1_000_000_000 } });
    }
    const topUp = await t.api("POST", "/v1/accounts/credits/add", {
      body: `{"accountId": "${longId}", "amount": 600000000.000001}`,
    });
    topUpId = (topUp.body as { transactionId: string }).transactionId;
    // A balance of 9,000,000,000 (the largest), and an account that brings the credits
    // outstanding to 17,600,000,628.965079.
    await t.call(accountRoutes.create, { body: { externalId: "acct-nine", name: "Nine" } });
    for (let i = 0; i < 9; i++) {
      await t.call(ledgerRoutes.add, { body: { accountId: "acct-nine", amount: 1_000_000_000 } });
    }
    await t.call(accountRoutes.create, { body: { externalId: "acct-odd", name: "Odd" } });
    await t.api("POST", "/v1/accounts/credits/add", {
      body: '{"accountId": "acct-odd", "amount": 188.765078}',
    });
    await t.call(accountRoutes.create, { body: { externalId: "acct-short", name: "Tiny Tim" } });
    for (const amount of [0.1, 0.2]) {
      await t.call(ledgerRoutes.add, { body: { accountId: "acct-short", amount } });
    }
    // A plan of 500 credits a month, assigned now (500 granted), and an archived one.
    const { plan } = await t.call(planRoutes.create, {
      body: { name: LONG_PLAN, amount: 500, interval: "month", accumulate: false, price: 49.99 },
    });
    await t.call(planRoutes.assign, { body: { accountId: longId, planId: plan.id } });
    const weekly = await t.call(planRoutes.create, {
      body: { name: "Starter weekly", amount: 50, interval: "week", occurrences: 12 },
    });
    await t.call(planRoutes.archive, { body: { planId: weekly.plan.id } });
    const usage = { accountId: longId, inputTokens: 120000, outputTokens: 30000 };
    await t.call(usageRoutes.record, { body: { ...usage, modelId: "gpt-4o" } });
    await t.call(usageRoutes.record, { body: { ...usage, modelId: "claude-sonnet-4-5" } });
    await t.call(usageRoutes.record, { body: { ...usage, modelId: LONG_MODEL } });
    // A credit price of 100 credits per USD: 0.6 USD of gpt-4o charged as 60 credits.
    await t.api("POST", "/v1/project/update", { body: '{"creditsPerUsd": 100}' });
    await t.call(usageRoutes.record, { body: { ...usage, modelId: "gpt-4o", deduct: true } });
    // A spend limit in Europe/Paris, and a pending reservation.
    await t.call(accountRoutes.update, {
      body: {
        accountId: longId,
        spendLimits: [{ period: "month", amount: 1_000_000_000, timeZone: "Europe/Paris" }],
      },
    });
    await t.call(reservationRoutes.create, {
      body: { accountId: longId, amount: 12.345678, operation: "chat.completion" },
    });
    // A deduction reversed in two parts (contract section 23): the figures above stay as they are.
    const deducted = await t.call(ledgerRoutes.deduct, {
      body: { accountId: longId, amount: 1234567.891, description: LONG_NAME },
    });
    reversedId = deducted.transactionId;
    for (const amount of ["1000000", "234567.891"]) {
      const reversed = await t.api("POST", "/v1/transactions/reverse", {
        body: `{"transactionId": "${reversedId}", "amount": ${amount}}`,
      });
      expect(reversed.status).toBe(200);
    }
    // A webhook with a long URL and description, and a pending balance.low delivery to it.
    const hook = await t.call(webhookRoutes.create, {
      body: { url: LONG_URL, description: LONG_NAME },
    });
    await t.call(accountRoutes.update, {
      body: { accountId: "acct-short", lowBalanceThreshold: 0.25 },
    });
    await t.call(ledgerRoutes.deduct, { body: { accountId: "acct-short", amount: 0.1 } });
    // Nothing listens on port 9: with no retries, the delivery fails at once, with a Retry button.
    const worker = startWorker(t, { retrySeconds: [] });
    try {
      for (let i = 0; i < 200; i++) {
        const { deliveries } = await t.call(webhookRoutes.deliveries, {
          query: { webhookId: hook.webhook.id },
        });
        if (deliveries.some((d) => d.status === "failed")) break;
        await new Promise((go) => setTimeout(go, 50));
      }
    } finally {
      await worker.stop();
    }

    profile = mkdtempSync(join(tmpdir(), "ledger-chromium-layout-"));
    browser = await launchChromium(profile);
  }, 90_000);

  afterAll(async () => {
    if (!browserPass) return;
    await browser?.close();
    await t?.close();
    rmSync(profile, { recursive: true, force: true });
  });

  /** The raw text of a GET with the project's key. */
  const rawGet = async (path: string) => {
    const res = await fetch(`${base}${path}`, { headers: { "X-API-Key": t.key } });
    expect(res.status).toBe(200);
    return res.text();
  };

  /** The texts of a `dl`'s terms and descriptions under `root`, as `term: description`. */
  const facts = async (page: Page, selector: string) => {
    const items = page.locator(`${selector} > div`);
    await items.first().waitFor();
    const texts: string[] = [];
    for (const item of await items.all()) {
      texts.push(
        `${await item.locator("dt").textContent()}: ${await item.locator("dd").textContent()}`,
      );
    }
    return texts;
  };

  /** Per page: how far it scrolls sideways (0: not at all), and what is not whole on it. */
  interface Walked {
    widths: Record<string, number | string>;
    cut: Record<string, string[]>;
  }

  async function walk(page: Page, width: number): Promise<Walked> {
    const widths: Record<string, number | string> = {};
    const cut: Record<string, string[]> = {};
    const check = async (name: string) => {
      cut[name] = await wholeness(page);
      widths[name] = await overflow(page);
      if (SHOTS) await shoot(page, join(SHOTS, `${name}-${width}`));
    };
    const visit = async (name: string, hash: string, ready: () => Promise<unknown>) => {
      await page.goto(`${base}/console#/${hash}`);
      await ready();
      await check(name);
    };

    await page.goto(`${base}/console`, { waitUntil: "load" });
    await page.getByLabel("API key").waitFor();
    await check("sign-in");
    await page.getByLabel("API key").fill(t.key);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Accounts", level: 1 }).waitFor();

    await visit("overview", "overview", async () => {
      await page.getByRole("heading", { name: "Overview" }).waitFor();
      expect(await facts(page, "dl.balances")).toEqual([
        "Accounts: 4",
        // 8600000000.000001 + 500 (the plan's grant) − 60 (the usage charged) + 9000000000
        // + 188.765078 + 0.3 − 0.1, added exactly.
        "Credits outstanding: 17,600,000,628.965079",
      ]);
      const usage = page.getByRole("region", { name: "Usage, last 30 days" });
      await usage.locator("figure.chart canvas").first().waitFor();
      const models = usage.getByRole("table", { name: "Usage by model, last 30 days" });
      await models.getByRole("cell", { name: "gpt-4o", exact: true }).waitFor();
      await models.getByRole("cell", { name: "claude-sonnet-4-5", exact: true }).waitFor();
      await models.getByRole("cell", { name: LONG_MODEL, exact: true }).waitFor();
      // Usage in credits beside USD: 60 credits charged, all on gpt-4o.
      await usage.getByText(/^Total cost: [\d.]+ USD \(60 credits\)$/).waitFor();
      const gpt = models.getByRole("row").filter({ hasText: "gpt-4o" });
      expect(await gpt.getByRole("cell").allTextContents()).toEqual([
        "gpt-4o",
        "2",
        "240,000",
        "0",
        "60,000",
        "1.2",
        "60",
      ]);
    });

    await visit("accounts", "accounts", async () => {
      await page.getByRole("link", { name: LONG_ID }).waitFor();
      await page.getByRole("cell", { name: LONG_NAME }).waitFor();
      const nine = page.getByRole("row").filter({ hasText: "acct-nine" });
      expect(await nine.getByRole("cell").allTextContents()).toEqual([
        "acct-nine",
        "Nine",
        "9,000,000,000",
        "0",
        "9,000,000,000",
      ]);
    });

    await visit("account", `accounts/${longId}`, async () => {
      await page.getByRole("heading", { name: LONG_ID, level: 1 }).waitFor();
      const [assignment] = (
        JSON.parse(await rawGet(`/v1/accounts/plans?accountId=${longId}`)) as {
          plans: { nextGrantAt: string }[];
        }
      ).plans;
      const next = assignment?.nextGrantAt.replace("T", " ").replace(/(\.\d+)?Z$/, " UTC");
      const plan = page.getByRole("region", { name: "Plan" });
      await plan.getByRole("link", { name: LONG_PLAN }).waitFor();
      expect(await plan.locator("dl dd").allTextContents()).toEqual([
        LONG_PLAN,
        `500 credits on ${next}`,
        "1",
        expect.stringMatching(/ UTC$/),
        "never",
      ]);
      await page.getByRole("region", { name: "Ledger" }).getByRole("row").nth(10).waitFor();
      await page
        .getByRole("region", { name: "Usage, last 30 days" })
        .locator("canvas")
        .first()
        .waitFor();
      await page.getByRole("region", { name: "Grants" }).getByRole("row").nth(10).waitFor();
      const limits = page.getByRole("region", { name: "Spend limits" });
      await limits.getByRole("cell", { name: "Europe/Paris", exact: true }).waitFor();
      const ledger = page.getByRole("region", { name: "Ledger" });
      await ledger.getByRole("cell", { name: "−60", exact: true }).waitFor();
      await ledger.getByRole("cell", { name: "+1,000,000,000", exact: true }).first().waitFor();
      const held = page.getByRole("region", { name: "Pending reservations" });
      await held.getByRole("cell", { name: "12.345678", exact: true }).waitFor();
    });

    // A credit action waiting for its confirmation: the amount and the buttons whole too.
    const adjust = page.getByRole("region", { name: "Adjust credits" });
    await adjust.getByLabel("Amount (credits)").fill("1234567.891");
    await adjust.getByRole("button", { name: "Deduct credits" }).click();
    await adjust.getByText(`Deduct 1,234,567.891 credits from ${LONG_ID}?`).waitFor();
    await check("account-confirm");
    await adjust.getByRole("button", { name: "Cancel" }).click();

    // The ledger's reversals: an entry's thread, and a reversal waiting for its confirmation,
    // then refused for its amount with the API's figure and a retry (no change is made).
    await visit("account-thread", `accounts/${longId}/transactions/${reversedId}`, async () => {
      const ledger = page.getByRole("region", { name: "Ledger" });
      await ledger.getByText(`Transaction ${reversedId} and its reversals.`).waitFor();
      await ledger.getByRole("row").nth(3).waitFor();
      await ledger.getByRole("cell", { name: "1,234,567.891 reversed" }).waitFor();
      expect(await ledger.getByRole("link", { name: reversedId, exact: true }).count()).toBe(2);
    });
    await visit("account-reverse", `accounts/${longId}`, async () => {
      const ledger = page.getByRole("region", { name: "Ledger" });
      await ledger.getByRole("button", { name: `Reverse ${topUpId}` }).click();
      const panel = ledger.getByRole("group", { name: /^Reverse the credit / });
      expect(await panel.getByLabel("Amount to reverse (credits)").inputValue()).toBe(
        "600000000.000001",
      );
    });
    const reversing = page
      .getByRole("region", { name: "Ledger" })
      .getByRole("group", { name: /^Reverse the credit / });
    await reversing.getByLabel("Amount to reverse (credits)").fill("700000000");
    await reversing.getByRole("button", { name: "Confirm" }).click();
    await reversing.getByRole("button", { name: /^Retry with [\d,.]+$/ }).waitFor();
    await check("account-reverse-refused");
    await reversing.getByRole("button", { name: "Cancel" }).click();

    await visit("plans", "plans", async () => {
      const table = page.getByRole("table", { name: "Plans" });
      const row = table.getByRole("row").filter({ hasText: LONG_PLAN });
      await row.waitFor();
      expect((await row.getByRole("cell").allTextContents()).slice(1, 7)).toEqual([
        "500",
        "every month",
        "unlimited",
        "expire each period",
        "49.99 / month",
        "active",
      ]);
      const weekly = table.getByRole("row").filter({ hasText: "Starter weekly" });
      expect((await weekly.getByRole("cell").allTextContents()).slice(1, 7)).toEqual([
        "50",
        "every week",
        "12",
        "roll over",
        "0 / week",
        "archived",
      ]);
    });

    await visit("webhooks", "webhooks", async () => {
      await page.getByRole("button", { name: `Deliveries of ${LONG_URL}` }).click();
      await page.getByRole("cell", { name: "balance.low", exact: true }).waitFor();
      await page.getByRole("button", { name: /^Retry delivery / }).waitFor();
    });

    await visit("models", "models", async () => {
      await page.getByRole("cell", { name: "gpt-4o", exact: true }).waitFor();
      await page.getByRole("cell", { name: LONG_MODEL, exact: true }).waitFor();
    });

    expect(await page.evaluate<number>("window.innerWidth")).toBe(width);
    return { widths, cut };
  }

  for (const width of WIDTHS) {
    it.skipIf(!browserPass)(
      `walks every page at ${width} px: the figures, all whole, no sideways scroll, nothing fails`,
      async () => {
        const page = await browser.newPage();
        await page.setViewportSize({ width, height: 900 });
        const problems = problemsOf(page);
        const { widths, cut } = await walk(page, width);
        await page.close();
        expect(cut).toEqual({
          "sign-in": [],
          overview: [],
          accounts: [],
          account: [],
          "account-confirm": [],
          "account-thread": [],
          "account-reverse": [],
          "account-reverse-refused": [],
          plans: [],
          webhooks: [],
          models: [],
        });
        expect(widths).toEqual({
          "sign-in": 0,
          overview: 0,
          accounts: 0,
          account: 0,
          "account-confirm": 0,
          "account-thread": 0,
          "account-reverse": 0,
          "account-reverse-refused": 0,
          plans: 0,
          webhooks: 0,
          models: 0,
        });
        // Only the reversal refused on purpose, which Chromium also logs.
        expect([...problems].sort()).toEqual([
          `409 ${base}/v1/transactions/reverse`,
          "console error: Failed to load resource: the server responded with a status of 409 (Conflict)",
        ]);
      },
      120_000,
    );
  }
});

describe("webhook management in the console at 1280 px and 390 px", () => {
  let t: TestLedger;
  let base: string;
  let browser: BrowserContext;
  let profile: string;
  let receiver: Receiver;
  let worker: DeliveryWorker | undefined;
  /** How the receiver answers, per path: 200 unless a test says otherwise. */
  const down = new Set<string>();

  beforeAll(async () => {
    if (!browserPass) return;
    setConsoleAssets(await buildConsole());
    // TEST_ENV (harness.ts) sets WEBHOOK_ALLOW_PRIVATE=true: the receiver is on 127.0.0.1.
    t = await makeLedger();
    base = await t.listen();
    receiver = await startReceiver();
    receiver.answer = (path) => (down.has(path) ? 503 : 200);
    // No retries: a refused attempt makes the delivery `failed` at once.
    worker = startWorker(t, { retrySeconds: [] });
    profile = mkdtempSync(join(tmpdir(), "ledger-chromium-webhooks-"));
    browser = await launchChromium(profile);
  }, 90_000);

  afterAll(async () => {
    if (!browserPass) return;
    await browser?.close();
    await worker?.stop();
    await receiver?.close();
    await t?.close();
    rmSync(profile, { recursive: true, force: true });
  });

  const listed = async () =>
    (await t.call(webhookRoutes.list, { query: { limit: 100 } })).webhooks as Record<
      string,
      unknown
    >[];

  for (const width of WIDTHS) {
    it.skipIf(!browserPass)(
      `creates (secret once), pauses, resumes, tests, retries and deletes at ${width} px`,
      async () => {
        const page = await browser.newPage();
        await page.setViewportSize({ width, height: 900 });
        const problems = problemsOf(page);
        const widths: Record<string, number | string> = {};
        // A 255-character URL on the receiver, and a 255-character description.
        const prefix = `/w${width}/`;
        const path = `${prefix}${"p".repeat(255 - receiver.url(prefix).length)}`;
        const url = receiver.url(path);
        expect(url).toHaveLength(255);

        await page.goto(`${base}/console#/webhooks`, { waitUntil: "load" });
        await page.getByLabel("API key").fill(t.key);
        await page.getByRole("button", { name: "Sign in" }).click();
        await page.getByRole("heading", { name: "Webhooks", level: 1 }).waitFor();

        // Create: the secret is shown once, and verifies what the receiver gets.
        await page.getByLabel("URL", { exact: true }).fill(url);
        await page.getByLabel("Description (optional)").fill(LONG_NAME);
        await page.getByRole("button", { name: "Create endpoint" }).click();
        const secretField = page.getByLabel(/Signing secret of/);
        await secretField.waitFor();
        const secret = await secretField.inputValue();
        expect(secret).toMatch(/^whsec_[A-Za-z0-9+/=]{32,}$/);
        receiver.setSecret(path, secret);
        widths.created = await overflow(page);
        const [created] = (await listed()).filter((w) => w.url === url);
        expect(created).toMatchObject({ url, description: LONG_NAME, isActive: true });
        expect(created).not.toHaveProperty("secret");
        const row = page.getByRole("table", { name: "Endpoints" }).getByRole("row", {
          name: new RegExp(`${LONG_NAME}`),
        });
        expect((await row.getByRole("cell").allTextContents()).slice(0, 4)).toEqual([
          url,
          "balance.low, reservation.expired, credits.expired, plan.granted, spend_limit.reached, transaction.reversed, credits.purchased, credits.clawed_back, purchase.clawback_incomplete, auto_topup.succeeded, auto_topup.failed",
          LONG_NAME,
          "yes",
        ]);
        await page.getByRole("button", { name: "Hide the secret" }).click();
        await secretField.waitFor({ state: "detached" });
        expect(await page.content()).not.toContain(secret);

        // Pause, then resume.
        await page.getByRole("button", { name: `Deliveries of ${url}` }).click();
        await page.getByRole("button", { name: "Pause" }).click();
        await page
          .getByRole("status")
          .getByText(/^Paused: /)
          .waitFor();
        await row.getByRole("cell", { name: "no", exact: true }).waitFor();
        expect((await listed()).find((w) => w.url === url)?.isActive).toBe(false);
        widths.paused = await overflow(page);
        await page.getByRole("button", { name: "Resume" }).click();
        await row.getByRole("cell", { name: "yes", exact: true }).waitFor();
        expect((await listed()).find((w) => w.url === url)?.isActive).toBe(true);

        // A test event arrives, signed with the secret shown.
        await page.getByRole("button", { name: "Send test event" }).click();
        await page
          .getByRole("status")
          .getByText(/^Queued a webhook.test event/)
          .waitFor();
        await receiver.waitFor(
          () => receiver.delivered.some((r) => r.path === path),
          10_000,
          "the test event",
        );
        const [arrived] = receiver.delivered.filter((r) => r.path === path);
        expect(arrived?.event).toMatchObject({
          type: "webhook.test",
          data: { webhookId: created?.id },
        });

        // A test event the receiver refuses fails (no retries here); Retry sends it again.
        down.add(path);
        await page.getByRole("button", { name: "Send test event" }).click();
        await page
          .getByRole("status")
          .getByText(/^Queued a webhook.test event/)
          .waitFor();
        const retry = page.getByRole("button", { name: /^Retry delivery / });
        for (let i = 0; i < 100 && (await retry.count()) === 0; i++) {
          await page.getByRole("button", { name: "Refresh deliveries" }).click();
          await page.waitForTimeout(100);
        }
        widths.failed = await overflow(page);
        const failedCut = await wholeness(page);
        down.delete(path);
        await retry.click();
        await page
          .getByRole("status")
          .getByText(/is attempted once more now\.$/)
          .waitFor();
        await receiver.waitFor(
          () => receiver.delivered.filter((r) => r.path === path).length === 2,
          10_000,
          "the retried delivery",
        );

        // Delete, behind a confirmation: Cancel keeps it, Confirm removes it.
        await page.getByRole("button", { name: "Delete" }).click();
        await page.getByRole("group", { name: /^Delete the endpoint/ }).waitFor();
        widths.confirm = await overflow(page);
        const confirmCut = await wholeness(page);
        await page.getByRole("button", { name: "Cancel" }).click();
        expect((await listed()).some((w) => w.url === url)).toBe(true);
        await page.getByRole("button", { name: "Delete" }).click();
        await page.getByRole("button", { name: "Confirm" }).click();
        await page
          .getByRole("status")
          .getByText(/^Deleted /)
          .waitFor();
        await row.waitFor({ state: "detached" });
        expect((await listed()).some((w) => w.url === url)).toBe(false);
        widths.deleted = await overflow(page);

        expect(await page.evaluate<number>("window.innerWidth")).toBe(width);
        await page.close();
        expect(widths).toEqual({ created: 0, paused: 0, failed: 0, confirm: 0, deleted: 0 });
        expect({ failed: failedCut, confirm: confirmCut }).toEqual({ failed: [], confirm: [] });
        expect(receiver.invalid).toEqual([]);
        expect(problems).toEqual([]);
      },
      120_000,
    );
  }
});
