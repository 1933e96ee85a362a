/**
 * Accounts inside accounts in the operator console (contract section 24, last bullet;
 * docs/api.md#pools-and-members, #transfers), in headless Chromium at 1280 px and at 390 px
 * against a real listening server: a member's page shows its parent and its pool (links) with
 * its pool's figures and no transfer; the pool's page shows it is a root, its children (links)
 * and the member's spending in its ledger (`onBehalfOf`, a link); a transfer between two roots
 * goes behind a confirmation, shows its id and both balances, reads the page again and marks
 * both halves in the ledgers (with no "Reverse"); a refusal for the amount and one to a member
 * are shown as sentences. The balances afterwards are read through the API. Nothing scrolls
 * sideways; nothing fails but the two refusals the walk asks for.
 *
 * The browser part is skipped only when /usr/bin/chromium is absent.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { reversibleAmount } from "../console/reversals.ts";
import { buildConsole } from "../scripts/build-console.ts";
import { accountRoutes } from "../src/accounts/routes.ts";
import { setConsoleAssets } from "../src/console/assets.ts";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import { browserPass, launchChromium } from "./chromium.ts";
import { makeLedger, type TestLedger } from "./harness.ts";

const WIDTHS = [1280, 390];

describe("what the console's ledger offers to reverse", () => {
  it("offers no Reverse on a half of a transfer", () => {
    expect(reversibleAmount({ type: "debit", amount: 30, transferId: "trf_1" })).toBeNull();
    expect(reversibleAmount({ type: "credit", amount: 30, transferId: "trf_1" })).toBeNull();
    expect(reversibleAmount({ type: "debit", amount: 30, transferId: null })).toBe("30");
  });
});

/** The accounts of one width's walk, by their ids. */
interface Tree {
  pool: string;
  alice: string;
  bob: string;
  from: string;
  to: string;
}

describe("pools, members and transfers in the console at 1280 px and 390 px", () => {
  let t: TestLedger;
  let base: string;
  let browser: BrowserContext;
  let profile: string;
  const trees = new Map<number, Tree>();

  beforeAll(async () => {
    if (!browserPass) return;
    setConsoleAssets(await buildConsole());
    t = await makeLedger();
    base = await t.listen();
    // Per width: a pool of 100 with two members (alice spent 10 of it), and two roots of 100
    // and 20.
    for (const width of WIDTHS) {
      const create = async (externalId: string, parentId?: string) =>
        (await t.call(accountRoutes.create, { body: { externalId, parentId } })).account.id;
      const pool = await create(`team-${width}`);
      const alice = await create(`alice-${width}`, pool);
      const bob = await create(`bob-${width}`, `team-${width}`);
      const from = await create(`from-${width}`);
      const to = await create(`to-${width}`);
      await t.call(ledgerRoutes.add, { body: { accountId: pool, amount: 100 } });
      await t.call(ledgerRoutes.deduct, {
        body: { accountId: alice, amount: 10, description: "alice's generation" },
      });
      await t.call(ledgerRoutes.add, {
        body: { accountId: from, amount: 100, description: "top-up" },
      });
      await t.call(ledgerRoutes.add, { body: { accountId: to, amount: 20 } });
      trees.set(width, { pool, alice, bob, from, to });
    }
    profile = mkdtempSync(join(tmpdir(), "ledger-chromium-tree-"));
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

  /** The figures of `GET /v1/accounts/balance` of `accountId`, as numbers. */
  const balanceOf = async (accountId: string) =>
    (await t.api("GET", `/v1/accounts/balance?accountId=${accountId}`)).body as {
      balance: number;
      reserved: number;
      available: number;
      fundedBy: string;
    };

  for (const width of WIDTHS) {
    it.skipIf(!browserPass)(
      `shows a member's pool, a pool's children and transfers between roots at ${width} px`,
      async () => {
        const a = trees.get(width) as Tree;
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
        const tree = page.getByRole("region", { name: "Parent and children" });
        const transfer = page.getByRole("region", { name: "Transfer credits" });
        const ledger = page.getByRole("region", { name: "Ledger" });
        const pool = `team-${width}`;

        // The member: its parent and its pool (links), its pool's figures, no transfer.
        await page.goto(`${base}/console#/accounts/${a.alice}`, { waitUntil: "load" });
        await page.getByLabel("API key").fill(t.key);
        await page.getByRole("button", { name: "Sign in" }).click();
        await page.getByRole("heading", { name: `alice-${width}`, level: 1 }).waitFor();
        const poolLinks = tree.getByRole("link", { name: pool, exact: true });
        await poolLinks.nth(2).waitFor();
        expect(await tree.locator("dl dd").allTextContents()).toEqual([pool, pool]);
        expect(
          await poolLinks.evaluateAll((links) => links.map((l) => l.getAttribute("href"))),
        ).toEqual(Array.from({ length: 3 }, () => `#/accounts/${a.pool}`));
        await tree.getByText(/^Its credits are its pool's: team-\d+ holds them/).waitFor();
        await tree.getByText("No children.").waitFor();
        await page.locator("dl.balances dd").first().getByText("90", { exact: true }).waitFor();
        expect(await balances(page)).toEqual(["90", "0", "90"]);
        await page.getByText(`The figures of its pool, ${pool}.`).waitFor();
        await transfer.getByText(/^No transfer from or to this account: its pool team-/).waitFor();
        expect(await transfer.getByRole("button").count()).toBe(0);
        // Its own ledger gets no rows while its pool funds it.
        await ledger.getByText("No transactions.").waitFor();
        widths.member = await sideways(page);

        // The pool: a root that funds itself, its two children, alice's spending on its behalf.
        await tree.locator("dl dd").first().getByRole("link").click();
        await page.waitForURL(`${base}/console#/accounts/${a.pool}`);
        await page.getByRole("heading", { name: pool, level: 1 }).waitFor();
        const children = tree.getByRole("list", { name: "Children" });
        await children.getByRole("link").nth(1).waitFor();
        expect(await tree.locator("dl dd").allTextContents()).toEqual(["none (a root)", "itself"]);
        expect(await children.getByRole("listitem").allTextContents()).toEqual([
          `alice-${width} funded by its pool`,
          `bob-${width} funded by its pool`,
        ]);
        expect(
          await children
            .getByRole("link")
            .evaluateAll((links) => links.map((l) => l.getAttribute("href"))),
        ).toEqual([`#/accounts/${a.alice}`, `#/accounts/${a.bob}`]);
        const spent = ledger.getByRole("row").filter({ hasText: "alice's generation" });
        await spent.getByRole("link", { name: `alice-${width}`, exact: true }).waitFor();
        expect((await spent.getByRole("cell").allTextContents()).slice(1, 7)).toEqual([
          "debit",
          "−10",
          "90",
          "alice's generation",
          `alice-${width}`,
          "–",
        ]);
        expect(await balances(page)).toEqual(["90", "0", "90"]);
        await transfer.getByRole("button", { name: "Transfer" }).waitFor();
        widths.pool = await sideways(page);

        // A transfer between two roots: a confirmation first, then its id and both balances.
        await page.goto(`${base}/console#/accounts/${a.from}`);
        await page.getByRole("heading", { name: `from-${width}`, level: 1 }).waitFor();
        await page.locator("dl.balances dd").first().getByText("100", { exact: true }).waitFor();
        await tree.getByText("No children.").waitFor();
        const to = transfer.getByLabel("To account (externalId or id)");
        const amount = transfer.getByLabel("Amount (credits)");
        const send = async (destination: string, credits: string) => {
          await to.fill(destination);
          await amount.fill(credits);
          await transfer.getByRole("button", { name: "Transfer" }).click();
        };
        // To itself: refused by the console, before any request.
        await send(`from-${width}`, "30");
        await transfer
          .getByText("Choose another account: a transfer moves credits to another one.")
          .waitFor();
        await transfer.getByLabel("Description (optional)").fill("budget for the EU team");
        await send(`to-${width}`, "30");
        const confirm = transfer.getByRole("group", {
          name: `Transfer 30 credits from from-${width} to to-${width}?`,
        });
        await confirm.waitFor();
        widths.confirm = await sideways(page);
        await confirm.getByRole("button", { name: "Cancel" }).click();
        await confirm.waitFor({ state: "detached" });
        expect(posts).toEqual([]);
        await send(`to-${width}`, "30");
        await confirm.getByRole("button", { name: "Confirm" }).click();
        const done = transfer.getByRole("status");
        await done.waitFor();
        const notice = (await done.textContent()) ?? "";
        expect(notice).toMatch(
          new RegExp(
            `^Transferred 30 credits to to-${width} \\(transfer trf_[0-9A-Z]{26}\\)\\. ` +
              `Balance of from-${width}: 70; of to-${width}: 50\\.$`,
          ),
        );
        const transferId = /trf_[0-9A-Z]{26}/.exec(notice)?.[0] ?? "";
        await done.getByRole("link", { name: `to-${width}`, exact: true }).waitFor();
        expect(posts).toHaveLength(1);
        expect(posts[0]?.url).toBe(`${base}/v1/accounts/transfer`);
        expect(posts[0]?.key).toMatch(/^console-[0-9a-f]{32}$/);
        expect(posts[0]?.body).toBe(
          `{"fromAccountId":"${a.from}","toAccountId":"${a.to}","amount":30,"description":"budget for the EU team"}`,
        );
        // The page read again: the balances, and the debit half marked, with no "Reverse".
        await page.locator("dl.balances dd").first().getByText("70", { exact: true }).waitFor();
        expect(await balances(page)).toEqual(["70", "0", "70"]);
        const out = ledger.getByRole("row").filter({ hasText: "budget for the EU team" });
        await out.waitFor();
        expect((await out.getByRole("cell").allTextContents()).slice(1, 7)).toEqual([
          "debit",
          "−30",
          "70",
          "budget for the EU team",
          `transfer out ${transferId}`,
          "–",
        ]);
        expect(await out.getByRole("button").count()).toBe(0);
        const topUp = ledger.getByRole("row").filter({ hasText: "top-up" });
        expect(await topUp.getByRole("cell").nth(5).textContent()).toBe("–");
        expect(await topUp.getByRole("button", { name: /^Reverse / }).count()).toBe(1);
        widths.transferred = await sideways(page);

        // More than is available, and to a member: refused, shown as sentences.
        await send(`to-${width}`, "1000");
        await transfer
          .getByRole("group", { name: `Transfer 1,000 credits from from-${width} to to-${width}?` })
          .getByRole("button", { name: "Confirm" })
          .click();
        const refused = transfer.getByRole("alert");
        await refused
          .getByText("The account does not have enough available credits for this.")
          .waitFor();
        expect(await refused.getAttribute("data-code")).toBe("INSUFFICIENT_CREDITS");
        widths.refused = await sideways(page);
        await send(`alice-${width}`, "5");
        await transfer
          .getByRole("group", { name: `Transfer 5 credits from from-${width} to alice-${width}?` })
          .getByRole("button", { name: "Confirm" })
          .click();
        await refused
          .getByText(
            "This account is paid for by the account above it: it holds no credits of its own.",
          )
          .waitFor();
        expect(await refused.getAttribute("data-code")).toBe("FUNDED_BY_PARENT");

        // The destination's ledger marks the credit half.
        await page.goto(`${base}/console#/accounts/${a.to}`);
        await page.getByRole("heading", { name: `to-${width}`, level: 1 }).waitFor();
        // The source's page, whose ledger has the debit half, may still be showing: wait for
        // the credit half's row of the destination's.
        const into = ledger.getByRole("row").filter({ hasText: `transfer in ${transferId}` });
        await into.waitFor();
        expect((await into.getByRole("cell").allTextContents()).slice(1, 6)).toEqual([
          "credit",
          "+30",
          "50",
          "budget for the EU team",
          `transfer in ${transferId}`,
        ]);
        expect(await into.getByRole("button").count()).toBe(0);
        expect(await balances(page)).toEqual(["50", "0", "50"]);
        widths.destination = await sideways(page);

        expect(await page.evaluate<number>("window.innerWidth")).toBe(width);
        await page.close();
        expect(widths).toEqual({
          member: 0,
          pool: 0,
          confirm: 0,
          transferred: 0,
          refused: 0,
          destination: 0,
        });
        // Through the API: 30 moved from one root to the other; the pool and members unmoved.
        expect(await balanceOf(a.from)).toMatchObject({ balance: 70, available: 70 });
        expect(await balanceOf(a.to)).toMatchObject({ balance: 50, available: 50 });
        expect(await balanceOf(a.alice)).toMatchObject({ balance: 90, fundedBy: a.pool });
        const { items } = (await t.api("GET", `/v1/transactions?accountId=${a.to}`)).body as {
          items: { type: string; amount: number; transferId: string | null }[];
        };
        expect(items[0]).toMatchObject({ type: "credit", amount: 30, transferId });
        // Three confirmed requests, each under its own key; two refused.
        expect(posts.map((p) => p.url)).toEqual(
          Array.from({ length: 3 }, () => `${base}/v1/accounts/transfer`),
        );
        expect(new Set(posts.map((p) => p.key)).size).toBe(3);
        expect(pageErrors).toEqual([]);
        expect(statuses).toEqual([
          `402 ${base}/v1/accounts/transfer`,
          `409 ${base}/v1/accounts/transfer`,
        ]);
        expect(consoleErrors).toEqual([
          "Failed to load resource: the server responded with a status of 402 (Payment Required)",
          "Failed to load resource: the server responded with a status of 409 (Conflict)",
        ]);
        expect(await t.verify()).toEqual([]);
      },
      120_000,
    );
  }
});
