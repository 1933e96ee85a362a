/**
 * Adds, deductions, the transaction list and manual transactions (docs/api.md#balance-
 * adjustments-and-transactions), called through the typed client (test/harness.ts's
 * `t.client`) wherever the request is one its types allow; requests the types refuse (a string
 * amount, an unknown `type`, a query of the wrong type) go raw through `t.fail`.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import type { Amount, components, operations } from "../src/client/index.ts";
import type { ErrorBody } from "../src/errors.ts";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import { transactionRoutes } from "../src/transactions/routes.ts";
import {
  type CallInput,
  expectFailure,
  expectOk,
  fundedAccount,
  makeLedger,
  type TestLedger,
} from "./harness.ts";

type AddBody = components["schemas"]["AddCreditsRequest"];
type TransactionQuery = NonNullable<operations["listTransactions"]["parameters"]["query"]>;

/** The `details` of a VALIDATION_ERROR: one `{path, message}` per field problem. */
const fieldIssues = z.array(z.object({ path: z.string(), message: z.string() }));
const issuePaths = (err: ErrorBody) => fieldIssues.parse(err.error.details).map((d) => d.path);

describe("ledger", () => {
  let t: TestLedger;
  let acc: string;
  beforeEach(async () => {
    t = await makeLedger({ fakeClock: "2026-03-01T10:00:00Z" });
    acc = await fundedAccount(t, "cust");
  });
  afterEach(async () => t.close());

  /** The raw body of an add or a deduction, for the requests the client's types refuse. */
  const credits = (amount: unknown, extra: object = {}, accountId = acc): CallInput => ({
    body: { accountId, amount, ...extra },
  });
  /** What an add or a deduction takes besides the account and the amount. */
  type Extra = Omit<Partial<AddBody>, "accountId" | "amount">;
  const postAdd = (amount: Amount, extra: Extra = {}, accountId = acc) =>
    t.client.POST("/v1/accounts/credits/add", { body: { accountId, amount, ...extra } });
  const postDeduct = (amount: Amount, extra: Extra = {}, accountId = acc) =>
    t.client.POST("/v1/accounts/credits/deduct", { body: { accountId, amount, ...extra } });
  const add = async (amount: Amount, extra: Extra = {}, accountId = acc) =>
    expectOk(await postAdd(amount, extra, accountId));
  const deduct = async (amount: Amount, extra: Extra = {}, accountId = acc) =>
    expectOk(await postDeduct(amount, extra, accountId));
  const balance = async () =>
    expectOk(await t.client.GET("/v1/accounts/balance", { params: { query: { accountId: acc } } }));
  const txns = async (query: TransactionQuery = { accountId: acc }) =>
    expectOk(await t.client.GET("/v1/transactions", { params: { query } }));
  const txnCount = async () => (await txns()).pagination.totalCount;

  describe("add and deduct", () => {
    it("add answers {success, accountId, externalId, balance, added}", async () => {
      expect(await add(25.5, { description: "purchase" })).toMatchObject({
        success: true,
        accountId: acc,
        externalId: "cust",
        balance: 25.5,
        added: 25.5,
      });
      const again = await add(4.5, {}, "cust");
      expect(again).toMatchObject({ accountId: acc, balance: 30, added: 4.5 });
    });

    it("deduct answers {success, accountId, externalId, balance, deducted}", async () => {
      await add(10);
      expect(await deduct(3.25, { description: "usage" }, "cust")).toMatchObject({
        success: true,
        accountId: acc,
        externalId: "cust",
        balance: 6.75,
        deducted: 3.25,
      });
      expect(await balance()).toMatchObject({ balance: 6.75, available: 6.75 });
    });

    it("reads back 0.1 + 0.2 as exactly 0.3, and 0.3 - 0.1 as 0.2", async () => {
      await add(0.1);
      expect((await add(0.2)).balance).toBe(0.3);
      expect((await balance()).balance).toBe(0.3);
      expect((await deduct(0.1)).balance).toBe(0.2);
      expect(await t.verify()).toEqual([]);
    });

    it("accepts 6 decimals and 1e9, rejects 7 decimals, 0, negatives, strings and 1e9+1", async () => {
      await add(0.000001);
      expect((await add(1e9)).balance).toBe(1000000000.000001);
      for (const bad of [0.0000001, 1.1234567, 0, -5, "10", 1e9 + 1, null]) {
        const err = await t.fail(ledgerRoutes.add, credits(bad), 400, "VALIDATION_ERROR");
        expect(issuePaths(err)).toContain("body.amount");
        await t.fail(ledgerRoutes.deduct, credits(bad), 400, "VALIDATION_ERROR");
      }
      expect((await balance()).balance).toBe(1000000000.000001);
      expect(await txnCount()).toBe(2);
    });

    it("refuses a credit past 9e9 with 409 BALANCE_LIMIT_EXCEEDED and changes nothing", async () => {
      for (let i = 0; i < 9; i++) await add(1e9);
      expect((await balance()).balance).toBe(9e9);
      expectFailure(await postAdd(0.000001), 409, "BALANCE_LIMIT_EXCEEDED");
      expectFailure(
        await t.client.POST("/v1/transactions/create", {
          body: { accountId: acc, amount: 1, type: "credit" },
        }),
        409,
        "BALANCE_LIMIT_EXCEEDED",
      );
      expect((await balance()).balance).toBe(9e9);
      expect(await txnCount()).toBe(9);
      expect(await t.verify()).toEqual([]);
    });

    it("refuses a deduction beyond available with 402 and details, changing nothing", async () => {
      await add(10);
      const err = expectFailure(await postDeduct(10.000001), 402, "INSUFFICIENT_CREDITS");
      expect(err.error.details).toEqual({ available: 10, requested: 10.000001 });
      expect(await balance()).toMatchObject({ balance: 10, reserved: 0, available: 10 });
      expect(await txnCount()).toBe(1);
      expect((await deduct(10)).balance).toBe(0);
    });

    it("counts reservations against a deduction", async () => {
      await add(100);
      expectOk(
        await t.client.POST("/v1/reservations/create", { body: { accountId: acc, amount: 60 } }),
      );
      const err = expectFailure(await postDeduct(41), 402, "INSUFFICIENT_CREDITS");
      expect(err.error.details).toEqual({ available: 40, requested: 41 });
      expect(await balance()).toEqual({
        accountId: acc,
        externalId: "cust",
        balance: 100,
        reserved: 60,
        available: 40,
        fundedBy: acc,
      });
      expect((await deduct(40)).balance).toBe(60);
    });

    it("keeps paymentMethod, description and metadata in the transaction", async () => {
      await add(5, { paymentMethod: "stripe_card", description: "top-up", metadata: { o: "1" } });
      const [item] = (await txns()).items;
      expect(item).toMatchObject({
        type: "credit",
        amount: 5,
        description: "top-up",
        metadata: { paymentMethod: "stripe_card", o: "1" },
      });
    });

    it("limits description to 1,000 chars and paymentMethod to 255", async () => {
      await add(1, { description: "d".repeat(1000) });
      for (const [extra, path] of [
        [{ description: "d".repeat(1001) }, "body.description"],
        [{ paymentMethod: "p".repeat(256) }, "body.paymentMethod"],
      ] as const) {
        const err = expectFailure(await postAdd(1, extra), 400, "VALIDATION_ERROR");
        expect(issuePaths(err)).toContain(path);
      }
      expect(await txnCount()).toBe(1);
    });

    it("answers 404 for an unknown account", async () => {
      expectFailure(await postAdd(1, {}, "nobody"), 404, "ACCOUNT_NOT_FOUND");
      expectFailure(await postDeduct(1, {}, "nobody"), 404, "ACCOUNT_NOT_FOUND");
    });
  });

  describe("transaction list", () => {
    it("answers {items, pagination} newest first with the full Transaction shape", async () => {
      await add(10, { description: "first" });
      t.advance(1000);
      await deduct(3, { description: "second" });
      const body = await txns();
      expect(Object.keys(body).sort()).toEqual(["items", "pagination"]);
      expect(body.pagination).toEqual({ limit: 50, offset: 0, totalCount: 2, hasMore: false });
      expect(body.items.map((i) => i.description)).toEqual(["second", "first"]);
      expect(body.items[0]).toMatchObject({
        accountId: acc,
        type: "debit",
        amount: 3,
        balanceAfter: 7,
        metadata: {},
        createdAt: "2026-03-01T10:00:01.000Z",
      });
      expect(body.items[1]).toMatchObject({ type: "credit", amount: 10, balanceAfter: 10 });
    });

    it("keeps a stable newest-first order for equal timestamps across pages", async () => {
      for (let i = 1; i <= 7; i++) await add(i);
      const all = (await txns()).items.map((i) => i.amount);
      expect(all).toEqual([7, 6, 5, 4, 3, 2, 1]);
      const pages: Amount[] = [];
      for (let offset = 0; offset < 7; offset += 3) {
        const page = await txns({ accountId: acc, limit: 3, offset });
        expect(page.pagination.hasMore).toBe(offset + 3 < 7);
        pages.push(...page.items.map((i) => i.amount));
      }
      expect(pages).toEqual(all);
    });

    it("defaults limit to 50 and reports hasMore", async () => {
      for (let i = 0; i < 51; i++) await add(1);
      const first = await txns();
      expect(first.items).toHaveLength(50);
      expect(first.pagination).toEqual({ limit: 50, offset: 0, totalCount: 51, hasMore: true });
      const rest = await txns({ accountId: acc, offset: 50 });
      expect(rest.items).toHaveLength(1);
      expect(rest.items[0]?.balanceAfter).toBe(1);
      expect(rest.pagination).toEqual({ limit: 50, offset: 50, totalCount: 51, hasMore: false });
      const max = await txns({ accountId: acc, limit: 500 });
      expect(max.items).toHaveLength(51);
    });

    it("rejects limit 0, limit 501, offset -1 and a bad date", async () => {
      const cases: [TransactionQuery, string][] = [
        [{ limit: 0 }, "query.limit"],
        [{ limit: 501 }, "query.limit"],
        [{ offset: -1 }, "query.offset"],
        [{ startDate: "yesterday" }, "query.startDate"],
        [{ limit: 2.5 }, "query.limit"],
        [{ include: "bogus" }, "query.include"],
        [{ startDate: "2026-03-02", endDate: "2026-03-01" }, "query.startDate"],
      ];
      for (const [query, path] of cases) {
        const res = await t.client.GET("/v1/transactions", { params: { query } });
        expect(issuePaths(expectFailure(res, 400, "VALIDATION_ERROR"))).toContain(path);
      }
      // A limit that is not a number: the client's types refuse it, so it goes raw.
      const err = await t.fail(
        transactionRoutes.list,
        { query: { limit: "abc" } },
        400,
        "VALIDATION_ERROR",
      );
      expect(issuePaths(err)).toContain("query.limit");
    });

    it("lists all accounts without accountId and filters by externalId", async () => {
      const other = await fundedAccount(t, "other", 7);
      await add(3);
      const all = await txns({});
      expect(all.pagination.totalCount).toBe(2);
      expect(all.items.map((i) => i.accountId)).toEqual([acc, other]);
      const byExt = await txns({ externalId: "other" });
      expect(byExt.items.map((i) => [i.accountId, i.amount])).toEqual([[other, 7]]);
      const byExtInAccountId = await txns({ accountId: "other" });
      expect(byExtInAccountId.items).toHaveLength(1);
      expectFailure(
        await t.client.GET("/v1/transactions", { params: { query: { externalId: "ghost" } } }),
        404,
        "ACCOUNT_NOT_FOUND",
      );
    });

    it("filters by startDate/endDate, a date-only endDate covering the whole UTC day", async () => {
      await add(1); // 2026-03-01T10:00Z
      t.setNow(Date.parse("2026-03-02T23:59:59.500Z"));
      await add(2);
      t.setNow(Date.parse("2026-03-03T00:00:00.000Z"));
      await add(3);
      const amounts = async (dates: Record<string, string>) =>
        (await txns({ accountId: acc, ...dates })).items.map((i) => i.amount);
      expect(await amounts({ endDate: "2026-03-02" })).toEqual([2, 1]);
      expect(await amounts({ startDate: "2026-03-02" })).toEqual([3, 2]);
      expect(await amounts({ startDate: "2026-03-02", endDate: "2026-03-02" })).toEqual([2]);
      expect(await amounts({ startDate: "2026-03-03T00:00:00Z" })).toEqual([3]);
      expect(await amounts({ endDate: "2026-03-01T10:00:00Z" })).toEqual([1]);
      expect(await amounts({ startDate: "2026-03-04" })).toEqual([]);
      const range = await txns({ accountId: acc, startDate: "2026-03-01", endDate: "2026-03-02" });
      expect(range.pagination.totalCount).toBe(2);
    });

    it("adds reservation and usage audit data with include=reservation,usage", async () => {
      await add(100);
      const { reservation } = expectOk(
        await t.client.POST("/v1/reservations/create", {
          body: { accountId: acc, amount: 20, operation: "chat", model: "gpt-4o" },
        }),
      );
      const conf = expectOk(
        await t.client.POST("/v1/reservations/confirm", {
          body: { reservationId: reservation.id, actualAmount: 12 },
        }),
      );
      const { usageRecord } = expectOk(
        await t.client.POST("/v1/usage/record", {
          body: {
            accountId: acc,
            modelId: "gpt-4o",
            inputTokens: 1000,
            outputTokens: 500,
            transactionId: conf.transactionId,
          },
        }),
      );
      const body = await txns({ accountId: acc, include: "reservation,usage" });
      const [settled, topUp] = body.items;
      expect(settled?.id).toBe(conf.transactionId);
      expect(settled).toMatchObject({ type: "debit", amount: 12, balanceAfter: 88 });
      expect(settled?.reservation).toMatchObject({
        id: reservation.id,
        accountId: acc,
        amount: 20,
        status: "confirmed",
        metadata: { operation: "chat", model: "gpt-4o" },
      });
      expect(settled?.usage).toHaveLength(1);
      expect(settled?.usage?.[0]).toMatchObject({
        id: usageRecord.id,
        modelId: "gpt-4o",
        inputTokens: 1000,
        outputTokens: 500,
        estimatedCostUsd: usageRecord.estimatedCostUsd,
      });
      expect(topUp?.reservation).toBeNull();
      expect(topUp?.usage).toEqual([]);
      const plain = await txns();
      expect(plain.items[0]).not.toHaveProperty("reservation");
      expect(plain.items[0]).not.toHaveProperty("usage");
      const onlyUsage = await txns({ accountId: acc, include: "usage" });
      expect(onlyUsage.items[0]).not.toHaveProperty("reservation");
      expect(onlyUsage.items[0]?.usage).toHaveLength(1);
    });
  });

  describe("manual transactions", () => {
    const manual = async (body: components["schemas"]["CreateTransactionRequest"]) =>
      expectOk(await t.client.POST("/v1/transactions/create", { body }));

    it("creates a credit and a debit with {success, transaction}", async () => {
      const c = await manual({ accountId: acc, amount: 50, type: "credit", description: "mig" });
      expect(c.success).toBe(true);
      expect(c.transaction).toMatchObject({
        accountId: acc,
        type: "credit",
        amount: 50,
        balanceAfter: 50,
        createdAt: "2026-03-01T10:00:00.000Z",
      });
      expect(typeof c.transaction.id).toBe("string");
      const d = await manual({ accountId: "cust", amount: 20, type: "debit" });
      expect(d.transaction).toMatchObject({ type: "debit", amount: 20, balanceAfter: 30 });
      expect((await balance()).balance).toBe(30);
      const items = (await txns()).items;
      expect(items.map((i) => i.id)).toEqual([d.transaction.id, c.transaction.id]);
      expect(items[1]?.description).toBe("mig");
    });

    it("rejects an invalid type and a debit beyond available", async () => {
      await add(10);
      const bad = await t.fail(
        transactionRoutes.create,
        { body: { accountId: acc, amount: 1, type: "refund" } },
        400,
        "VALIDATION_ERROR",
      );
      expect(issuePaths(bad)).toContain("body.type");
      const over = expectFailure(
        await t.client.POST("/v1/transactions/create", {
          body: { accountId: acc, amount: 11, type: "debit" },
        }),
        402,
        "INSUFFICIENT_CREDITS",
      );
      expect(over.error.details).toEqual({ available: 10, requested: 11 });
      expect((await balance()).balance).toBe(10);
      expect(await txnCount()).toBe(1);
    });
  });

  it("keeps the balanceAfter chain and every invariant after a mixed sequence", async () => {
    await add(100.5);
    await deduct(0.25);
    const hold = (amount: number) =>
      t.client.POST("/v1/reservations/create", { body: { accountId: acc, amount } });
    const r1 = expectOk(await hold(30));
    expectOk(
      await t.client.POST("/v1/reservations/confirm", {
        body: { reservationId: r1.reservation.id, actualAmount: 35 },
      }),
    );
    const r2 = expectOk(await hold(10));
    expectOk(
      await t.client.POST("/v1/reservations/cancel", {
        body: { reservationId: r2.reservation.id },
      }),
    );
    expectOk(
      await t.client.POST("/v1/transactions/create", {
        body: { accountId: acc, amount: 0.75, type: "credit" },
      }),
    );
    expectOk(
      await t.client.POST("/v1/transactions/create", {
        body: { accountId: acc, amount: 6, type: "debit" },
      }),
    );
    expectFailure(await postDeduct(1000), 402, "INSUFFICIENT_CREDITS"); // no row
    const items = (await txns()).items.slice().reverse();
    expect(items.map((i) => [i.type, i.amount])).toEqual([
      ["credit", 100.5],
      ["debit", 0.25],
      ["debit", 35],
      ["credit", 0.75],
      ["debit", 6],
    ]);
    let running = 0;
    for (const item of items) {
      const amount = Number(item.amount); // every amount here is far below 2^33: a number
      expect(amount).toBe(item.amount);
      running = Math.round((running + (item.type === "credit" ? 1 : -1) * amount) * 1e6) / 1e6;
      expect(item.balanceAfter).toBe(running);
    }
    expect(await balance()).toMatchObject({ balance: 60, reserved: 0, available: 60 });
    expect(await t.verify()).toEqual([]);
  });
});
