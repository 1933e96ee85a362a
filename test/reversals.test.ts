/**
 * Reversals over real HTTP (docs/api.md#reversals, contract section 23), on every engine: a
 * debit's reversal gives the credits back to the grants it drew from (last drawn first, keeping
 * their priority and expiry), an expired grant's part is expired again at once, a credit's
 * reversal takes back from its own grant within its `remaining` and `available`, 20
 * simultaneous reversals (and, on PostgreSQL, over two ledgers on one database), an
 * Idempotency-Key, a usage charge's reversal freeing its window's spend limit, what is not
 * reversible and bad input, reversals in an atomic batch, and the `transaction.reversed` event.
 * A fake clock keeps time deterministic. After each test `ledger verify`'s checks find nothing.
 */
import { afterEach, describe, expect, it } from "vitest";
import { accountRoutes } from "../src/accounts/routes.ts";
import { createApp } from "../src/app.ts";
import { batchRoutes } from "../src/batch/routes.ts";
import { loadConfig } from "../src/config.ts";
import { serveHttp } from "../src/http/serve.ts";
import { openLedger } from "../src/runtime.ts";
import { transactionRoutes } from "../src/transactions/routes.ts";
import { usageRoutes } from "../src/usage/routes.ts";
import { expectError, responseProblems } from "./contract.ts";
import { TEST_ENV } from "./harness.ts";
import { countStatuses, fetchFrom, type JsonReply, okBody, sendJson } from "./http-client.ts";
import { TEST_ENGINE } from "./pg-harness.ts";
import {
  DAY,
  HOUR,
  REVERSE,
  type ReversalLedger,
  type ReverseBody,
  reversalLedger,
} from "./reversals-helpers.ts";

const open: ReversalLedger[] = [];
afterEach(async () => {
  for (const l of open.splice(0)) {
    try {
      expect(await l.t.verify()).toEqual([]);
    } finally {
      await l.t.close();
    }
  }
});

async function ledger(start?: string) {
  const l = await reversalLedger(start);
  open.push(l);
  return l;
}

/** The ISO form the API writes an instant in. */
const iso = (text: string) => new Date(Date.parse(text)).toISOString();

/** A reversal answer's fields besides `transaction`. */
const figures = (r: ReverseBody) => ({
  amountReversed: r.amountReversed,
  reversible: r.reversible,
  balance: r.balance,
  available: r.available,
});

describe("a debit's reversal gives the credits back to its grants", () => {
  it("in two parts, last drawn first, keeping each grant's priority and expiry", async () => {
    const l = await ledger();
    const accountId = await l.account("u1");
    const expiresAt = l.isoIn(2 * DAY);
    const a = await l.add("u1", 5, { priority: 10, expiresAt });
    const b = await l.add("u1", 10, { priority: 60 });
    const debit = await l.deduct("u1", 8);
    expect(debit.balance).toBe(7);
    let grants = await l.grants("u1");
    expect(grants.get(a.grantId)).toMatchObject({ remaining: 0, status: "spent" });
    expect(grants.get(b.grantId)).toMatchObject({ remaining: 7, status: "active" });

    const first = await l.reversed({ transactionId: debit.transactionId, amount: 2 });
    expect(first.reversedTransactionId).toBe(debit.transactionId);
    expect(figures(first)).toEqual({ amountReversed: 2, reversible: 6, balance: 9, available: 9 });
    expect(first.transaction).toMatchObject({
      accountId,
      type: "credit",
      amount: 2,
      balanceAfter: 9,
      reversalOf: debit.transactionId,
      amountReversed: 0,
    });
    expect(first.transaction.id).not.toBe(debit.transactionId);
    grants = await l.grants("u1");
    // B was drawn last (7 of its 10 were left untouched by A's 5): it gets the first 2 back.
    expect(grants.get(a.grantId)).toMatchObject({ remaining: 0, status: "spent" });
    expect(grants.get(b.grantId)).toMatchObject({ remaining: 9, status: "active" });

    const second = await l.reversed({
      transactionId: debit.transactionId,
      description: "Refund: generation failed",
      metadata: { ticket: "SUP-1" },
    });
    expect(figures(second)).toEqual({
      amountReversed: 8,
      reversible: 0,
      balance: 15,
      available: 15,
    });
    expect(second.transaction).toMatchObject({
      type: "credit",
      amount: 6,
      balanceAfter: 15,
      description: "Refund: generation failed",
      metadata: { ticket: "SUP-1" },
      reversalOf: debit.transactionId,
    });
    grants = await l.grants("u1");
    expect(grants.get(a.grantId)).toMatchObject({
      amount: 5,
      remaining: 5,
      priority: 10,
      expiresAt: iso(expiresAt),
      status: "active",
    });
    expect(grants.get(b.grantId)).toMatchObject({
      amount: 10,
      remaining: 10,
      priority: 60,
      expiresAt: null,
      status: "active",
    });
    // No new grant was made: the credits went back into A and B.
    expect(grants.size).toBe(2);

    for (const body of [
      { transactionId: debit.transactionId },
      { transactionId: debit.transactionId, amount: 0.000001 },
    ]) {
      const error = await l.refused(body, 409, "REVERSAL_EXCEEDS_ORIGINAL");
      expect(error.details).toEqual({ reversible: 0 });
    }
    // The original is unchanged; the reversals name it.
    const txns = await l.txns("u1");
    expect(txns.map((x) => [x.type, x.amount, x.balanceAfter, x.reversalOf])).toEqual([
      ["credit", 5, 5, null],
      ["credit", 10, 15, null],
      ["debit", 8, 7, null],
      ["credit", 2, 9, debit.transactionId],
      ["credit", 6, 15, debit.transactionId],
    ]);
    // A is spent first again, as its priority says.
    await l.deduct("u1", 1);
    grants = await l.grants("u1");
    expect(grants.get(a.grantId)?.remaining).toBe(4);
    expect(grants.get(b.grantId)?.remaining).toBe(10);
    expect(await l.balance("u1")).toEqual({ balance: 14, reserved: 0, available: 14 });
  });

  for (const job of [true, false]) {
    it(`expires again at once what goes back to a grant past its expiry (${job ? "after the expiry job" : "no expiry booked yet"})`, async () => {
      const l = await ledger();
      const accountId = await l.account("u1");
      const a = await l.add("u1", 10, { expiresAt: l.isoIn(HOUR) });
      const debit = await l.deduct("u1", 4);
      l.t.advance(2 * HOUR);
      if (job) {
        expect(await l.expireJob()).toEqual({ expiries: 1, failed: 0 });
        expect(await l.balance("u1")).toEqual({ balance: 0, reserved: 0, available: 0 });
      }
      const r = await l.reversed({ transactionId: debit.transactionId, amount: 4 });
      expect(figures(r)).toEqual({ amountReversed: 4, reversible: 0, balance: 0, available: 0 });
      expect(r.transaction).toMatchObject({
        accountId,
        type: "credit",
        amount: 4,
        balanceAfter: 4,
      });
      const txns = await l.txns("u1");
      // Whether the job or the reversal booked the first expiry, the ledger reads the same.
      expect(
        txns.map((x) => [
          x.type,
          x.amount,
          x.balanceAfter,
          x.metadata.reason ?? null,
          x.reversalOf,
        ]),
      ).toEqual([
        ["credit", 10, 10, null, null],
        ["debit", 4, 6, null, null],
        ["debit", 6, 0, "credits_expired", null],
        ["credit", 4, 4, null, debit.transactionId],
        ["debit", 4, 0, "credits_expired", null],
      ]);
      expect(txns[4]?.metadata.grantId).toBe(a.grantId);
      expect((await l.grants("u1")).get(a.grantId)).toMatchObject({
        remaining: 0,
        status: "expired",
      });
      expect(await l.balance("u1")).toEqual({ balance: 0, reserved: 0, available: 0 });
      // Nothing expired comes back: a debit of one micro-credit is refused.
      const res = await l.post("/v1/accounts/credits/deduct", {
        accountId: "u1",
        amount: 0.000001,
      });
      expectError(res, 402, "INSUFFICIENT_CREDITS");
    });
  }

  it("gives the unexpired part back spendable and expires the rest, with its credits.expired event", async () => {
    const l = await ledger();
    const hook = await l.post("/v1/webhooks/create", {
      url: "http://127.0.0.1:9/hook",
      events: ["credits.expired", "transaction.reversed"],
    });
    expect(hook.status).toBe(200);
    const accountId = await l.account("u1");
    const a = await l.add("u1", 10, { expiresAt: l.isoIn(HOUR) });
    const b = await l.add("u1", 5, { priority: 60 });
    const debit = await l.deduct("u1", 12);
    let grants = await l.grants("u1");
    expect([grants.get(a.grantId)?.remaining, grants.get(b.grantId)?.remaining]).toEqual([0, 3]);
    l.t.advance(2 * HOUR);
    const r = await l.reversed({ transactionId: debit.transactionId });
    // 2 go back to B (drawn last), 10 to A, which expires them again at once.
    expect(figures(r)).toEqual({ amountReversed: 12, reversible: 0, balance: 5, available: 5 });
    expect(r.transaction).toMatchObject({ type: "credit", amount: 12, balanceAfter: 15 });
    grants = await l.grants("u1");
    expect(grants.get(a.grantId)).toMatchObject({ remaining: 0, status: "expired" });
    expect(grants.get(b.grantId)).toMatchObject({ remaining: 5, status: "active" });
    const txns = await l.txns("u1");
    const expiry = txns.at(-1);
    expect(expiry).toMatchObject({
      type: "debit",
      amount: 10,
      balanceAfter: 5,
      metadata: { reason: "credits_expired", grantId: a.grantId },
    });
    expect(await l.events("credits.expired")).toEqual([
      {
        accountId,
        externalId: "u1",
        grantId: a.grantId,
        transactionId: expiry?.id,
        amount: 10,
        balance: 5,
      },
    ]);
    expect(await l.events("transaction.reversed")).toEqual([
      expect.objectContaining({ transactionId: r.transaction.id, amount: 12, balance: 5 }),
    ]);
    expect(await l.balance("u1")).toEqual({ balance: 5, reserved: 0, available: 5 });
  });
});

describe("a credit's reversal takes back from its own grant", () => {
  it("refuses more than the grant's remaining (409 REVERSAL_EXCEEDS_REMAINING, reversible 3)", async () => {
    const l = await ledger();
    await l.account("u1");
    const credit = await l.add("u1", 10);
    await l.deduct("u1", 7);
    const remaining = await l.refused(
      { transactionId: credit.transactionId, amount: 4 },
      409,
      "REVERSAL_EXCEEDS_REMAINING",
    );
    expect(remaining.details).toEqual({ reversible: 3 });
    const original = await l.refused(
      { transactionId: credit.transactionId, amount: 10.000001 },
      409,
      "REVERSAL_EXCEEDS_ORIGINAL",
    );
    expect(original.details).toEqual({ reversible: 3 });
    expect(await l.balance("u1")).toEqual({ balance: 3, reserved: 0, available: 3 });
    // With amount omitted: all that is reversible.
    const r = await l.reversed({ transactionId: credit.transactionId });
    expect(figures(r)).toEqual({ amountReversed: 3, reversible: 0, balance: 0, available: 0 });
    expect(r.transaction).toMatchObject({
      type: "debit",
      amount: 3,
      balanceAfter: 0,
      reversalOf: credit.transactionId,
    });
    expect((await l.grants("u1")).get(credit.grantId)).toMatchObject({
      remaining: 0,
      status: "spent",
    });
    const none = await l.refused(
      { transactionId: credit.transactionId },
      409,
      "REVERSAL_EXCEEDS_REMAINING",
    );
    expect(none.details).toEqual({ reversible: 0 });
  });

  it("refuses more than available: holds stay covered (reversible 2)", async () => {
    const l = await ledger();
    await l.account("u1");
    const credit = await l.add("u1", 10);
    const hold = await l.post("/v1/reservations/create", { accountId: "u1", amount: 8 });
    expect(hold.status).toBe(200);
    const error = await l.refused(
      { transactionId: credit.transactionId, amount: 3 },
      409,
      "REVERSAL_EXCEEDS_REMAINING",
    );
    expect(error.details).toEqual({ reversible: 2 });
    expect(await l.balance("u1")).toEqual({ balance: 10, reserved: 8, available: 2 });
    const r = await l.reversed({ transactionId: credit.transactionId, amount: 2 });
    expect(figures(r)).toEqual({ amountReversed: 2, reversible: 0, balance: 8, available: 0 });
    expect(await l.balance("u1")).toEqual({ balance: 8, reserved: 8, available: 0 });
    const more = await l.refused(
      { transactionId: credit.transactionId, amount: 0.000001 },
      409,
      "REVERSAL_EXCEEDS_REMAINING",
    );
    expect(more.details).toEqual({ reversible: 0 });
  });

  it("takes from that grant, not in spending order", async () => {
    const l = await ledger();
    await l.account("u1");
    const first = await l.add("u1", 5, { priority: 10 });
    const expiresAt = l.isoIn(DAY);
    const manual = okBody(
      transactionRoutes.create,
      await l.post("/v1/transactions/create", {
        accountId: "u1",
        type: "credit",
        amount: 10,
        priority: 90,
        expiresAt,
      }),
    );
    const grantId = manual.grantId as string;
    const r = await l.reversed({ transactionId: manual.transaction.id, amount: 4 });
    expect(figures(r)).toEqual({ amountReversed: 4, reversible: 6, balance: 11, available: 11 });
    expect(r.transaction).toMatchObject({ type: "debit", amount: 4, balanceAfter: 11 });
    let grants = await l.grants("u1");
    expect(grants.get(first.grantId)).toMatchObject({ remaining: 5, status: "active" });
    expect(grants.get(grantId)).toMatchObject({
      remaining: 6,
      priority: 90,
      expiresAt: iso(expiresAt),
      status: "active",
    });
    const rest = await l.reversed({ transactionId: manual.transaction.id });
    expect(figures(rest)).toEqual({ amountReversed: 10, reversible: 0, balance: 5, available: 5 });
    grants = await l.grants("u1");
    expect(grants.get(first.grantId)?.remaining).toBe(5);
    expect(grants.get(grantId)).toMatchObject({ remaining: 0, status: "spent" });
    const error = await l.refused(
      { transactionId: manual.transaction.id },
      409,
      "REVERSAL_EXCEEDS_ORIGINAL",
    );
    expect(error.details).toEqual({ reversible: 0 });
  });
});

describe("simultaneous reversals", () => {
  /** An account "u1" funded with 100 and a debit of 10. @returns the debit's id */
  const debitOf10 = async (l: ReversalLedger) => {
    await l.account("u1");
    await l.add("u1", 100);
    return (await l.deduct("u1", 10)).transactionId;
  };

  /** 20 reversals of 1 of `transactionId`: exactly 10 succeed, the others are 409s. */
  const expectTenOf20 = async (l: ReversalLedger, replies: JsonReply[], transactionId: string) => {
    expect(countStatuses(replies)).toEqual({ 200: 10, 409: 10 });
    const done = replies
      .filter((r) => r.status === 200)
      .map((r) => okBody(transactionRoutes.reverse, r));
    const sorted = (xs: number[]) => [...xs].sort((x, y) => x - y);
    expect(sorted(done.map((r) => r.amountReversed))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(sorted(done.map((r) => r.reversible))).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(sorted(done.map((r) => r.balance))).toEqual([91, 92, 93, 94, 95, 96, 97, 98, 99, 100]);
    for (const r of replies.filter((x) => x.status === 409)) {
      const error = expectError(r, 409, "REVERSAL_EXCEEDS_ORIGINAL");
      expect(error.error.details).toEqual({ reversible: 0 });
    }
    const reversals = (await l.txns("u1")).filter((x) => x.reversalOf === transactionId);
    expect(reversals).toHaveLength(10);
    expect(reversals.reduce((sum, x) => sum + x.amount, 0)).toBe(10);
    expect(await l.balance("u1")).toEqual({ balance: 100, reserved: 0, available: 100 });
  };

  it("20 simultaneous reversals of 1 of a debit of 10 over HTTP: exactly 10 succeed", async () => {
    const l = await ledger();
    const transactionId = await debitOf10(l);
    const replies = await Promise.all(
      Array.from({ length: 20 }, () => l.reverse({ transactionId, amount: 1 })),
    );
    await expectTenOf20(l, replies, transactionId);
  });

  it.runIf(TEST_ENGINE === "postgres")(
    "the same over two ledgers (two servers) on one PostgreSQL database",
    async () => {
      const l = await ledger();
      const transactionId = await debitOf10(l);
      const second = await openLedger(loadConfig({ ...l.t.databaseEnv, ...TEST_ENV }), {
        clock: () => l.t.now(),
      });
      const server = await serveHttp({
        fetch: createApp(second.deps).fetch,
        port: 0,
        hostname: "127.0.0.1",
      });
      try {
        const sends = [l.send, fetchFrom(`http://127.0.0.1:${server.port}`)];
        const replies = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            sendJson(sends[i % 2] ?? l.send, l.t.key, "POST", REVERSE, {
              body: { transactionId, amount: 1 },
            }),
          ),
        );
        await expectTenOf20(l, replies, transactionId);
      } finally {
        await server.close();
        await second.close();
      }
    },
  );
});

describe("Idempotency-Key", () => {
  it("replays one reversal for one key, and refuses the key with another body", async () => {
    const l = await ledger();
    await l.account("u1");
    await l.add("u1", 100);
    const debit = await l.deduct("u1", 10);
    const transactionId = debit.transactionId;
    const first = await l.reverse({ transactionId, amount: 2.5 }, { idempotencyKey: "rev-1" });
    expect(first.status).toBe(200);
    expect(first.replayed).toBeNull();
    // The same JSON value, its keys in another order.
    const again = await l.reverse({ amount: 2.5, transactionId }, { idempotencyKey: "rev-1" });
    expect(again.status).toBe(200);
    expect(again.replayed).toBe("true");
    expect(again.body).toEqual(first.body);
    expect(okBody(transactionRoutes.reverse, again)).toMatchObject({
      amountReversed: 2.5,
      reversible: 7.5,
      balance: 92.5,
    });
    const reversals = (await l.txns("u1")).filter((x) => x.reversalOf === transactionId);
    expect(reversals).toHaveLength(1);
    expect(await l.balance("u1")).toMatchObject({ balance: 92.5 });
    const other = await l.reverse({ transactionId, amount: 1 }, { idempotencyKey: "rev-1" });
    expectError(other, 409, "IDEMPOTENCY_KEY_REUSED");
    // A refused reversal stores no answer: the key then serves another body.
    const over = await l.reverse({ transactionId, amount: 8 }, { idempotencyKey: "rev-2" });
    expect(expectError(over, 409, "REVERSAL_EXCEEDS_ORIGINAL").error.details).toEqual({
      reversible: 7.5,
    });
    const rest = await l.reverse({ transactionId }, { idempotencyKey: "rev-2" });
    expect(okBody(transactionRoutes.reverse, rest)).toMatchObject({
      amountReversed: 10,
      reversible: 0,
      balance: 100,
    });
    expect((await l.txns("u1")).filter((x) => x.reversalOf === transactionId)).toHaveLength(2);
  });
});

describe("spend limits", () => {
  /** gpt-4o in the shipped catalog: 10 USD per million output tokens. */
  const GPT = "gpt-4o";

  it("a usage charge's reversal frees today's spend limit; an older charge's does not", async () => {
    const l = await ledger("2026-03-02T10:00:00.000Z");
    expect((await l.post("/v1/project/update", { creditsPerUsd: 100 })).status).toBe(200);
    await l.account("u1", { spendLimits: [{ period: "day", amount: 10 }] });
    const credit = await l.add("u1", 100);
    // 5,000 output tokens of gpt-4o: 0.05 USD = 5 credits at 100 per USD.
    const charge = () =>
      l.post("/v1/usage/record", {
        accountId: "u1",
        modelId: GPT,
        inputTokens: 0,
        outputTokens: 5000,
        deduct: true,
      });
    const charged = async () => {
      const res = okBody(usageRoutes.record, await charge());
      expect(res.creditsCharged).toBe(5);
      return res;
    };
    const refused = async () => {
      expectError(await charge(), 402, "SPEND_LIMIT_EXCEEDED");
      const deduct = await l.post("/v1/accounts/credits/deduct", { accountId: "u1", amount: 1 });
      expectError(deduct, 402, "SPEND_LIMIT_EXCEEDED");
    };
    const dayLimit = async () =>
      okBody(accountRoutes.limits, await l.get("/v1/accounts/limits?accountId=u1")).limits[0];

    const first = await charged();
    await charged();
    await refused();
    expect(await dayLimit()).toMatchObject({ spent: 10, remaining: 0 });
    // A credit's reversal is not spending: no limit refuses it, and it counts in no window.
    const back = await l.reversed({ transactionId: credit.transactionId, amount: 1 });
    expect(back.balance).toBe(89);
    expect(await dayLimit()).toMatchObject({ spent: 10, remaining: 0 });

    const r = await l.reversed({ transactionId: first.transactionId as string });
    expect(figures(r)).toEqual({ amountReversed: 5, reversible: 0, balance: 94, available: 94 });
    expect(await dayLimit()).toMatchObject({ spent: 5, remaining: 5 });
    const again = await charged();
    expect(again.balance).toBe(89);
    await refused();

    // The next day: reversing yesterday's charge frees nothing today.
    l.t.advance(DAY);
    await charged();
    await charged();
    await refused();
    await l.reversed({ transactionId: again.transactionId as string });
    expect(await dayLimit()).toMatchObject({ spent: 10, remaining: 0 });
    await refused();
    expect(await l.balance("u1")).toEqual({ balance: 84, reserved: 0, available: 84 });
  });
});

describe("a reservation confirm's reversal", () => {
  it("gives the confirm's debit back to its grants and frees the window it was booked in", async () => {
    const l = await ledger("2026-03-02T10:00:00.000Z");
    await l.account("u1", { spendLimits: [{ period: "day", amount: 5 }] });
    const a = await l.add("u1", 4, { priority: 10 });
    const b = await l.add("u1", 6);
    const hold = await l.post("/v1/reservations/create", { accountId: "u1", amount: 5 });
    const reservationId = (hold.body as { reservation: { id: string } }).reservation.id;
    const confirm = await l.post("/v1/reservations/confirm", { reservationId, actualAmount: 5 });
    expect(confirm.status).toBe(200);
    const debitId = (confirm.body as { transactionId: string }).transactionId;
    const deduct = await l.post("/v1/accounts/credits/deduct", { accountId: "u1", amount: 1 });
    expectError(deduct, 402, "SPEND_LIMIT_EXCEEDED");
    // The confirm drew A (4), then 1 of B: 1 goes back to B first, then 1 to A.
    const r = await l.reversed({ transactionId: debitId, amount: 2 });
    expect(figures(r)).toEqual({ amountReversed: 2, reversible: 3, balance: 7, available: 7 });
    const grants = await l.grants("u1");
    expect([grants.get(a.grantId)?.remaining, grants.get(b.grantId)?.remaining]).toEqual([1, 6]);
    const limits = okBody(accountRoutes.limits, await l.get("/v1/accounts/limits?accountId=u1"));
    expect(limits.limits[0]).toMatchObject({ spent: 3, held: 0, remaining: 2 });
    expect((await l.deduct("u1", 2)).balance).toBe(5);
    expect(
      (await l.post("/v1/accounts/credits/deduct", { accountId: "u1", amount: 0.000001 })).status,
    ).toBe(402);
  });
});

describe("the balance ceiling", () => {
  it("refuses a debit's reversal that would take the balance past 9e9 (409 BALANCE_LIMIT_EXCEEDED)", async () => {
    const l = await ledger();
    await l.account("u1");
    for (let i = 0; i < 9; i++) await l.add("u1", 1e9);
    const debit = await l.deduct("u1", 1);
    await l.add("u1", 0.5);
    const before = await l.count("transactions");
    await l.refused({ transactionId: debit.transactionId }, 409, "BALANCE_LIMIT_EXCEEDED");
    expect(await l.count("transactions")).toBe(before);
    const r = await l.reversed({ transactionId: debit.transactionId, amount: 0.5 });
    expect(figures(r)).toEqual({
      amountReversed: 0.5,
      reversible: 0.5,
      balance: 9e9,
      available: 9e9,
    });
  });
});

describe("what cannot be reversed, and bad input", () => {
  it("refuses an expiry and a reversal (409 NOT_REVERSIBLE) and an unknown id (404)", async () => {
    const l = await ledger();
    await l.account("u1");
    await l.add("u1", 5, { expiresAt: l.isoIn(HOUR) });
    l.t.advance(2 * HOUR);
    await l.expireJob();
    const expiry = (await l.txns("u1")).find((x) => x.metadata.reason === "credits_expired");
    expect(expiry).toMatchObject({ type: "debit", amount: 5 });
    await l.refused({ transactionId: expiry?.id }, 409, "NOT_REVERSIBLE");
    await l.refused({ transactionId: expiry?.id, amount: 1 }, 409, "NOT_REVERSIBLE");

    const credit = await l.add("u1", 10);
    const debit = await l.deduct("u1", 3);
    const ofDebit = await l.reversed({ transactionId: debit.transactionId, amount: 1 });
    const ofCredit = await l.reversed({ transactionId: credit.transactionId, amount: 1 });
    for (const r of [ofDebit, ofCredit]) {
      await l.refused({ transactionId: r.transaction.id }, 409, "NOT_REVERSIBLE");
      await l.refused({ transactionId: r.transaction.id, amount: 0.5 }, 409, "NOT_REVERSIBLE");
    }

    await l.refused(
      { transactionId: "txn_01JZZZZZZZZZZZZZZZZZZZZZZZ" },
      404,
      "TRANSACTION_NOT_FOUND",
    );
    // Another project's transaction is unknown here.
    const other = await l.t.newProject("other");
    const send = (path: string, body: unknown) =>
      sendJson(l.send, other.key, "POST", path, { body });
    expect((await send("/v1/accounts/create", { externalId: "o1" })).status).toBe(200);
    const theirs = await send("/v1/accounts/credits/add", { accountId: "o1", amount: 5 });
    const theirId = (theirs.body as { transactionId: string }).transactionId;
    await l.refused({ transactionId: theirId }, 404, "TRANSACTION_NOT_FOUND");
    expect((await send(REVERSE, { transactionId: theirId, amount: 1 })).status).toBe(200);
    expect(await l.balance("u1")).toEqual({ balance: 7, reserved: 0, available: 7 });
  });

  it("answers bad input with 400 VALIDATION_ERROR and changes nothing", async () => {
    const l = await ledger();
    await l.account("u1");
    const credit = await l.add("u1", 10);
    const debit = await l.deduct("u1", 4);
    const transactionId = debit.transactionId;
    const before = { txns: await l.count("transactions"), balance: await l.balance("u1") };
    const bad: unknown[] = [
      { transactionId, amount: 0 },
      { transactionId, amount: -1 },
      { transactionId, amount: 1.0000001 },
      { transactionId, amount: "1" },
      { transactionId, amount: null },
      { transactionId, unknown: 1 },
      { transactionId: credit.transactionId, amount: 1, accountId: "u1" },
      { transactionId, metadata: "text" },
      { transactionId, description: "d".repeat(1001) },
      {},
      { amount: 1 },
      { transactionId: "" },
      { transactionId: 5 },
      [],
    ];
    for (const body of bad) {
      const res = await l.reverse(body, { idempotencyKey: "bad-input" });
      expectError(res, 400, "VALIDATION_ERROR");
    }
    // An amount with more decimals than a double keeps, read from the JSON text.
    const text = await l.send(REVERSE, {
      method: "POST",
      headers: { "X-API-Key": l.t.key, "Content-Type": "application/json" },
      body: `{"transactionId":"${transactionId}","amount":0.30000000000000001}`,
    });
    expectError({ status: text.status, body: await text.json() }, 400, "VALIDATION_ERROR");
    expect(await l.count("transactions")).toBe(before.txns);
    expect(await l.balance("u1")).toEqual(before.balance);
    // Nothing was stored under the key: it serves a good request now.
    const good = await l.reverse({ transactionId, amount: 1 }, { idempotencyKey: "bad-input" });
    expect(good.replayed).toBeNull();
    expect(okBody(transactionRoutes.reverse, good)).toMatchObject({ amountReversed: 1 });
  });
});

describe("batches", () => {
  type BatchBody = ReturnType<typeof okBody<typeof batchRoutes.run>>;
  /**
   * Runs a well-formed batch: a 200 whose results each carry the route's own answer (a
   * reversal's result body is checked against the reversal route's schema where it is read;
   * the batch route's documented schema is the next test's).
   */
  const batch = async (l: ReversalLedger, body: unknown): Promise<BatchBody> => {
    const res = await l.post("/v1/batch", body);
    expect(res.status, res.text).toBe(200);
    return res.body as BatchBody;
  };

  it("runs a reversal in an atomic batch: all of it commits, or nothing", async () => {
    const l = await ledger();
    await l.account("u1");
    await l.add("u1", 20);
    const transactionId = (await l.deduct("u1", 10)).transactionId;
    const before = await l.count("transactions");

    // Two reversals that together pass the original: the second fails, the first is undone.
    const over = await batch(l, {
      atomic: true,
      operations: [
        { path: REVERSE, body: { transactionId, amount: 6 } },
        { path: REVERSE, body: { transactionId, amount: 6 } },
      ],
    });
    expect(over.committed).toBe(0);
    expect(over.results.map((r) => r.status)).toEqual([409, 409]);
    expect(
      expectError(over.results[0] ?? { status: 0, body: null }, 409, "BATCH_ABORTED").error.details,
    ).toEqual({
      failedIndex: 1,
    });
    const second = expectError(
      over.results[1] ?? { status: 0, body: null },
      409,
      "REVERSAL_EXCEEDS_ORIGINAL",
    );
    expect(second.error.details).toEqual({ reversible: 4 });

    // A reversal then a deduction that its credits do not cover: both undone.
    const short = await batch(l, {
      atomic: true,
      operations: [
        { path: REVERSE, body: { transactionId, amount: 5 }, idempotencyKey: "b-0" },
        { path: "/v1/accounts/credits/deduct", body: { accountId: "u1", amount: 100 } },
      ],
    });
    expect(short.committed).toBe(0);
    expect(short.results.map((r) => r.status)).toEqual([409, 402]);
    expect(await l.count("transactions")).toBe(before);
    expect(await l.balance("u1")).toEqual({ balance: 10, reserved: 0, available: 10 });

    // A reversal then a deduction of what it gave back: both commit, the second seeing the first.
    const done = await batch(l, {
      atomic: true,
      operations: [
        { path: REVERSE, body: { transactionId, amount: 4 }, idempotencyKey: "b-1" },
        { path: "/v1/accounts/credits/deduct", body: { accountId: "u1", amount: 14 } },
      ],
    });
    expect(done.committed).toBe(2);
    expect(done.results.map((r) => [r.status, r.replayed])).toEqual([
      [200, false],
      [200, false],
    ]);
    const reversal = okBody(
      transactionRoutes.reverse,
      done.results[0] ?? { status: 0, body: null },
    );
    expect(figures(reversal)).toEqual({
      amountReversed: 4,
      reversible: 6,
      balance: 14,
      available: 14,
    });
    expect(reversal.transaction).toMatchObject({
      type: "credit",
      amount: 4,
      reversalOf: transactionId,
    });
    expect(await l.balance("u1")).toEqual({ balance: 0, reserved: 0, available: 0 });
    // The operation's key is the single request's key: one effect.
    const single = await l.reverse({ transactionId, amount: 4 }, { idempotencyKey: "b-1" });
    expect(single.replayed).toBe("true");
    expect(single.body).toEqual(done.results[0]?.body);
    // The aborted batch's key stored nothing.
    const freed = await l.reverse({ transactionId, amount: 1 }, { idempotencyKey: "b-0" });
    expect(okBody(transactionRoutes.reverse, freed)).toMatchObject({ amountReversed: 5 });
    expect((await l.txns("u1")).filter((x) => x.reversalOf === transactionId)).toHaveLength(2);
  });
  it("documents the reversal as a batch operation: its body in BatchRequest, its answer in the results", async () => {
    const l = await ledger();
    await l.account("u1");
    await l.add("u1", 20);
    const transactionId = (await l.deduct("u1", 10)).transactionId;
    const res = await l.post("/v1/batch", {
      operations: [{ path: REVERSE, body: { transactionId, amount: 1 } }],
    });
    expect(res.status).toBe(200);
    // The batch route's own 200 schema must declare a reversal's answer as a result body.
    expect.soft(responseProblems(batchRoutes.run, 200, res.body)).toEqual([]);
    const doc = (await l.get("/openapi.json")).body as {
      components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
    };
    const operations = doc.components.schemas.BatchRequest?.properties?.operations as {
      items: { oneOf: { properties: { path: { enum: string[] }; body: { $ref: string } } }[] };
    };
    const byPath = Object.fromEntries(
      operations.items.oneOf.map((o) => [o.properties.path.enum[0], o.properties.body.$ref]),
    );
    expect(byPath[REVERSE]).toBe("#/components/schemas/ReverseTransactionRequest");
  });
});

describe("the transaction.reversed event", () => {
  it("is stored with the reversal's data, for a debit's and a credit's reversal", async () => {
    const l = await ledger();
    const hook = await l.post("/v1/webhooks/create", {
      url: "http://127.0.0.1:9/hook",
      events: ["transaction.reversed"],
    });
    expect(hook.status).toBe(200);
    const accountId = await l.account("u1");
    const credit = await l.add("u1", 10);
    const debit = await l.deduct("u1", 4);
    const ofDebit = await l.reversed({ transactionId: debit.transactionId, amount: 1.5 });
    l.t.advance(1000);
    const ofCredit = await l.reversed({ transactionId: credit.transactionId, amount: 2 });
    l.t.advance(1000);
    await l.refused(
      { transactionId: debit.transactionId, amount: 3 },
      409,
      "REVERSAL_EXCEEDS_ORIGINAL",
    );
    expect(await l.events("transaction.reversed")).toEqual([
      {
        accountId,
        externalId: "u1",
        onBehalfOf: null,
        transactionId: ofDebit.transaction.id,
        reversedTransactionId: debit.transactionId,
        type: "credit",
        amount: 1.5,
        amountReversed: 1.5,
        balance: 7.5,
      },
      {
        accountId,
        externalId: "u1",
        onBehalfOf: null,
        transactionId: ofCredit.transaction.id,
        reversedTransactionId: credit.transactionId,
        type: "debit",
        amount: 2,
        amountReversed: 2,
        balance: 5.5,
      },
    ]);
  });
});
