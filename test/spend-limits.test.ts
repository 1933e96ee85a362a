/**
 * Spend limits over real HTTP (docs/api.md#spend-limits, contract section 18), on every engine:
 * the Account object and its validation, exact enforcement of deductions, manual debits,
 * reservations and confirm overages with the 402's details and Retry-After, windows across
 * midnight in UTC and Asia/Kolkata and across daylight saving in America/New_York (an injected
 * clock), 50 simultaneous deductions, the reads, the `spend_limit.reached` event, and
 * `ledger verify`.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { LedgerClient } from "../src/client/index.ts";
import { expectError } from "./contract.ts";
import { expectFailure, expectOk, fundedAccount, makeLedger, type TestLedger } from "./harness.ts";
import { countStatuses } from "./http-client.ts";

type Limit = {
  period: "hour" | "day" | "week" | "month";
  amount: number;
  timeZone?: string;
  soft?: boolean;
};

describe("spend limits", () => {
  let t: TestLedger;
  let client: LedgerClient;
  const start = async (fakeClock?: string) => {
    t = await makeLedger(fakeClock ? { fakeClock } : {});
    client = t.clientFor(t.key, await t.listen());
  };
  afterEach(async () => {
    expect(await t.verify()).toEqual([]);
    await t.close();
  });

  /** An account "u1" with `credits` and `limits`. */
  const limited = async (credits: number, limits: Limit[]) => {
    await fundedAccount(t, "u1", credits);
    const body = { accountId: "u1", spendLimits: limits };
    return expectOk(await client.POST("/v1/accounts/update", { body })).account;
  };
  const deduct = (amount: number) =>
    client.POST("/v1/accounts/credits/deduct", { body: { accountId: "u1", amount } });
  const refused = async (outcome: Promise<{ error?: unknown; response: Response }>) => {
    const o = await outcome;
    const body = expectFailure(o, 402, "SPEND_LIMIT_EXCEEDED");
    return { details: body.error.details, retryAfter: o.response.headers.get("Retry-After") };
  };
  const limitsOf = async () =>
    expectOk(await client.GET("/v1/accounts/limits", { params: { query: { accountId: "u1" } } }));

  it("carries spendLimits on the Account object, replaced whole, and validates them", async () => {
    await start();
    const created = expectOk(
      await client.POST("/v1/accounts/create", {
        body: { externalId: "u1", spendLimits: [{ period: "day", amount: 50 }] },
      }),
    ).account;
    expect(created.spendLimits).toEqual([
      { period: "day", amount: 50, timeZone: "UTC", soft: false },
    ]);
    const other = expectOk(
      await client.POST("/v1/accounts/create", { body: { externalId: "u2" } }),
    );
    expect(other.account.spendLimits).toEqual([]);
    const body = {
      accountId: "u1",
      spendLimits: [
        { period: "hour" as const, amount: 0.5, timeZone: "Asia/Kolkata", soft: true },
        { period: "month" as const, amount: 500 },
      ],
    };
    const updated = expectOk(await client.POST("/v1/accounts/update", { body })).account;
    expect(updated.spendLimits).toEqual([
      { period: "hour", amount: 0.5, timeZone: "Asia/Kolkata", soft: true },
      { period: "month", amount: 500, timeZone: "UTC", soft: false },
    ]);
    const kept = expectOk(
      await client.POST("/v1/accounts/update", { body: { accountId: "u1", name: "n" } }),
    );
    expect(kept.account.spendLimits).toHaveLength(2);
    const got = expectOk(
      await client.GET("/v1/accounts/get", { params: { query: { accountId: "u1" } } }),
    );
    expect(got.spendLimits).toHaveLength(2);
    for (const none of [[], null]) {
      const cleared = await client.POST("/v1/accounts/update", {
        body: { accountId: "u1", spendLimits: none },
      });
      expect(expectOk(cleared).account.spendLimits).toEqual([]);
    }
    const bad = [
      [{ period: "day", amount: 5, timeZone: "Mars/Olympus" }],
      [{ period: "day", amount: 5, timeZone: "+05:30" }],
      [{ period: "day", amount: 0 }],
      [{ period: "year", amount: 5 }],
      [{ period: "day", amount: 5, extra: 1 }],
      Array.from({ length: 11 }, () => ({ period: "day", amount: 5 })),
    ];
    for (const spendLimits of bad) {
      const res = await t.api("POST", "/v1/accounts/update", {
        body: { accountId: "u1", spendLimits },
      });
      expectError(res, 400, "VALIDATION_ERROR");
    }
    expect((await limitsOf()).limits).toEqual([]);
  });

  it("allows reaching a limit exactly and refuses one micro-credit more", async () => {
    await start("2026-11-27T10:00:00.000Z");
    await limited(1000, [{ period: "day", amount: 100 }]);
    expectOk(await deduct(99.999999));
    expectOk(await deduct(0.000001));
    const { details, retryAfter } = await refused(deduct(0.000001));
    expect(details).toEqual({
      period: "day",
      limit: 100,
      timeZone: "UTC",
      spent: 100,
      held: 0,
      requested: 0.000001,
      remaining: 0,
      resetsAt: "2026-11-28T00:00:00.000Z",
    });
    expect(retryAfter).toBe(String(14 * 3600));
    // A manual debit is refused the same way; credits short too: INSUFFICIENT_CREDITS wins.
    const manual = client.POST("/v1/transactions/create", {
      body: { accountId: "u1", type: "debit", amount: 1 },
    });
    await refused(manual);
    expectFailure(await deduct(2000), 402, "INSUFFICIENT_CREDITS");
    const balance = expectOk(
      await client.GET("/v1/accounts/balance", { params: { query: { accountId: "u1" } } }),
    );
    expect(balance.balance).toBe(900);
  });

  it("counts holds, never refuses a confirm at or below its hold, refuses an overage", async () => {
    await start("2026-11-27T10:00:00.000Z");
    await limited(1000, [{ period: "day", amount: 100 }]);
    const reserve = (amount: number) =>
      client.POST("/v1/reservations/create", { body: { accountId: "u1", amount } });
    const held = expectOk(await reserve(60));
    expect((await refused(deduct(40.000001))).details).toMatchObject({ spent: 0, held: 60 });
    expect((await refused(reserve(41))).details).toMatchObject({ held: 60, requested: 41 });
    const view = await limitsOf();
    expect(view.limits[0]).toMatchObject({ spent: 0, held: 60, remaining: 40 });
    expect(view.spendable).toBe(40);
    // Lowered below what the window holds: a confirm at its hold still goes through.
    await client.POST("/v1/accounts/update", {
      body: { accountId: "u1", spendLimits: [{ period: "day", amount: 10 }] },
    });
    const confirm = (reservationId: string, actualAmount: number) =>
      client.POST("/v1/reservations/confirm", { body: { reservationId, actualAmount } });
    expectOk(await confirm(held.reservation.id, 60));
    await client.POST("/v1/accounts/update", {
      body: { accountId: "u1", spendLimits: [{ period: "day", amount: 100 }] },
    });
    // spent 60: a hold of 20 confirmed at 40 adds 20 (→ 100, reached exactly: allowed).
    const second = expectOk(await reserve(20));
    expectOk(await confirm(second.reservation.id, 40));
    const fourth = await refused(reserve(0.000001));
    expect(fourth.details).toMatchObject({ spent: 100, held: 0, remaining: 0 });
    expect((await limitsOf()).limits[0]).toMatchObject({ spent: 100, held: 0 });
  });

  it("refuses a confirm's excess over its hold, with the excess as requested", async () => {
    await start("2026-11-27T10:00:00.000Z");
    await limited(1000, [{ period: "day", amount: 100 }]);
    const hold = expectOk(
      await client.POST("/v1/reservations/create", { body: { accountId: "u1", amount: 50 } }),
    );
    expectOk(await deduct(45));
    const body = { reservationId: hold.reservation.id, actualAmount: 56 };
    const { details } = await refused(client.POST("/v1/reservations/confirm", { body }));
    expect(details).toMatchObject({ spent: 45, held: 50, requested: 6, remaining: 5 });
    body.actualAmount = 55;
    expectOk(await client.POST("/v1/reservations/confirm", { body }));
    expect((await limitsOf()).limits[0]).toMatchObject({ spent: 100, held: 0, remaining: 0 });
  });

  it("starts a new day at midnight UTC, and at 18:30 UTC in Asia/Kolkata", async () => {
    await start("2026-11-27T18:29:59.500Z");
    await limited(1000, [
      { period: "day", amount: 10 },
      { period: "day", amount: 20, timeZone: "Asia/Kolkata" },
    ]);
    expectOk(await deduct(10));
    // The UTC day (ends in 5.5 h) refuses, but the Kolkata day ends last... it still has 10.
    let refusal = await refused(deduct(1));
    expect(refusal.details).toMatchObject({
      timeZone: "UTC",
      resetsAt: "2026-11-28T00:00:00.000Z",
    });
    t.advance(500); // 18:30:00.000 UTC: a new Kolkata day, the UTC day goes on.
    expect((await limitsOf()).limits[1]).toMatchObject({
      spent: 0,
      windowStart: "2026-11-27T18:30:00.000Z",
      resetsAt: "2026-11-28T18:30:00.000Z",
    });
    t.setNow(Date.parse("2026-11-27T23:59:59.001Z"));
    refusal = await refused(deduct(1));
    expect(refusal.retryAfter).toBe("1");
    t.setNow(Date.parse("2026-11-28T00:00:00.000Z"));
    expectOk(await deduct(10)); // the UTC day: 10 of 10; the Kolkata day (since 18:30): 10 of 20
    refusal = await refused(deduct(11));
    // Both refuse 11: the 402 names the one whose window ends last, the UTC day.
    expect(refusal.details).toMatchObject({
      timeZone: "UTC",
      spent: 10,
      resetsAt: "2026-11-29T00:00:00.000Z",
    });
    expect(refusal.retryAfter).toBe(String(24 * 3600));
    expect((await limitsOf()).limits[1]).toMatchObject({ spent: 10, remaining: 10 });
  });

  it("counts each deduction in the windows of its instant, across their ends", async () => {
    // The deductions below reach no limit: after the update they take the limited plain debit,
    // whose windows are cached until the first of them ends (src/limits/plan.ts).
    await start("2026-11-30T17:59:59.999Z");
    await limited(1000, [
      { period: "hour", amount: 100 },
      { period: "day", amount: 200, timeZone: "Asia/Kolkata" },
      { period: "month", amount: 300 },
    ]);
    const spent = async () => (await limitsOf()).limits.map((l) => [l.spent, l.windowStart]);
    expectOk(await deduct(1));
    t.advance(1); // 18:00: a new hour
    expectOk(await deduct(2));
    expect(await spent()).toEqual([
      [2, "2026-11-30T18:00:00.000Z"],
      [3, "2026-11-29T18:30:00.000Z"],
      [3, "2026-11-01T00:00:00.000Z"],
    ]);
    t.setNow(Date.parse("2026-11-30T18:30:00.000Z")); // a new Kolkata day
    expectOk(await deduct(4));
    t.setNow(Date.parse("2026-12-01T00:00:00.000Z")); // a new month, hour and Kolkata hour
    expectOk(await deduct(8));
    expectOk(await deduct(16));
    expect(await spent()).toEqual([
      [24, "2026-12-01T00:00:00.000Z"],
      [28, "2026-11-30T18:30:00.000Z"],
      [24, "2026-12-01T00:00:00.000Z"],
    ]);
    // verify (afterEach) sums every counter row from the ledger rows of its window.
  });

  it("keeps days of 23 and 25 hours in America/New_York", async () => {
    await start("2026-03-08T05:00:00.000Z"); // midnight EST, the day clocks go forward
    await limited(1000, [{ period: "day", amount: 10, timeZone: "America/New_York" }]);
    expectOk(await deduct(10));
    let refusal = await refused(deduct(1));
    expect(refusal.details).toMatchObject({ resetsAt: "2026-03-09T04:00:00.000Z" });
    expect(refusal.retryAfter).toBe(String(23 * 3600));
    t.setNow(Date.parse("2026-03-09T03:59:59.999Z"));
    await refused(deduct(1));
    t.setNow(Date.parse("2026-03-09T04:00:00.000Z"));
    expectOk(await deduct(10));
    t.setNow(Date.parse("2026-11-01T04:00:00.000Z")); // midnight EDT, clocks go back
    expectOk(await deduct(10));
    refusal = await refused(deduct(1));
    expect(refusal.details).toMatchObject({ resetsAt: "2026-11-02T05:00:00.000Z" });
    expect(refusal.retryAfter).toBe(String(25 * 3600));
  });

  it("gives exactly 10 of 50 simultaneous deductions of 10 under a limit of 100", async () => {
    await start();
    await limited(100_000, [{ period: "day", amount: 100 }]);
    const outcomes = await Promise.all(Array.from({ length: 50 }, () => deduct(10)));
    const results = outcomes.map((o) => ({ status: o.response.status, body: o.data ?? o.error }));
    expect(countStatuses(results)).toEqual({ 200: 10, 402: 40 });
    for (const r of results.filter((x) => x.status === 402)) {
      expectError(r, 402, "SPEND_LIMIT_EXCEEDED");
    }
    expect((await limitsOf()).limits[0]).toMatchObject({ spent: 100, remaining: 0 });
  });

  it("answers the check without changing anything", async () => {
    await start("2026-11-27T10:00:00.000Z");
    await limited(50, [
      { period: "day", amount: 30 },
      { period: "hour", amount: 5, soft: true },
    ]);
    const check = async (amount: string) =>
      expectOk(
        await client.GET("/v1/accounts/check", { params: { query: { accountId: "u1", amount } } }),
      );
    expect(await check("30")).toMatchObject({ allowed: true, code: null, spendable: 30 });
    expect(await check("30.000001")).toMatchObject({
      allowed: false,
      code: "SPEND_LIMIT_EXCEEDED",
    });
    expect(await check("51")).toMatchObject({ allowed: false, code: "INSUFFICIENT_CREDITS" });
    const res = await t.api("GET", "/v1/accounts/check?accountId=u1&amount=0");
    expectError(res, 400, "VALIDATION_ERROR");
    expectOk(await deduct(25));
    const after = await check("5");
    expect(after).toMatchObject({ allowed: true, available: 25, spendable: 5 });
    expect(after.limits[1]).toMatchObject({ period: "hour", soft: true, spent: 25, remaining: 0 });
  });

  it("sends spend_limit.reached once per limit and window", async () => {
    await start("2026-11-27T10:00:00.000Z");
    expectOk(
      await client.POST("/v1/webhooks/create", {
        body: { url: "http://127.0.0.1:9/hook", events: ["spend_limit.reached"] },
      }),
    );
    await limited(1000, [
      { period: "day", amount: 80, soft: true },
      { period: "day", amount: 100 },
    ]);
    const events = async () =>
      (
        await t.ledger.db.read
          .selectFrom("webhook_events")
          .select("payload")
          .where("type", "=", "spend_limit.reached")
          .orderBy("created_at_ms")
          .execute()
      ).map((e) => JSON.parse(e.payload).data);
    const first = expectOk(await deduct(85));
    expect(await events()).toEqual([
      expect.objectContaining({
        period: "day",
        amount: 80,
        soft: true,
        timeZone: "UTC",
        spent: 85,
        held: 0,
        windowStart: "2026-11-27T00:00:00.000Z",
        resetsAt: "2026-11-28T00:00:00.000Z",
        transactionId: first.transactionId,
        reservationId: null,
      }),
    ]);
    const hold = expectOk(
      await client.POST("/v1/reservations/create", { body: { accountId: "u1", amount: 15 } }),
    );
    await client.POST("/v1/reservations/cancel", { body: { reservationId: hold.reservation.id } });
    const again = expectOk(
      await client.POST("/v1/reservations/create", { body: { accountId: "u1", amount: 15 } }),
    );
    const all = await events();
    expect(all).toHaveLength(2);
    expect(all[1]).toMatchObject({ amount: 100, soft: false, spent: 85, held: 15 });
    expect(all[1].reservationId).toBe(hold.reservation.id);
    expect(all[1].transactionId).toBeNull();
    expect(again.reservation.status).toBe("pending");
    t.advance(86_400_000);
    expectOk(await deduct(80));
    expect(await events()).toHaveLength(3);
  });

  it("counts no expiry as spending, and verify finds a counter that is off", async () => {
    await start("2026-11-27T10:00:00.000Z");
    await limited(0, [{ period: "day", amount: 100 }]);
    const expiresAt = "2026-11-27T11:00:00.000Z";
    await client.POST("/v1/accounts/credits/add", {
      body: { accountId: "u1", amount: 30, expiresAt },
    });
    await client.POST("/v1/accounts/credits/add", { body: { accountId: "u1", amount: 100 } });
    t.advance(2 * 3_600_000);
    expectOk(await deduct(10)); // books the expiry of 30 first: not spending
    expect((await limitsOf()).limits[0]).toMatchObject({ spent: 10, remaining: 90 });
    expect(await t.verify()).toEqual([]);
    // The day's counter: the account's slot 0.
    const counter = (delta: number) =>
      t.ledger.db.write
        .updateTable("accounts")
        .where("external_id", "=", "u1")
        .set((eb) => ({ sw0_spent_micros: eb("sw0_spent_micros", "+", delta) }))
        .execute();
    await counter(1);
    const problems = await t.verify();
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/spend window day UTC .*: spent 10\.000001 != debits 10$/);
    await counter(-1);
    expect(await t.verify()).toEqual([]);
  });
});
