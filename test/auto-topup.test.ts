/**
 * Automatic top-up (contract section 26, docs/api.md#automatic-top-up) on every engine, over real
 * HTTP against the Stripe fake of test/stripe-fake.ts, on a fake clock, with the worker run on
 * demand:
 *
 * - the settings: `null` before any, the AutoTopup object with exactly the contract's fields;
 *   refusals in the contract's order (the amount's price, 50 cents to $999,999.99; a member
 *   funded by its parent; a missing secret key, price or `stripeCustomerId`), each changing
 *   nothing; an enabled top-up keeps the account from switching to `funding: parent`;
 * - queueing: turning it on while below the threshold queues at once; 30 concurrent deductions
 *   crossing the threshold make one attempt, one PaymentIntent (one Idempotency-Key) and one
 *   grant, however many workers look; after a success that left `available` below, the next
 *   write queues again;
 * - the PaymentIntent exactly as the contract lists it (customer, its default card, cents
 *   rounded up, usd, confirm, off_session, automatic_payment_methods, metadata, the attempt's id
 *   as Idempotency-Key), the same request on every retry of an unanswered call, until an hour
 *   of no answer fails it as `unreachable`;
 * - failures: a card declined three times (an hour apart, each retry queued by a write once the
 *   hour has passed, not before) disables the top-up, each failure announced with its
 *   decline_code; the code when there is no decline_code; `no_payment_method` with no
 *   PaymentIntent; the monthly limit fails without a PaymentIntent, uncounted, and nothing more
 *   is queued until the next UTC month;
 * - webhooks: `payment_intent.succeeded` before the worker's answer grants once;
 *   `payment_intent.payment_failed` fails a pending attempt; a success after the attempt failed
 *   turns it succeeded, counted and announced.
 *
 * After each test `ledger verify`'s checks find nothing.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  type Attempt,
  type AutoTopup,
  type TopupLedger,
  topupLedger,
} from "./auto-topup-helpers.ts";
import { expectError } from "./contract.ts";
import { stripeEvent } from "./stripe-events.ts";
import type { StripeObject } from "./stripe-fake.ts";
import { accepted, HOUR, type Purchase, SECRET_KEY } from "./stripe-helpers.ts";

const open: TopupLedger[] = [];
afterEach(async () => {
  for (const l of open.splice(0)) {
    try {
      expect(await l.t.verify()).toEqual([]);
    } finally {
      await l.close();
    }
  }
});

async function ledger(options: Parameters<typeof topupLedger>[0] = {}) {
  const l = await topupLedger(options);
  open.push(l);
  return l;
}

/** The ISO time of the fake clock. */
const nowIso = (l: TopupLedger) => new Date(l.t.now()).toISOString();

/** The account's purchases, checked. */
const purchasesOf = (l: TopupLedger, ref: string) => l.purchases(`externalId=${ref}`);

describe("settings", () => {
  it("read null before any, then exactly the contract's object, by id or externalId", async () => {
    const l = await ledger();
    const { id } = await l.payer("u1", { credits: 100 });
    expect(await l.topup("u1")).toBeNull();
    const set = await l.enable({ accountId: "u1", enabled: true, threshold: 20, amount: 50 });
    const expected: AutoTopup = {
      enabled: true,
      threshold: 20,
      amount: 50,
      monthlyLimit: null,
      toppedUpThisMonth: 0,
      consecutiveFailures: 0,
      disabledReason: null,
      lastAttempt: null,
    };
    expect(set).toEqual(expected);
    expect(await l.topup("u1")).toEqual(expected);
    expect(await l.topup(id)).toEqual(expected);
    const changed = await l.enable({
      accountId: id,
      enabled: false,
      threshold: 0,
      amount: 12.5,
      monthlyLimit: 1000.5,
    });
    expect(changed).toEqual({
      ...expected,
      enabled: false,
      threshold: 0,
      amount: 12.5,
      monthlyLimit: 1000.5,
    });
    // monthlyLimit null removes the limit; left out is none as well.
    expect(
      (
        await l.enable({
          accountId: "u1",
          enabled: false,
          threshold: 0,
          amount: 5,
          monthlyLimit: null,
        })
      ).monthlyLimit,
    ).toBeNull();
    expectError(await l.get("/v1/accounts/auto-topup?accountId=nobody"), 404, "ACCOUNT_NOT_FOUND");
    // Nothing was charged: nothing was below a threshold.
    expect(l.fake.requests).toEqual([]);
  });

  it("refuses the amount's price first, then a member funded by its parent, then Stripe's configuration, each changing nothing", async () => {
    // A credit costs a cent.
    const l = await ledger({ creditsPerUsd: 100 });
    await l.payer("u1");
    // Threshold 0 with nothing available: nothing is queued by turning it on.
    const base = { accountId: "u1", enabled: true, threshold: 0 };
    const refuse = async (body: unknown, status: number, code: Parameters<typeof expectError>[2]) =>
      expectError(await l.setTopup(body), status, code);

    // Under 50 cents, or over $999,999.99, at the price: 400 on body.amount, off or on.
    for (const amount of [49, 0.5, 99_999_999.000001, 100_000_000]) {
      for (const enabled of [true, false]) {
        const { error } = await refuse({ ...base, enabled, amount }, 400, "VALIDATION_ERROR");
        expect(JSON.stringify(error.details), `${amount}`).toContain("body.amount");
      }
    }
    expect(await l.topup("u1")).toBeNull();
    // The bounds themselves are accepted.
    expect((await l.enable({ ...base, amount: 50 })).amount).toBe(50);
    expect((await l.enable({ ...base, amount: 99_999_999 })).amount).toBe(99_999_999);
    // A refusal leaves the settings as they were.
    await refuse({ ...base, amount: 49, threshold: 99 }, 400, "VALIDATION_ERROR");
    expect(await l.topup("u1")).toMatchObject({
      enabled: true,
      threshold: 0,
      amount: 99_999_999,
      lastAttempt: null,
    });

    // A member funded by its parent: the price is checked first, then the funding, whether on
    // or off, and before the configuration (it has no stripeCustomerId).
    await l.account("pool");
    await l.account("kid", { parentId: "pool" });
    const kid = { accountId: "kid", threshold: 1 };
    await refuse({ ...kid, enabled: true, amount: 49 }, 400, "VALIDATION_ERROR");
    await refuse({ ...kid, enabled: true, amount: 50 }, 409, "FUNDED_BY_PARENT");
    await refuse({ ...kid, enabled: false, amount: 50 }, 409, "FUNDED_BY_PARENT");
    expect(await l.topup("kid")).toBeNull();

    // Turning on needs the account's stripeCustomerId; off does not.
    await l.account("plain");
    const plain = { accountId: "plain", threshold: 1, amount: 60 };
    const { error } = await refuse({ ...plain, enabled: true }, 409, "STRIPE_NOT_CONFIGURED");
    const missing = (error.details as { missing: string[] }).missing;
    expect(missing).toHaveLength(1);
    expect(missing[0]).toContain("stripeCustomerId");
    expect(await l.topup("plain")).toBeNull();
    expect((await l.enable({ ...plain, enabled: false })).enabled).toBe(false);
    expect(l.fake.requests).toEqual([]);
  });

  it("refuses to turn on without a secret key or a price (the price check waits), listing what is missing", async () => {
    const l = await ledger({ secretKey: false, creditsPerUsd: null });
    await l.payer("u1", { credits: 5 });
    await l.account("bare");
    const on = { enabled: true, threshold: 10, amount: 0.01 };
    let reply = await l.setTopup({ accountId: "u1", ...on });
    let missing = (
      expectError(reply, 409, "STRIPE_NOT_CONFIGURED").error.details as {
        missing: string[];
      }
    ).missing;
    expect(missing).toHaveLength(2);
    expect(missing.join(" | ")).toMatch(/secret key/i);
    expect(missing.join(" | ")).toMatch(/price|creditsPerUsd/i);
    reply = await l.setTopup({ accountId: "bare", ...on });
    missing = (
      expectError(reply, 409, "STRIPE_NOT_CONFIGURED").error.details as {
        missing: string[];
      }
    ).missing;
    expect(missing).toHaveLength(3);
    expect(await l.topup("u1")).toBeNull();
    // Off, it may be set; nothing is queued although u1 is below the threshold.
    expect(await l.enable({ accountId: "u1", ...on, enabled: false })).toMatchObject({
      enabled: false,
      lastAttempt: null,
    });
    // With a price but still no secret key: the price is checked, then the key is missing.
    await l.setPrice(100);
    expectError(await l.setTopup({ accountId: "u1", ...on }), 400, "VALIDATION_ERROR");
    reply = await l.setTopup({ accountId: "u1", ...on, amount: 50 });
    missing = (
      expectError(reply, 409, "STRIPE_NOT_CONFIGURED").error.details as {
        missing: string[];
      }
    ).missing;
    expect(missing).toHaveLength(1);
    expect(missing[0]).toMatch(/secret key/i);
    expect(await l.topup("u1")).toMatchObject({ enabled: false, amount: 0.01, lastAttempt: null });
    expect(l.fake.requests).toEqual([]);
  });

  it("keeps an account with an enabled top-up from switching to funding parent (409 ACCOUNT_BUSY, auto_topup)", async () => {
    const l = await ledger();
    await l.account("pool");
    const c = l.customer();
    await l.account("c", { parentId: "pool", funding: "own", stripeCustomerId: c.id });
    // Threshold 0 with nothing available: not below it, nothing queued.
    expect(
      await l.enable({ accountId: "c", enabled: true, threshold: 0, amount: 10 }),
    ).toMatchObject({ enabled: true, lastAttempt: null });
    const toParent = () => l.post("/v1/accounts/update", { accountId: "c", funding: "parent" });
    const busy = expectError(await toParent(), 409, "ACCOUNT_BUSY");
    expect((busy.error.details as { reason: string }).reason).toBe("auto_topup");
    await l.enable({ accountId: "c", enabled: false, threshold: 0, amount: 10 });
    const moved = await toParent();
    expect(moved.status, moved.text).toBe(200);
    expect((moved.body as { account: { funding: string } }).account.funding).toBe("parent");
    // Now its pool buys: its own top-up is refused, on or off.
    for (const enabled of [true, false]) {
      const reply = await l.setTopup({ accountId: "c", enabled, threshold: 0, amount: 10 });
      expectError(reply, 409, "FUNDED_BY_PARENT");
    }
    expect(l.fake.requests).toEqual([]);
  });
});

describe("an attempt", () => {
  it("is queued at once when the top-up is turned on below its threshold, and sends the contract's PaymentIntent", async () => {
    // 3 credits a USD: 12.5 credits cost 416.67 cents, charged 417.
    const l = await ledger({ creditsPerUsd: 3 });
    const { id, customer, paymentMethod } = await l.payer("u1", { credits: 2 });
    const set = await l.enable({ accountId: "u1", enabled: true, threshold: 5, amount: 12.5 });
    const attempt = set.lastAttempt as Attempt;
    expect(set).toMatchObject({ enabled: true, toppedUpThisMonth: 12.5 });
    expect(attempt).toEqual({
      id: attempt.id,
      status: "pending",
      reason: null,
      credits: 12.5,
      amountCents: 417,
      paymentIntentId: null,
      createdAt: nowIso(l),
      finishedAt: null,
    });
    expect(l.fake.requests).toEqual([]);

    expect(await l.runWorker()).toBe(1);
    // The customer's default payment method is read first, then the PaymentIntent is made.
    expect(l.fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      `GET /v1/customers/${customer}`,
      "POST /v1/payment_intents",
    ]);
    const [post] = l.intentPosts();
    expect(post?.headers.authorization).toBe(`Bearer ${SECRET_KEY}`);
    expect(post?.headers["idempotency-key"]).toBe(attempt.id);
    expect(post?.body).toEqual({
      customer,
      payment_method: paymentMethod,
      amount: "417",
      currency: "usd",
      confirm: "true",
      off_session: "true",
      automatic_payment_methods: { enabled: "true", allow_redirects: "never" },
      metadata: { ledger_account: id, ledger_credits: "12.5", ledger_auto_topup: attempt.id },
    });
    const [intent] = [...l.fake.paymentIntents.values()];
    expect(intent?.status).toBe("succeeded");

    const [p] = await purchasesOf(l, "u1");
    expect(p).toMatchObject({
      accountId: id,
      paymentIntentId: intent?.id,
      credits: 12.5,
      amountPaid: 417,
      currency: "usd",
      status: "paid",
    });
    expect(await l.balance("u1")).toEqual({ balance: 14.5, reserved: 0, available: 14.5 });
    expect(await l.topup("u1")).toEqual({
      enabled: true,
      threshold: 5,
      amount: 12.5,
      monthlyLimit: null,
      toppedUpThisMonth: 12.5,
      consecutiveFailures: 0,
      disabledReason: null,
      lastAttempt: {
        ...attempt,
        status: "succeeded",
        paymentIntentId: intent?.id,
        finishedAt: nowIso(l),
      },
    });
    const txns = await l.txns("u1");
    expect(txns.map((x) => [x.type, x.amount])).toEqual([
      ["credit", 2],
      ["credit", 12.5],
    ]);
    expect(txns[1]?.metadata).toMatchObject({
      reason: "purchase",
      stripe: { paymentIntentId: intent?.id, amountPaid: 417, currency: "usd" },
    });
    expect(await l.events("auto_topup.succeeded")).toEqual([
      {
        accountId: id,
        externalId: "u1",
        attemptId: attempt.id,
        purchaseId: p?.id,
        credits: 12.5,
        balance: 14.5,
      },
    ]);
    // Done: nothing more is due, and 14.5 is above the threshold.
    expect(await l.runWorker()).toBe(0);
    expect(l.intentPosts()).toHaveLength(1);
  });

  it("is made once by 30 concurrent deductions crossing the threshold: one PaymentIntent, one grant", async () => {
    const l = await ledger();
    const { id } = await l.payer("u1", { credits: 100 });
    await l.enable({ accountId: "u1", enabled: true, threshold: 50, amount: 40 });
    const replies = await Promise.all(
      Array.from({ length: 30 }, () =>
        l.post("/v1/accounts/credits/deduct", { accountId: "u1", amount: 2 }),
      ),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(30).fill(200));
    expect(await l.balance("u1")).toEqual({ balance: 40, reserved: 0, available: 40 });
    expect(await l.attemptCount(id)).toBe(1);
    const pending = (await l.topup("u1")) as AutoTopup;
    expect(pending.toppedUpThisMonth).toBe(40);
    expect(pending.lastAttempt).toMatchObject({ status: "pending", credits: 40, amountCents: 400 });

    // Three looks at once, then another: one attempt runs, once.
    const ran = await Promise.all([l.runWorker(), l.runWorker(), l.runWorker()]);
    expect(ran.reduce((a, b) => a + b, 0)).toBe(1);
    expect(await l.runWorker()).toBe(0);
    const posts = l.intentPosts();
    expect(posts).toHaveLength(1);
    expect(new Set(posts.map((r) => r.headers["idempotency-key"]))).toEqual(
      new Set([pending.lastAttempt?.id]),
    );
    expect(l.fake.paymentIntents.size).toBe(1);

    const purchases = await purchasesOf(l, "u1");
    expect(purchases).toHaveLength(1);
    const p = purchases[0] as Purchase;
    expect(p).toMatchObject({ credits: 40, amountPaid: 400 });
    expect(await l.balance("u1")).toEqual({ balance: 80, reserved: 0, available: 80 });
    expect(await l.events("credits.purchased")).toEqual([
      {
        accountId: id,
        externalId: "u1",
        purchaseId: p.id,
        transactionId: p.transactionId,
        credits: 40,
        balance: 80,
        restored: false,
      },
    ]);
    expect(await l.events("auto_topup.succeeded")).toEqual([
      {
        accountId: id,
        externalId: "u1",
        attemptId: pending.lastAttempt?.id,
        purchaseId: p.id,
        credits: 40,
        balance: 80,
      },
    ]);
    expect(await l.events("auto_topup.failed")).toEqual([]);
    expect((await l.txns("u1")).filter((x) => x.type === "credit")).toHaveLength(2);
    expect(await l.attemptCount(id)).toBe(1);
  });

  it("after a success that left available below the threshold, is queued by the next write", async () => {
    const l = await ledger();
    const { id } = await l.payer("u1", { credits: 100 });
    await l.enable({ accountId: "u1", enabled: true, threshold: 50, amount: 40 });
    await l.deduct("u1", 95);
    expect(await l.runWorker()).toBe(1);
    // 5 + 40 = 45: still below 50.
    expect(await l.balance("u1")).toMatchObject({ available: 45 });
    const first = (await l.last("u1")) as Attempt;
    expect(first.status).toBe("succeeded");
    // Nothing is queued without a write.
    expect(await l.attemptCount(id)).toBe(1);
    await l.deduct("u1", 1);
    const second = (await l.last("u1")) as Attempt;
    expect(second.id).not.toBe(first.id);
    expect(second.status).toBe("pending");
    expect(await l.runWorker()).toBe(1);
    expect(await l.balance("u1")).toMatchObject({ available: 84 });
    // Above the threshold now: the next write queues nothing.
    await l.deduct("u1", 1);
    expect(await l.attemptCount(id)).toBe(2);
    expect(await l.topup("u1")).toMatchObject({ toppedUpThisMonth: 80 });
    expect(l.intentPosts()).toHaveLength(2);
  });

  it("retries an unanswered call with the same key and parameters, then fails as unreachable after an hour", async () => {
    const l = await ledger();
    const { id } = await l.payer("u1", { credits: 100 });
    await l.enable({ accountId: "u1", enabled: true, threshold: 50, amount: 40 });
    l.fake.faults.push({
      method: "POST",
      path: "/v1/payment_intents",
      times: 1000,
      answer: { status: 500, error: { type: "api_error", message: "Something went wrong" } },
    });
    await l.deduct("u1", 60);
    const attempt = (await l.last("u1")) as Attempt;
    expect(await l.runWorker()).toBe(1);
    const firstTries = l.intentPosts().length;
    expect(firstTries).toBeGreaterThan(0);
    // Still pending, retried later, not before it is due.
    expect(await l.last("u1")).toMatchObject({ id: attempt.id, status: "pending" });
    expect(await l.runWorker()).toBe(0);
    // Then answered: the same request gets its PaymentIntent.
    l.fake.faults.length = 0;
    l.t.advance(60_000);
    expect(await l.runWorker()).toBe(1);
    const posts = l.intentPosts();
    expect(posts.length).toBeGreaterThan(firstTries);
    expect(new Set(posts.map((r) => r.headers["idempotency-key"]))).toEqual(new Set([attempt.id]));
    expect(new Set(posts.map((r) => r.rawBody)).size).toBe(1);
    expect(l.fake.paymentIntents.size).toBe(1);
    expect(await l.last("u1")).toMatchObject({ id: attempt.id, status: "succeeded" });
    expect(await l.balance("u1")).toMatchObject({ available: 80 });

    // Another crossing whose calls go unanswered for an hour: unreachable.
    await l.deduct("u1", 40);
    const second = (await l.last("u1")) as Attempt;
    expect(second.status).toBe("pending");
    l.fake.faults.push({
      method: "POST",
      path: "/v1/payment_intents",
      times: 1000,
      answer: { status: 503, error: { type: "api_error", message: "Unavailable" } },
    });
    expect(await l.runWorker()).toBe(1);
    l.t.advance(30 * 60_000);
    expect(await l.runWorker()).toBe(1);
    expect(await l.last("u1")).toMatchObject({ id: second.id, status: "pending" });
    l.t.advance(30 * 60_000);
    expect(await l.runWorker()).toBe(1);
    expect(await l.topup("u1")).toMatchObject({
      consecutiveFailures: 1,
      lastAttempt: { id: second.id, status: "failed", reason: "unreachable" },
    });
    const keys = l.intentPosts().map((r) => r.headers["idempotency-key"]);
    expect(new Set(keys)).toEqual(new Set([attempt.id, second.id]));
    expect(await l.events("auto_topup.failed")).toEqual([
      { accountId: id, externalId: "u1", attemptId: second.id, reason: "unreachable" },
    ]);
    expect(l.fake.paymentIntents.size).toBe(1);
    expect(await l.balance("u1")).toMatchObject({ available: 40 });
  });
});

describe("failures", () => {
  it("a card declined three times disables the top-up; each retry waits for a write an hour after the failure", async () => {
    const l = await ledger();
    const { id } = await l.payer("u1", { credits: 100 });
    await l.enable({ accountId: "u1", enabled: true, threshold: 50, amount: 40 });
    l.fake.intentOutcomes.push(
      ...Array.from({ length: 3 }, () => ({
        result: "decline" as const,
        declineCode: "insufficient_funds",
      })),
    );
    await l.deduct("u1", 60);
    const attempts: string[] = [];
    for (let failure = 1; failure <= 3; failure++) {
      const queued = (await l.last("u1")) as Attempt;
      expect(queued.status).toBe("pending");
      expect(attempts).not.toContain(queued.id);
      attempts.push(queued.id);
      expect(await l.runWorker()).toBe(1);
      const after = (await l.topup("u1")) as AutoTopup;
      expect(after.lastAttempt).toMatchObject({
        id: queued.id,
        status: "failed",
        reason: "insufficient_funds",
        finishedAt: nowIso(l),
      });
      expect(after.consecutiveFailures).toBe(failure);
      expect(after.toppedUpThisMonth).toBe(0);
      if (failure < 3) {
        expect(after).toMatchObject({ enabled: true, disabledReason: null });
      } else {
        expect(after).toMatchObject({ enabled: false, disabledReason: "consecutive_failures" });
      }
      // A declined card is not retried by the same attempt.
      expect(await l.runWorker()).toBe(0);
      expect(l.intentPosts()).toHaveLength(failure);
      if (failure === 3) break;
      // A write within the hour queues nothing; the first one once the hour has passed does.
      l.t.advance(HOUR - 1);
      await l.deduct("u1", 1);
      expect(((await l.last("u1")) as Attempt).id).toBe(queued.id);
      l.t.advance(1);
      await l.deduct("u1", 1);
    }
    expect(l.intentPosts().map((r) => r.headers["idempotency-key"])).toEqual(attempts);
    expect(await l.events("auto_topup.failed")).toEqual(
      attempts.map((attemptId) => ({
        accountId: id,
        externalId: "u1",
        attemptId,
        reason: "insufficient_funds",
      })),
    );
    // Disabled: writes below the threshold queue nothing, however late.
    l.t.advance(2 * HOUR);
    await l.deduct("u1", 1);
    expect(await l.attemptCount(id)).toBe(3);
    expect(await l.balance("u1")).toMatchObject({ available: 35 });

    // Turned on again: the failures and the reason reset, and below the threshold it queues.
    const again = await l.enable({ accountId: "u1", enabled: true, threshold: 50, amount: 40 });
    expect(again).toMatchObject({
      enabled: true,
      consecutiveFailures: 0,
      disabledReason: null,
      lastAttempt: { status: "pending" },
    });
    expect(await l.runWorker()).toBe(1);
    expect(await l.balance("u1")).toMatchObject({ available: 75 });
    expect(await l.topup("u1")).toMatchObject({
      consecutiveFailures: 0,
      toppedUpThisMonth: 40,
      lastAttempt: { status: "succeeded" },
    });
    expect(await purchasesOf(l, "u1")).toHaveLength(1);
    expect(await l.events("auto_topup.succeeded")).toHaveLength(1);
  });

  it("records the card error's code when it has no decline_code", async () => {
    const l = await ledger();
    const { id } = await l.payer("a", { credits: 100 });
    await l.enable({ accountId: "a", enabled: true, threshold: 50, amount: 40 });
    l.fake.intentOutcomes.push({
      result: "decline",
      code: "authentication_required",
      declineCode: null,
      message: "This payment requires authentication.",
    });
    await l.deduct("a", 60);
    expect(await l.runWorker()).toBe(1);
    const [post] = l.intentPosts();
    expect(await l.topup("a")).toMatchObject({
      consecutiveFailures: 1,
      enabled: true,
      lastAttempt: { status: "failed", reason: "authentication_required" },
    });
    expect(await l.events("auto_topup.failed")).toEqual([
      {
        accountId: id,
        externalId: "a",
        attemptId: post?.headers["idempotency-key"],
        reason: "authentication_required",
      },
    ]);
    expect(await l.balance("a")).toMatchObject({ available: 40 });
  });

  it("fails with no_payment_method, asking for no PaymentIntent, when the customer has no default card", async () => {
    const l = await ledger();
    const b = await l.payer("b", { credits: 100, paymentMethod: false });
    await l.enable({ accountId: "b", enabled: true, threshold: 50, amount: 40 });
    await l.deduct("b", 60);
    const attempt = (await l.last("b")) as Attempt;
    expect(await l.runWorker()).toBe(1);
    expect(await l.topup("b")).toMatchObject({
      consecutiveFailures: 1,
      enabled: true,
      lastAttempt: { id: attempt.id, status: "failed", reason: "no_payment_method" },
    });
    // The customer was read, and no PaymentIntent was asked for.
    expect(l.fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      `GET /v1/customers/${b.customer}`,
    ]);
    expect(await l.events("auto_topup.failed")).toEqual([
      { accountId: b.id, externalId: "b", attemptId: attempt.id, reason: "no_payment_method" },
    ]);
    expect(await l.runWorker()).toBe(0);
    expect(await l.balance("b")).toMatchObject({ available: 40 });
  });

  it("the monthly limit fails the attempt with no PaymentIntent, uncounted, and nothing more is queued until the next UTC month", async () => {
    const l = await ledger({ start: "2026-03-02T10:00:00.000Z" });
    const { id } = await l.payer("u1", { credits: 100 });
    // Two attempts of 40 reach the limit of 80 exactly; a third would pass it.
    await l.enable({ accountId: "u1", enabled: true, threshold: 50, amount: 40, monthlyLimit: 80 });
    await l.deduct("u1", 95);
    expect(await l.runWorker()).toBe(1);
    await l.deduct("u1", 1);
    expect(await l.runWorker()).toBe(1);
    expect(await l.balance("u1")).toMatchObject({ available: 84 });
    expect(await l.topup("u1")).toMatchObject({ toppedUpThisMonth: 80, consecutiveFailures: 0 });
    expect(l.intentPosts()).toHaveLength(2);

    await l.deduct("u1", 40);
    const capped = (await l.topup("u1")) as AutoTopup;
    expect(capped).toMatchObject({
      enabled: true,
      toppedUpThisMonth: 80,
      consecutiveFailures: 0,
      disabledReason: null,
    });
    expect(capped.lastAttempt).toEqual({
      id: capped.lastAttempt?.id,
      status: "failed",
      reason: "monthly_limit",
      credits: 40,
      amountCents: 400,
      paymentIntentId: null,
      createdAt: nowIso(l),
      finishedAt: nowIso(l),
    });
    expect(await l.events("auto_topup.failed")).toEqual([
      {
        accountId: id,
        externalId: "u1",
        attemptId: capped.lastAttempt?.id,
        reason: "monthly_limit",
      },
    ]);
    expect(await l.runWorker()).toBe(0);
    expect(l.intentPosts()).toHaveLength(2);
    // Later writes that month, an hour or weeks after, queue nothing.
    for (const at of ["2026-03-02T12:00:00.000Z", "2026-03-31T23:59:59.999Z"]) {
      l.t.setNow(Date.parse(at));
      await l.deduct("u1", 1);
      expect(await l.attemptCount(id)).toBe(3);
    }
    expect(await l.runWorker()).toBe(0);
    expect(l.intentPosts()).toHaveLength(2);

    // The next UTC month: the month's total starts again, and the next write queues.
    l.t.setNow(Date.parse("2026-04-01T00:00:00.000Z"));
    expect(await l.topup("u1")).toMatchObject({ toppedUpThisMonth: 0 });
    await l.deduct("u1", 1);
    expect(await l.last("u1")).toMatchObject({
      status: "pending",
      createdAt: "2026-04-01T00:00:00.000Z",
    });
    expect(await l.topup("u1")).toMatchObject({ toppedUpThisMonth: 40 });
    expect(await l.runWorker()).toBe(1);
    expect(await l.balance("u1")).toMatchObject({ available: 81 });
    expect(l.intentPosts()).toHaveLength(3);
    expect(await purchasesOf(l, "u1")).toHaveLength(3);
    expect(await l.events("auto_topup.succeeded")).toHaveLength(3);
  });
});

describe("its PaymentIntent's webhooks", () => {
  it("payment_intent.succeeded arriving before the worker's answer grants once", async () => {
    const l = await ledger();
    const { id } = await l.payer("u1", { credits: 100 });
    await l.enable({ accountId: "u1", enabled: true, threshold: 50, amount: 40 });
    let release = () => {};
    const until = new Promise<void>((resolve) => {
      release = resolve;
    });
    let delivered: { status: number; text: string } | undefined;
    let eventId = "";
    // The webhook is delivered, and accepted, while the API's answer is held back.
    l.fake.onIntentCreated = (intent: StripeObject) => {
      const event = stripeEvent("payment_intent.succeeded", structuredClone(intent));
      eventId = event.id;
      void l.deliver(event).then((r) => {
        delivered = r;
        release();
      });
    };
    l.fake.intentOutcomes.push({ result: "succeed", until });
    await l.deduct("u1", 60);
    expect(await l.runWorker()).toBe(1);
    expect(delivered && accepted(delivered.status), delivered?.text).toBe(true);
    expect(await l.stripeEvent(eventId)).toMatchObject({ outcome: "applied" });

    const purchases = await purchasesOf(l, "u1");
    expect(purchases).toHaveLength(1);
    const [intent] = [...l.fake.paymentIntents.values()];
    expect(purchases[0]).toMatchObject({ paymentIntentId: intent?.id, credits: 40 });
    expect(await l.balance("u1")).toMatchObject({ balance: 80, available: 80 });
    expect(await l.events("credits.purchased")).toHaveLength(1);
    const attempt = (await l.last("u1")) as Attempt;
    expect(attempt).toMatchObject({ status: "succeeded", paymentIntentId: intent?.id });
    expect(await l.events("auto_topup.succeeded")).toEqual([
      {
        accountId: id,
        externalId: "u1",
        attemptId: attempt.id,
        purchaseId: purchases[0]?.id,
        credits: 40,
        balance: 80,
      },
    ]);
    // The same event again changes nothing.
    const again = await l.deliver(stripeEvent("payment_intent.succeeded", intent as StripeObject));
    expect(accepted(again.status), again.text).toBe(true);
    expect(await purchasesOf(l, "u1")).toHaveLength(1);
    expect(await l.events("auto_topup.succeeded")).toHaveLength(1);
    expect(l.intentPosts()).toHaveLength(1);
  });

  it("payment_intent.payment_failed fails the pending attempt once", async () => {
    const l = await ledger();
    const { id } = await l.payer("u1", { credits: 100 });
    await l.enable({ accountId: "u1", enabled: true, threshold: 50, amount: 40 });
    l.fake.intentOutcomes.push({ result: "processing" });
    await l.deduct("u1", 60);
    expect(await l.runWorker()).toBe(1);
    const [intent] = [...l.fake.paymentIntents.values()];
    const pending = (await l.last("u1")) as Attempt;
    expect(pending).toMatchObject({ status: "pending", paymentIntentId: intent?.id });
    const failedIntent = {
      ...(intent as StripeObject),
      status: "requires_payment_method",
      last_payment_error: {
        type: "card_error",
        code: "card_declined",
        decline_code: "insufficient_funds",
        message: "Your card has insufficient funds.",
      },
    };
    const event = stripeEvent("payment_intent.payment_failed", failedIntent);
    await l.deliverInTurn(event, event);
    expect(await l.topup("u1")).toMatchObject({
      enabled: true,
      consecutiveFailures: 1,
      toppedUpThisMonth: 0,
      lastAttempt: { id: pending.id, status: "failed", reason: "insufficient_funds" },
    });
    expect(await l.events("auto_topup.failed")).toEqual([
      { accountId: id, externalId: "u1", attemptId: pending.id, reason: "insufficient_funds" },
    ]);
    expect(await purchasesOf(l, "u1")).toEqual([]);
    // Ended: the worker does not call again.
    l.t.advance(2 * 60_000);
    expect(await l.runWorker()).toBe(0);
    expect(l.intentPosts()).toHaveLength(1);
    expect(await l.balance("u1")).toMatchObject({ available: 40 });
  });

  it("a success after the attempt failed (processing for an hour, unreachable) turns it succeeded, counted and announced", async () => {
    const l = await ledger();
    const { id } = await l.payer("u1", { credits: 100 });
    await l.enable({ accountId: "u1", enabled: true, threshold: 50, amount: 40 });
    l.fake.intentOutcomes.push({ result: "processing" });
    await l.deduct("u1", 60);
    expect(await l.runWorker()).toBe(1);
    const [intent] = [...l.fake.paymentIntents.values()];
    const attempt = (await l.last("u1")) as Attempt;
    expect(attempt).toMatchObject({ status: "pending", paymentIntentId: intent?.id });
    // Half an hour later, still processing: still pending.
    l.t.advance(HOUR / 2);
    expect(await l.runWorker()).toBe(1);
    expect(await l.last("u1")).toMatchObject({ status: "pending" });
    // An hour after it answered processing: unreachable.
    l.t.advance(HOUR / 2);
    expect(await l.runWorker()).toBe(1);
    expect(await l.topup("u1")).toMatchObject({
      consecutiveFailures: 1,
      toppedUpThisMonth: 0,
      lastAttempt: { id: attempt.id, status: "failed", reason: "unreachable" },
    });
    // Every call was the same request.
    expect(new Set(l.intentPosts().map((r) => r.headers["idempotency-key"]))).toEqual(
      new Set([attempt.id]),
    );
    expect(l.fake.paymentIntents.size).toBe(1);

    // Then the payment goes through.
    l.t.advance(60_000);
    const succeeded = l.fake.succeedIntent(intent?.id as string);
    await l.deliverInTurn(stripeEvent("payment_intent.succeeded", structuredClone(succeeded)));
    const [p] = await purchasesOf(l, "u1");
    expect(p).toMatchObject({ paymentIntentId: intent?.id, credits: 40, amountPaid: 400 });
    expect(await l.topup("u1")).toMatchObject({
      enabled: true,
      consecutiveFailures: 0,
      toppedUpThisMonth: 40,
      lastAttempt: {
        id: attempt.id,
        status: "succeeded",
        reason: null,
        paymentIntentId: intent?.id,
        finishedAt: nowIso(l),
      },
    });
    expect(await l.events("auto_topup.failed")).toEqual([
      { accountId: id, externalId: "u1", attemptId: attempt.id, reason: "unreachable" },
    ]);
    expect(await l.events("auto_topup.succeeded")).toEqual([
      {
        accountId: id,
        externalId: "u1",
        attemptId: attempt.id,
        purchaseId: p?.id,
        credits: 40,
        balance: 80,
      },
    ]);
    expect(await l.balance("u1")).toMatchObject({ available: 80 });
    expect(await l.attemptCount(id)).toBe(1);
  });
});
