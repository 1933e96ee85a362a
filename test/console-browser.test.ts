/**
 * The operator console (`GET /console`, docs/operations.md#operator-console) walked in a real
 * headless browser (Debian's chromium through playwright-core) against a real listening server:
 * sign-in with a wrong key (its error shown as a sentence, not the API's code) and a right one,
 * the accounts list with exact balances (digits grouped by thousands), search and
 * paging, an account's page (balances, spend limits, grants, pending reservations, ledger with a date range,
 * the usage chart and the by-model table, the ledger and usage downloads), add credits behind a confirmation (applied exactly
 * once, with an Idempotency-Key), webhooks and their deliveries, models, another project's key,
 * and sign-out. Every request stays on the server's origin; nothing fails but the two answers the
 * walk asks for on purpose (the wrong key's 401, the other project's 404), which Chromium logs.
 *
 * Skipped only when /usr/bin/chromium is absent (CI: `apt-get install -y chromium`).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildConsole } from "../scripts/build-console.ts";
import { accountRoutes } from "../src/accounts/routes.ts";
import { setConsoleAssets } from "../src/console/assets.ts";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import { reservationRoutes } from "../src/reservations/routes.ts";
import { usageRoutes } from "../src/usage/routes.ts";
import { webhookRoutes } from "../src/webhooks/routes.ts";
import { browserPass, launchChromium } from "./chromium.ts";
import { makeLedger, type TestLedger } from "./harness.ts";

const DAY_MS = 86_400_000;
const KEY_ITEM = "credit-ledger.apiKey";

describe("the operator console in a headless browser", () => {
  let t: TestLedger;
  let base: string;
  let browser: BrowserContext;
  let profile: string;
  let big: string;
  let other: { projectId: string; key: string };
  const now = Date.now();

  /** The raw text of a GET with `key`, so that exact literals can be compared. */
  const rawGet = async (path: string, key = t.key) => {
    const res = await fetch(`${base}${path}`, { headers: { "X-API-Key": key } });
    expect(res.status).toBe(200);
    return res.text();
  };

  beforeAll(async () => {
    if (!browserPass) return;
    // The bundle `npm run build` writes, built the same way in memory.
    setConsoleAssets(await buildConsole());
    t = await makeLedger({
      fakeClock: new Date(now - 5 * DAY_MS).toISOString(),
      env: { WEBHOOK_ALLOW_PRIVATE: "true" },
    });
    base = await t.listen();
    const create = (externalId: string, name: string) =>
      t.call(accountRoutes.create, { body: { externalId, name } });
    big = (await create("acct-big", "Big Spender")).account.id;
    await create("acct-tiny", "Tiny Tim");
    await create("acct-alerts", "Alerts Inc");
    for (let i = 1; i <= 20; i++) await create(`filler-${String(i).padStart(2, "0")}`, "Filler");
    // acct-big: eight credits of 1e9 five days ago, one of 600000000.000001 two days ago.
    for (let i = 0; i < 8; i++) {
      await t.call(ledgerRoutes.add, { body: { accountId: "acct-big", amount: 1_000_000_000 } });
    }
    t.setNow(now - 2 * DAY_MS);
    await t.api("POST", "/v1/accounts/credits/add", {
      body: '{"accountId": "acct-big", "amount": 600000000.000001, "description": "top-up"}',
    });
    // acct-tiny: 0.1 + 0.2.
    for (const amount of [0.1, 0.2]) {
      await t.call(ledgerRoutes.add, { body: { accountId: "acct-tiny", amount } });
    }
    // Usage on two days, and a pending hold of 2.5, as of now.
    const usage = { accountId: "acct-big", inputTokens: 120000, outputTokens: 30000 };
    await t.call(usageRoutes.record, { body: { ...usage, modelId: "gpt-4o" } });
    t.setNow(now);
    await t.call(usageRoutes.record, { body: { ...usage, modelId: "claude-sonnet-4-5" } });
    await t.call(usageRoutes.record, { body: { ...usage, modelId: "gpt-4o", cachedTokens: 1 } });
    await t.call(reservationRoutes.create, {
      body: { accountId: "acct-big", amount: 2.5, operation: "chat.completion" },
    });
    // A day spend limit in Asia/Kolkata: its window holds the 2.5 (docs/api.md#spend-limits).
    await t.call(accountRoutes.update, {
      body: {
        accountId: "acct-big",
        spendLimits: [{ period: "day", amount: 1000, timeZone: "Asia/Kolkata" }],
      },
    });
    // A webhook with one pending delivery: acct-alerts' available falls below its threshold.
    await t.call(webhookRoutes.create, {
      body: { url: "http://127.0.0.1:9/hook", description: "alerts" },
    });
    await t.call(accountRoutes.update, {
      body: { accountId: "acct-alerts", lowBalanceThreshold: 0.5 },
    });
    await t.call(ledgerRoutes.add, { body: { accountId: "acct-alerts", amount: 1 } });
    await t.call(ledgerRoutes.deduct, { body: { accountId: "acct-alerts", amount: 0.6 } });
    other = await t.newProject("other");

    profile = mkdtempSync(join(tmpdir(), "ledger-chromium-"));
    browser = await launchChromium(profile);
  }, 90_000);

  afterAll(async () => {
    if (!browserPass) return;
    await browser?.close();
    await t?.close();
    rmSync(profile, { recursive: true, force: true });
  });

  /** The cells' texts of the first table row under `root` with a cell that is exactly `text`. */
  const rowCells = async (root: Page | Locator, text: string) => {
    const page = "page" in root ? root.page() : root;
    // A `has` locator is relative to the row: start it from the page.
    const cell = page.getByRole("cell", { name: text, exact: true });
    const row = root.getByRole("row").filter({ has: cell }).first();
    await row.waitFor();
    return row.getByRole("cell").allTextContents();
  };

  const signIn = async (page: Page, key: string) => {
    await page.getByLabel("API key").fill(key);
    await page.getByRole("button", { name: "Sign in" }).click();
  };

  it.skipIf(!browserPass)(
    "walks every page with exact amounts, and nothing fails or leaves the service",
    async () => {
      const page = await browser.newPage();
      const pageErrors: string[] = [];
      const consoleErrors: string[] = [];
      const failed: string[] = [];
      const statuses: string[] = [];
      const requested: string[] = [];
      const posts: { url: string; headers: Record<string, string>; body: string | null }[] = [];
      page.on("pageerror", (err) => pageErrors.push(err.message));
      page.on("console", (msg) => {
        if (msg.type() === "error" || msg.type() === "warning") {
          consoleErrors.push(`${msg.type()}: ${msg.text()}`);
        }
      });
      page.on("requestfailed", (req) => failed.push(`${req.url()} ${req.failure()?.errorText}`));
      page.on("request", (req) => {
        requested.push(req.url());
        if (req.method() === "POST") {
          posts.push({ url: req.url(), headers: req.headers(), body: req.postData() });
        }
      });
      page.on("response", (res) => {
        if (res.status() >= 400) statuses.push(`${res.status()} ${res.url()}`);
      });
      // Run in the page (a string, since these tests have no DOM types).
      const storage = () =>
        page.evaluate<{ session: Record<string, string>; local: number; cookie: string }>(
          "({ session: { ...sessionStorage }, local: localStorage.length, cookie: document.cookie })",
        );

      // Sign in: a wrong key shows the API's error and the form stays.
      const res = await page.goto(`${base}/console`, { waitUntil: "load" });
      expect(res?.status()).toBe(200);
      await signIn(page, "ldg_not_a_real_key_0000000000000000");
      // The error as a sentence for a person, not the API's raw code (kept in data-code).
      const refused = page.getByRole("alert");
      await refused
        .getByText("This API key was not accepted: it is wrong, or it was revoked.")
        .waitFor();
      expect(await refused.getAttribute("data-code")).toBe("UNAUTHORIZED");
      expect(await refused.textContent()).not.toContain("UNAUTHORIZED");
      await expect(page.getByLabel("API key").isVisible()).resolves.toBe(true);
      expect((await storage()).session).toEqual({});

      // The right key: the accounts list, with each account's exact balances.
      await signIn(page, t.key);
      await page.getByRole("heading", { name: "Accounts" }).waitFor();
      expect(await storage()).toEqual({ session: { [KEY_ITEM]: t.key }, local: 0, cookie: "" });
      expect(page.url()).toBe(`${base}/console`);
      expect(await rowCells(page, "acct-big")).toEqual([
        "acct-big",
        "Big Spender",
        "8,600,000,000.000001",
        "2.5",
        "8,599,999,997.500001",
      ]);
      expect(await rowCells(page, "acct-tiny")).toEqual([
        "acct-tiny",
        "Tiny Tim",
        "0.3",
        "0",
        "0.3",
      ]);
      await page.getByText("Showing 1–20 of 23").waitFor();
      await page.getByRole("button", { name: "Next" }).click();
      await page.getByText("Showing 21–23 of 23").waitFor();
      expect(await rowCells(page, "filler-20")).toEqual(["filler-20", "Filler", "0", "0", "0"]);

      // Search narrows the list, by externalId or by name.
      await page.getByLabel("Search by externalId or name").fill("TIM");
      await page.getByRole("button", { name: "Search" }).click();
      await page.getByText("Showing 1–1 of 1").waitFor();
      expect(await page.getByRole("link", { name: /^acct-/ }).allTextContents()).toEqual([
        "acct-tiny",
      ]);
      await page.getByLabel("Search by externalId or name").fill("acct-");
      await page.getByRole("button", { name: "Search" }).click();
      await page.getByText("Showing 1–3 of 3").waitFor();

      // The account's page.
      await page.getByRole("link", { name: "acct-big" }).click();
      await page.getByRole("heading", { name: "acct-big" }).waitFor();
      const balances = page.locator("dl.balances dd");
      await balances.first().waitFor();
      expect(await balances.allTextContents()).toEqual([
        "8,600,000,000.000001",
        "2.5",
        "8,599,999,997.500001",
      ]);
      const grants = page.getByRole("region", { name: "Grants" });
      await grants.getByRole("row").nth(9).waitFor();
      expect(await grants.getByText("600,000,000.000001").count()).toBe(2); // amount, remaining
      expect(await grants.getByRole("row").count()).toBe(10);
      const holds = page.getByRole("region", { name: "Pending reservations" });
      expect(await rowCells(holds, "chat.completion")).toEqual([
        expect.stringMatching(/ UTC$/),
        "2.5",
        expect.stringMatching(/ UTC$/),
        "chat.completion",
      ]);
      expect(await holds.getByRole("row").count()).toBe(2);
      const limits = page.getByRole("region", { name: "Spend limits" });
      expect(await rowCells(limits, "Asia/Kolkata")).toEqual([
        "day",
        "Asia/Kolkata",
        "1,000",
        "0",
        "2.5",
        "997.5",
        expect.stringMatching(/ UTC$/),
        expect.stringMatching(/ UTC$/),
      ]);

      const ledger = page.getByRole("region", { name: "Ledger" });
      await ledger.getByRole("row").nth(9).waitFor();
      expect(await ledger.getByRole("row").count()).toBe(10);
      const newest = await ledger.getByRole("row").nth(1).getByRole("cell").allTextContents();
      expect(newest.slice(1)).toEqual([
        "credit",
        "+600,000,000.000001",
        "8,600,000,000.000001",
        "top-up",
        "–", // no reversals
        "Reverse",
      ]);
      // A date range from three days ago: only the top-up of two days ago.
      const from = new Date(now - 3 * DAY_MS).toISOString().slice(0, 10);
      await ledger.getByLabel("From").fill(from);
      await ledger.getByRole("button", { name: "Show" }).click();
      await ledger.getByText("Showing 1–1 of 1").waitFor();

      // Usage of the last 30 days: a chart, the days as a table, and the models.
      const usage = page.getByRole("region", { name: "Usage, last 30 days" });
      await usage.locator("figure.chart canvas").first().waitFor();
      const byModelText = await rawGet(
        `/v1/usage?summary=true&groupBy=model&accountId=${big}&startDate=${new Date(now - 29 * DAY_MS).toISOString().slice(0, 10)}`,
      );
      const byModel = JSON.parse(byModelText) as {
        summary: { totalCostUsd: number; groups: { key: string; costUsd: number }[] };
      };
      // gpt-4o: 0.6 + 0.59999875 USD; claude-sonnet-4-5: 0.81 USD.
      expect(byModel.summary.groups.map((g) => g.key)).toEqual(["gpt-4o", "claude-sonnet-4-5"]);
      const modelTable = usage.getByRole("table", { name: "Usage by model, last 30 days" });
      for (const g of byModel.summary.groups) {
        const cells = await modelTable
          .getByRole("row")
          .filter({ hasText: g.key })
          .getByRole("cell");
        expect(await cells.first().textContent()).toBe(g.key);
        // The cost cell holds the literal the API wrote.
        const cost = (await cells.last().textContent()) ?? "";
        expect(byModelText).toMatch(new RegExp(`"costUsd":${cost.replaceAll(".", "\\.")}[,}]`));
      }
      expect(await usage.getByText(`Total cost: ${byModel.summary.totalCostUsd} USD`).count()).toBe(
        1,
      );
      await usage.getByText("Usage by day as a table").click();
      const twoDaysAgo = new Date(now - 2 * DAY_MS).toISOString().slice(0, 10);
      const today = new Date(now).toISOString().slice(0, 10);
      expect(await rowCells(usage, twoDaysAgo)).toEqual([twoDaysAgo, "1", "0.6"]);
      expect(await rowCells(usage, today)).toEqual([today, "2", "1.40999875"]);

      // Exports: downloads fetched with the key in a header and saved from a Blob.
      const exportsRegion = page.getByRole("region", { name: "Exports" });
      const saveFile = async (button: string) => {
        const [file] = await Promise.all([
          page.waitForEvent("download"),
          exportsRegion.getByRole("button", { name: button }).click(),
        ]);
        return { name: file.suggestedFilename(), text: readFileSync(await file.path(), "utf8") };
      };
      const ledgerCsv = await saveFile("Download ledger (CSV)");
      expect(ledgerCsv.name).toMatch(new RegExp(`^transactions-${big}-\\d{8}T\\d{6}Z\\.csv$`));
      const records = ledgerCsv.text.split("\r\n");
      // The columns of contract section 20, then those of reversals (section 23); any that
      // come after them (section 24) are the export's own tests' business.
      expect(records[0]).toMatch(
        /^id,createdAt,accountId,externalId,type,amount,balanceAfter,description,reservationId,metadata,reversalOf,amountReversed(,\w+)*$/,
      );
      expect(records).toHaveLength(11); // the header, nine credits, the empty end
      expect(records[9]).toMatch(
        new RegExp(
          `^txn_\\w+,[^,]+,${big},acct-big,credit,600000000\\.000001,8600000000\\.000001,top-up,,\\{\\},,0(,.*)?$`,
        ),
      );
      await exportsRegion.getByRole("status").getByText(`Saved ${ledgerCsv.name}`).waitFor();
      const usageLines = (await saveFile("Download usage (NDJSON)")).text.trim().split("\n");
      expect(usageLines.map((line) => (JSON.parse(line) as { modelId: string }).modelId)).toEqual([
        "gpt-4o",
        "claude-sonnet-4-5",
        "gpt-4o",
      ]);
      expect(requested).toContain(`${base}/v1/transactions/export?accountId=${big}&format=csv`);

      // Add credits: a confirmation, then exactly one credit of the exact amount.
      const adjust = page.getByRole("region", { name: "Adjust credits" });
      await adjust.getByLabel("Amount (credits)").fill("0.000001");
      await adjust.getByLabel("Description (optional)").fill("console test");
      await adjust.getByRole("button", { name: "Deduct credits" }).click();
      await adjust.getByText("Deduct 0.000001 credits from acct-big?").waitFor();
      await adjust.getByRole("button", { name: "Cancel" }).click();
      await adjust.getByRole("button", { name: "Add credits" }).click();
      await adjust.getByText("Add 0.000001 credits to acct-big?").waitFor();
      expect(posts).toEqual([]);
      await adjust.getByRole("button", { name: "Confirm" }).click();
      await adjust
        .getByRole("status")
        .getByText(/Balance: 8,600,000,000\.000002/)
        .waitFor();
      await page.locator("dl.balances dd").first().getByText("8,600,000,000.000002").waitFor();
      expect(posts).toHaveLength(1);
      expect(posts[0]?.url).toBe(`${base}/v1/accounts/credits/add`);
      expect(posts[0]?.headers["idempotency-key"]).toMatch(/^console-[0-9a-f]{32}$/);
      expect(posts[0]?.body).toBe(
        `{"accountId":"${big}","amount":0.000001,"description":"console test"}`,
      );
      expect(await rawGet(`/v1/accounts/balance?accountId=${big}`)).toContain(
        '"balance":8600000000.000002,',
      );
      const txs = JSON.parse(await rawGet(`/v1/transactions?accountId=${big}`)) as {
        items: { description: string }[];
      };
      expect(txs.items).toHaveLength(10);
      expect(txs.items.filter((i) => i.description === "console test")).toHaveLength(1);
      expect(await t.verify()).toEqual([]);

      // Webhooks and their deliveries.
      await page.getByRole("link", { name: "Webhooks" }).click();
      await page.getByRole("heading", { name: "Webhooks" }).waitFor();
      await page.getByRole("button", { name: "Deliveries of http://127.0.0.1:9/hook" }).click();
      expect((await rowCells(page, "balance.low")).slice(1, 4)).toEqual([
        "balance.low",
        "pending",
        "0",
      ]);

      // Models, with their prices as the API wrote them.
      await page.getByRole("link", { name: "Models" }).click();
      expect((await rowCells(page, "gpt-4o")).slice(0, 7)).toEqual([
        "gpt-4o",
        "GPT-4o",
        "openai",
        expect.any(String),
        "2.5",
        "1.25",
        "10",
      ]);

      // Sign out forgets the key; another project's key sees none of this project.
      await page.getByRole("button", { name: "Sign out" }).click();
      await page.getByLabel("API key").waitFor();
      expect((await storage()).session).toEqual({});
      await signIn(page, other.key);
      await page.getByRole("link", { name: "Accounts" }).click();
      await page.getByText("No accounts yet.").waitFor();
      await page.goto(`${base}/console#/accounts/${big}`);
      const missing = page.getByRole("alert");
      await missing
        .getByText(/^There is no such account in this project\. Details: Account /)
        .waitFor();
      expect(await missing.getAttribute("data-code")).toBe("ACCOUNT_NOT_FOUND");
      await page.getByRole("button", { name: "Sign out" }).click();
      await page.getByLabel("API key").waitFor();
      expect(await storage()).toEqual({ session: {}, local: 0, cookie: "" });
      await page.close();

      expect(pageErrors).toEqual([]);
      expect(failed).toEqual([]);
      // Only the two refusals the walk asked for, which Chromium also logs.
      expect(statuses).toEqual([
        `401 ${base}/v1/accounts?limit=1`,
        `404 ${base}/v1/accounts/get?accountId=${big}`,
      ]);
      expect(consoleErrors).toEqual([
        "error: Failed to load resource: the server responded with a status of 401 (Unauthorized)",
        "error: Failed to load resource: the server responded with a status of 404 (Not Found)",
      ]);
      expect(requested.filter((url) => !url.startsWith(`${base}/`))).toEqual([]);
      expect(requested).toContain(`${base}/console/app.js`);
      expect(requested).toContain(`${base}/console/app.css`);
      // The key never went into a URL.
      expect(requested.filter((url) => url.includes(t.key) || url.includes(other.key))).toEqual([]);
    },
    120_000,
  );

  it.skipIf(!browserPass)(
    "serves the page and its files without a key, with a strict CSP",
    async () => {
      for (const path of ["/console", "/console/app.js", "/console/app.css"]) {
        const res = await fetch(`${base}${path}`);
        expect(res.status).toBe(200);
        const csp = res.headers.get("content-security-policy") ?? "";
        expect(csp).toContain("default-src 'none'");
        expect(csp).toContain("connect-src 'self'");
        expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      }
      const page = await fetch(`${base}/console/`, { redirect: "manual" });
      expect(page.status).toBe(308);
      expect(new URL(page.headers.get("location") ?? "", `${base}/console/`).href).toBe(
        `${base}/console`,
      );
    },
  );
});
