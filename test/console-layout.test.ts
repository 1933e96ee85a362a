/**
 * The operator console's pages of contract section 16 (docs/design.md#operator-console) in
 * headless Chromium, at 1280 px and at 390 px wide, with an account, a plan and a webhook whose
 * ids and names are 255 characters long: sign-in, overview, accounts, an account (with its plan
 * assignment and next grant), plans, webhooks (with deliveries) and models. On every page, at
 * both widths: the figures the API gives are there, exactly; the page does not scroll sideways
 * (`document.scrollingElement.scrollWidth <= innerWidth`, a table wider than the screen scrolls
 * inside its own box); and nothing fails: no page error, no console message, no failed request,
 * no answer of 400 or above.
 *
 * Then webhook management at both widths (docs/operations.md#operator-console), against a
 * loopback receiver that verifies every delivery with the secret the page showed: create an
 * endpoint with a 255-character URL and description (the secret shown once), pause, resume,
 * send a test event, retry a test event that failed, and delete behind a confirmation.
 *
 * Skipped only when /usr/bin/chromium is absent (CI: `apt-get install -y chromium`).
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildConsole } from "../scripts/build-console.ts";
import { accountRoutes } from "../src/accounts/routes.ts";
import { setConsoleAssets } from "../src/console/assets.ts";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import { planRoutes } from "../src/plans/routes.ts";
import { usageRoutes } from "../src/usage/routes.ts";
import type { DeliveryWorker } from "../src/webhooks/delivery.ts";
import { webhookRoutes } from "../src/webhooks/routes.ts";
import { makeLedger, type TestLedger } from "./harness.ts";
import { type Receiver, startReceiver, startWorker } from "./webhooks-receiver.ts";

const CHROMIUM = "/usr/bin/chromium";
const hasChromium = existsSync(CHROMIUM);
const WIDTHS = [1280, 390];

/** 255 characters without a space: the longest id or name the API takes, and the hardest to wrap. */
const LONG_ID = `customer-${"0123456789abcdef".repeat(16)}`.slice(0, 255);
const LONG_NAME = `Ada${"L".repeat(252)}`;
const LONG_PLAN = `Pro-${"monthly".repeat(40)}`.slice(0, 255);
const LONG_URL = `http://127.0.0.1:9/hooks/${"segment".repeat(30)}`;

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

/** Headless Chromium with a fresh profile in `profile`, as every browser test of the console. */
const launch = (profile: string) =>
  chromium.launchPersistentContext(profile, {
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

  beforeAll(async () => {
    if (!hasChromium) return;
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
    await t.api("POST", "/v1/accounts/credits/add", {
      body: `{"accountId": "${longId}", "amount": 600000000.000001}`,
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
    // A webhook with a long URL and description, and a pending balance.low delivery to it.
    await t.call(webhookRoutes.create, { body: { url: LONG_URL, description: LONG_NAME } });
    await t.call(accountRoutes.update, {
      body: { accountId: "acct-short", lowBalanceThreshold: 0.25 },
    });
    await t.call(ledgerRoutes.deduct, { body: { accountId: "acct-short", amount: 0.1 } });

    profile = mkdtempSync(join(tmpdir(), "ledger-chromium-layout-"));
    browser = await launch(profile);
  }, 90_000);

  afterAll(async () => {
    if (!hasChromium) return;
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

  async function walk(page: Page, width: number): Promise<Record<string, number | string>> {
    const widths: Record<string, number | string> = {};
    const visit = async (name: string, hash: string, ready: () => Promise<unknown>) => {
      await page.goto(`${base}/console#/${hash}`);
      await ready();
      widths[name] = await overflow(page);
    };

    await page.goto(`${base}/console`, { waitUntil: "load" });
    await page.getByLabel("API key").waitFor();
    widths["sign-in"] = await overflow(page);
    await page.getByLabel("API key").fill(t.key);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Accounts", level: 1 }).waitFor();

    await visit("overview", "overview", async () => {
      await page.getByRole("heading", { name: "Overview" }).waitFor();
      expect(await facts(page, "dl.balances")).toEqual([
        "Accounts: 2",
        // 8600000000.000001 + 500 (the plan's grant) + 0.3 − 0.1, added exactly.
        "Credits outstanding: 8600000500.200001",
      ]);
      const usage = page.getByRole("region", { name: "Usage, last 30 days" });
      await usage.locator("figure.chart canvas").first().waitFor();
      const models = usage.getByRole("table", { name: "Usage by model, last 30 days" });
      await models.getByRole("cell", { name: "gpt-4o", exact: true }).waitFor();
      await models.getByRole("cell", { name: "claude-sonnet-4-5", exact: true }).waitFor();
    });

    await visit("accounts", "accounts", async () => {
      await page.getByRole("link", { name: LONG_ID }).waitFor();
      await page.getByRole("cell", { name: LONG_NAME }).waitFor();
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
    });

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
    });

    await visit("models", "models", async () => {
      await page.getByRole("cell", { name: "gpt-4o", exact: true }).waitFor();
    });

    expect(await page.evaluate<number>("window.innerWidth")).toBe(width);
    return widths;
  }

  for (const width of WIDTHS) {
    it.skipIf(!hasChromium)(
      `walks every page at ${width} px: the figures, no sideways scroll, nothing fails`,
      async () => {
        const page = await browser.newPage();
        await page.setViewportSize({ width, height: 900 });
        const problems = problemsOf(page);
        const widths = await walk(page, width);
        await page.close();
        expect(widths).toEqual({
          "sign-in": 0,
          overview: 0,
          accounts: 0,
          account: 0,
          plans: 0,
          webhooks: 0,
          models: 0,
        });
        expect(problems).toEqual([]);
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
    if (!hasChromium) return;
    setConsoleAssets(await buildConsole());
    // TEST_ENV (harness.ts) sets WEBHOOK_ALLOW_PRIVATE=true: the receiver is on 127.0.0.1.
    t = await makeLedger();
    base = await t.listen();
    receiver = await startReceiver();
    receiver.answer = (path) => (down.has(path) ? 503 : 200);
    // No retries: a refused attempt makes the delivery `failed` at once.
    worker = startWorker(t, { retrySeconds: [] });
    profile = mkdtempSync(join(tmpdir(), "ledger-chromium-webhooks-"));
    browser = await launch(profile);
  }, 90_000);

  afterAll(async () => {
    if (!hasChromium) return;
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
    it.skipIf(!hasChromium)(
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
          "balance.low, reservation.expired, credits.expired, plan.granted, spend_limit.reached",
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
        expect(receiver.invalid).toEqual([]);
        expect(problems).toEqual([]);
      },
      120_000,
    );
  }
});
