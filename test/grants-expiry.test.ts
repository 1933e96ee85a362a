/**
 * Credit grants over real HTTP (docs/api.md#credit-grants-expiry-and-priority): grant terms on
 * add and manual credits, the spending order of every debit, expiry by writes and by the job
 * (capped at available, held credits spent first, leftovers removed by confirm and cancel), the
 * grant list, non-rolling plan grants, and the worked example of docs/api.md#worked-example.
 * Every test ends with `ledger verify`'s checks, which include balance = Σ remaining.
 */
import { afterEach, describe, expect, it } from "vitest";
import { runGrantPlans } from "../src/jobs/grant-plans.ts";
import {
  DAY,
  HOUR,
  type HttpLedger,
  httpLedger,
  remainingMicros,
  validationPaths,
} from "./grants-http.ts";

const open: HttpLedger[] = [];
afterEach(async () => {
  for (const l of open.splice(0)) {
    expect(await l.t.verify()).toEqual([]);
    await l.close();
  }
});

async function ledger(start?: string) {
  const l = await httpLedger(start);
  open.push(l);
  return l;
}

async function account(l: HttpLedger, externalId: string) {
  return (await l.ok("POST", "/v1/accounts/create", { externalId })).account.id as string;
}

/** Adds `amount` with optional grant terms. @returns the grant id */
async function add(l: HttpLedger, ref: string, amount: number, terms: object = {}) {
  const body = await l.ok("POST", "/v1/accounts/credits/add", {
    accountId: ref,
    amount,
    ...terms,
  });
  expect(body.grantId).toMatch(/^grt_[0-9A-Z]{26}$/);
  return body.grantId as string;
}

/**
 * A fresh ledger whose account "u1" holds one grant per `[amount, terms]`, added in that order.
 * @returns the ledger and the grant ids, in the same order
 */
async function withGrants<const T extends readonly (readonly [number, object?])[]>(...terms: T) {
  const l = await ledger();
  await account(l, "u1");
  const grants: string[] = [];
  for (const [amount, grantTerms] of terms) grants.push(await add(l, "u1", amount, grantTerms));
  return { l, grants: grants as { [K in keyof T]: string } };
}

const deduct = (l: HttpLedger, ref: string, amount: number) =>
  l.ok("POST", "/v1/accounts/credits/deduct", { accountId: ref, amount });

async function reserve(l: HttpLedger, ref: string, amount: number, ttlSeconds = 86_400) {
  const body = { accountId: ref, amount, ttlSeconds };
  return (await l.ok("POST", "/v1/reservations/create", body)).reservation.id as string;
}

/** `remaining` of each grant by id. */
async function remaining(l: HttpLedger, ref: string): Promise<Record<string, number>> {
  return Object.fromEntries((await l.grants(ref)).map((g) => [g.id, g.remaining]));
}

/** The expiry debits of the account, oldest first, as [reason, grantId, amount]. */
async function expiries(l: HttpLedger, ref: string) {
  return (await l.txns(ref))
    .filter((x) => String(x.metadata.reason ?? "").endsWith("expired"))
    .map((x) => {
      expect(x.type).toBe("debit");
      return [x.metadata.reason, x.metadata.grantId, x.amount];
    });
}

/** balance = Σ remaining, as the API shows both. */
async function expectBalanceIsRemaining(l: HttpLedger, ref: string) {
  const { balance } = await l.balance(ref);
  expect(Math.round(balance * 1e6)).toBe(remainingMicros(await l.grants(ref)));
}

describe("grant terms on add and manual credit", () => {
  it("add and a manual credit make grants with priority and expiresAt; a debit has no grantId", async () => {
    const l = await ledger();
    const id = await account(l, "u1");
    const g1 = await add(l, "u1", 10);
    const expiresAt = l.isoIn(DAY);
    const g2 = await add(l, "u1", 2.5, { priority: 7, expiresAt });
    const manual = await l.ok("POST", "/v1/transactions/create", {
      accountId: "u1",
      amount: 1,
      type: "credit",
      priority: 0,
    });
    expect(manual.grantId).toMatch(/^grt_/);
    const debit = await l.ok("POST", "/v1/transactions/create", {
      accountId: "u1",
      amount: 1,
      type: "debit",
    });
    expect(debit.grantId).toBeUndefined();
    const grants = await l.grants("u1");
    expect(grants.map((g) => g.id)).toEqual([manual.grantId, g2, g1]);
    const txns = await l.txns("u1");
    expect(grants[1]).toEqual({
      id: g2,
      accountId: id,
      transactionId: txns[1]?.id,
      amount: 2.5,
      remaining: 2.5,
      priority: 7,
      expiresAt: new Date(Date.parse(expiresAt)).toISOString(),
      createdAt: txns[1]?.createdAt,
      status: "active",
    });
    expect(grants[2]).toMatchObject({ amount: 10, remaining: 10, priority: 50, expiresAt: null });
    // The debit of 1 spent the priority-0 manual credit.
    expect(grants[0]).toMatchObject({ amount: 1, remaining: 0, priority: 0, status: "spent" });
    await expectBalanceIsRemaining(l, "u1");
  });

  it("accepts priority 0 and 100, expiresAt in any accepted date-time form up to 3,653 days ahead", async () => {
    const l = await ledger("2026-03-01T00:00:00Z");
    await account(l, "u1");
    await add(l, "u1", 1, { priority: 0 });
    await add(l, "u1", 1, { priority: 100 });
    await add(l, "u1", 1, { expiresAt: "2026-03-01T00:00:00.001Z" });
    await add(l, "u1", 1, { expiresAt: "2026-03-01T02:00+01:00" });
    await add(l, "u1", 1, { expiresAt: "2026-03-02T00:00:00" });
    await add(l, "u1", 1, { expiresAt: new Date(l.t.now() + 3653 * DAY).toISOString() });
    const expires = (await l.grants("u1")).map((g) => g.expiresAt);
    expect(expires.slice(0, 4)).toEqual([
      "2036-03-01T00:00:00.000Z",
      "2026-03-02T00:00:00.000Z",
      "2026-03-01T01:00:00.000Z",
      "2026-03-01T00:00:00.001Z",
    ]);
  });

  it("refuses a bad priority or expiresAt with 400, changing nothing", async () => {
    const l = await ledger("2026-03-01T00:00:00Z");
    await account(l, "u1");
    const bad: [object, string][] = [
      [{ priority: -1 }, "body.priority"],
      [{ priority: 101 }, "body.priority"],
      [{ priority: 1.5 }, "body.priority"],
      [{ priority: "5" }, "body.priority"],
      [{ priority: null }, "body.priority"],
      [{ expiresAt: "2026-03-01T00:00:00Z" }, "body.expiresAt"], // now: not in the future
      [{ expiresAt: "2026-02-28T23:59:59Z" }, "body.expiresAt"],
      [
        { expiresAt: new Date(Date.parse("2026-03-01") + 3653 * DAY + 1).toISOString() },
        "body.expiresAt",
      ],
      [{ expiresAt: "2027-01-01" }, "body.expiresAt"], // a date, not a date-time
      [{ expiresAt: "2027-02-30T00:00:00Z" }, "body.expiresAt"],
      [{ expiresAt: "2027-01-01 00:00:00Z" }, "body.expiresAt"],
      [{ expiresAt: 1893456000000 }, "body.expiresAt"],
    ];
    for (const [terms, path] of bad) {
      for (const [route, body] of [
        ["/v1/accounts/credits/add", { accountId: "u1", amount: 5, ...terms }],
        ["/v1/transactions/create", { accountId: "u1", amount: 5, type: "credit", ...terms }],
      ] as const) {
        const error = await l.fail("POST", route, body, 400, "VALIDATION_ERROR");
        expect(validationPaths(error), JSON.stringify(terms)).toContain(path);
      }
    }
    // Only a credit takes grant terms.
    const debit = { accountId: "u1", amount: 5, type: "debit", priority: 5 };
    await l.fail("POST", "/v1/transactions/create", debit, 400, "VALIDATION_ERROR");
    expect(await l.balance("u1")).toMatchObject({ balance: 0 });
    expect(await l.grants("u1")).toEqual([]);
    expect(await l.txns("u1")).toEqual([]);
  });
});

describe("spending order", () => {
  it("priority ascending, then expiresAt ascending (none last), then oldest first", async () => {
    const l = await ledger();
    await account(l, "u1");
    const plain = await add(l, "u1", 10); // 50, none
    const late = await add(l, "u1", 10, { priority: 10, expiresAt: l.isoIn(9 * DAY) });
    const never = await add(l, "u1", 10, { priority: 10 });
    const soon = await add(l, "u1", 10, { priority: 10, expiresAt: l.isoIn(3 * DAY) });
    const cheap = await add(l, "u1", 10, { priority: 60 });
    const plain2 = await add(l, "u1", 10); // 50, none, younger than `plain`
    const first = await add(l, "u1", 10, { priority: 0, expiresAt: l.isoIn(30 * DAY) });
    const steps: [number, Record<string, number>][] = [
      [5, { [first]: 5 }],
      [10, { [first]: 0, [soon]: 5 }],
      [10, { [soon]: 0, [late]: 5 }],
      [10, { [late]: 0, [never]: 5 }],
      [10, { [never]: 0, [plain]: 5 }],
      [10, { [plain]: 0, [plain2]: 5 }],
      [10, { [plain2]: 0, [cheap]: 5 }],
    ];
    const expected: Record<string, number> = {
      [plain]: 10,
      [late]: 10,
      [never]: 10,
      [soon]: 10,
      [cheap]: 10,
      [plain2]: 10,
      [first]: 10,
    };
    for (const [amount, changes] of steps) {
      await deduct(l, "u1", amount);
      Object.assign(expected, changes);
      expect(await remaining(l, "u1")).toEqual(expected);
    }
    await expectBalanceIsRemaining(l, "u1");
  });

  it("a manual debit and a reservation confirm spend in the same order; one debit spans grants", async () => {
    const { l, grants } = await withGrants(
      [3, { priority: 20 }],
      [4, { priority: 30 }],
      [5, { priority: 40 }],
    );
    const [a, b, c] = grants;
    await l.ok("POST", "/v1/transactions/create", { accountId: "u1", amount: 5, type: "debit" });
    expect(await remaining(l, "u1")).toEqual({ [a]: 0, [b]: 2, [c]: 5 });
    const reservationId = await reserve(l, "u1", 4);
    // A reservation picks no grant.
    expect(await remaining(l, "u1")).toEqual({ [a]: 0, [b]: 2, [c]: 5 });
    await l.ok("POST", "/v1/reservations/confirm", { reservationId, actualAmount: 3.5 });
    expect(await remaining(l, "u1")).toEqual({ [a]: 0, [b]: 0, [c]: 3.5 });
    expect((await l.grants("u1")).map((g) => g.status)).toEqual(["active", "spent", "spent"]);
    await expectBalanceIsRemaining(l, "u1");
  });

  it("exact micro-credits: 0.1 + 0.2 spent as 0.3", async () => {
    const { l, grants } = await withGrants(
      [0.1, { priority: 1 }],
      [0.2, { priority: 2 }],
      [1000.000001],
    );
    const [a, b, c] = grants;
    await deduct(l, "u1", 0.3);
    expect(await remaining(l, "u1")).toEqual({ [a]: 0, [b]: 0, [c]: 1000.000001 });
    await deduct(l, "u1", 0.000001);
    expect((await l.grants("u1"))[0]?.remaining).toBe(1000);
  });
});

describe("expiry", () => {
  it("the job books what is left of an expired grant as credits_expired; never an expiry of 0", async () => {
    const l = await ledger();
    await account(l, "u1");
    const keep = await add(l, "u1", 5);
    const g = await add(l, "u1", 30, { priority: 60, expiresAt: l.isoIn(DAY) });
    const spent = await add(l, "u1", 7, { priority: 1, expiresAt: l.isoIn(DAY) });
    await deduct(l, "u1", 7 + 5 + 2); // spent 7, keep 5, g 2
    l.t.advance(DAY - 1);
    expect(await l.expireJob()).toEqual({ expiries: 0, failed: 0 });
    l.t.advance(1);
    // Past expiresAt, before the job: expired in the list, still in the balance.
    expect((await l.grants("u1")).map((x) => [x.id, x.status])).toEqual([
      [spent, "expired"],
      [g, "expired"],
      [keep, "spent"],
    ]);
    expect(await l.expireJob()).toEqual({ expiries: 1, failed: 0 });
    expect(await l.expireJob()).toEqual({ expiries: 0, failed: 0 });
    expect(await expiries(l, "u1")).toEqual([["credits_expired", g, 28]]);
    const last = (await l.txns("u1")).at(-1);
    expect(last).toMatchObject({ type: "debit", amount: 28, balanceAfter: 0 });
    expect(await remaining(l, "u1")).toEqual({ [keep]: 0, [g]: 0, [spent]: 0 });
    await expectBalanceIsRemaining(l, "u1");
  });

  it("a deduction first books the account's due expiries in its own transaction", async () => {
    const l = await ledger();
    await account(l, "u1");
    const g = await add(l, "u1", 10, { expiresAt: l.isoIn(HOUR) });
    await add(l, "u1", 5);
    l.t.advance(HOUR);
    const d = await deduct(l, "u1", 3);
    expect(d.balance).toBe(2);
    const list = (await l.txns("u1")).map((x) => [x.type, x.amount, x.metadata.reason ?? null]);
    expect(list.slice(2)).toEqual([
      ["debit", 10, "credits_expired"],
      ["debit", 3, null],
    ]);
    expect((await l.txns("u1"))[2]?.metadata.grantId).toBe(g);
  });

  it("expired credits are never spent or reserved: the failed request changes nothing; the job books", async () => {
    const l = await ledger();
    await account(l, "u1");
    await add(l, "u1", 10, { expiresAt: l.isoIn(HOUR) });
    await add(l, "u1", 5);
    l.t.advance(HOUR);
    expect(await l.balance("u1")).toMatchObject({ balance: 15, available: 15 });
    const over = { accountId: "u1", amount: 6 };
    let error = await l.fail(
      "POST",
      "/v1/accounts/credits/deduct",
      over,
      402,
      "INSUFFICIENT_CREDITS",
    );
    expect(error.details).toEqual({ available: 5, requested: 6 });
    error = await l.fail("POST", "/v1/reservations/create", over, 402, "INSUFFICIENT_CREDITS");
    expect(error.details).toEqual({ available: 5, requested: 6 });
    const debit = { ...over, type: "debit" };
    await l.fail("POST", "/v1/transactions/create", debit, 402, "INSUFFICIENT_CREDITS");
    // Nothing was booked by the failed requests.
    expect(await l.txns("u1")).toHaveLength(2);
    expect(await l.expireJob()).toEqual({ expiries: 1, failed: 0 });
    expect(await expiries(l, "u1")).toHaveLength(1);
    expect(await l.balance("u1")).toMatchObject({ balance: 5, available: 5 });
  });

  it("an add and a reservation also book due expiries first", async () => {
    const l = await ledger();
    await account(l, "u1");
    await add(l, "u1", 10, { expiresAt: l.isoIn(HOUR) });
    await add(l, "u1", 5, { expiresAt: l.isoIn(2 * HOUR) });
    l.t.advance(HOUR);
    await add(l, "u1", 1);
    expect((await l.txns("u1")).map((x) => [x.type, x.amount])).toEqual([
      ["credit", 10],
      ["credit", 5],
      ["debit", 10],
      ["credit", 1],
    ]);
    l.t.advance(HOUR);
    await reserve(l, "u1", 1);
    expect((await l.txns("u1")).at(-1)).toMatchObject({ type: "debit", amount: 5 });
    expect(await l.balance("u1")).toMatchObject({ balance: 1, reserved: 1, available: 0 });
  });

  it("is capped at available; a confirm spends the held credits first and removes the rest", async () => {
    const l = await ledger();
    await account(l, "u1");
    const g = await add(l, "u1", 100, { expiresAt: l.isoIn(DAY) });
    l.t.advance(12 * HOUR);
    const reservationId = await reserve(l, "u1", 80);
    l.t.advance(12 * HOUR);
    await l.expireJob();
    expect(await expiries(l, "u1")).toEqual([["credits_expired", g, 20]]);
    expect(await l.balance("u1")).toMatchObject({ balance: 80, reserved: 80, available: 0 });
    const [listed] = await l.grants("u1");
    expect(listed).toMatchObject({ remaining: 80, status: "expired" });
    // Nothing to add while the hold covers it.
    expect(await l.expireJob()).toEqual({ expiries: 0, failed: 0 });
    const c = await l.ok("POST", "/v1/reservations/confirm", { reservationId, actualAmount: 50 });
    expect(c).toMatchObject({ actualAmount: 50, amountReleased: 30, balance: 0 });
    expect(await expiries(l, "u1")).toEqual([
      ["credits_expired", g, 20],
      ["credits_expired", g, 30],
    ]);
    const list = await l.txns("u1");
    expect(list.map((x) => [x.type, x.amount, x.balanceAfter])).toEqual([
      ["credit", 100, 100],
      ["debit", 20, 80],
      ["debit", 50, 30],
      ["debit", 30, 0],
    ]);
    expect(list[2]?.metadata.reservationId).toBe(reservationId);
  });

  it("a cancel removes what the hold kept of an expired grant; other credits stay", async () => {
    const l = await ledger();
    await account(l, "u1");
    const g = await add(l, "u1", 100, { priority: 0, expiresAt: l.isoIn(DAY) });
    l.t.advance(12 * HOUR);
    const reservationId = await reserve(l, "u1", 80);
    await add(l, "u1", 40);
    l.t.advance(12 * HOUR);
    // The cancel books the due expiry (capped at available 60), then removes what is left of it.
    await l.ok("POST", "/v1/reservations/cancel", { reservationId });
    expect(await expiries(l, "u1")).toEqual([
      ["credits_expired", g, 60],
      ["credits_expired", g, 40],
    ]);
    expect(await l.balance("u1")).toMatchObject({ balance: 40, reserved: 0, available: 40 });
  });

  it("credits held by a hold that ran out are removed by the next write or the job", async () => {
    const l = await ledger();
    await account(l, "u1");
    const g = await add(l, "u1", 10, { expiresAt: l.isoIn(HOUR) });
    await reserve(l, "u1", 10, 2 * 3600);
    l.t.advance(HOUR);
    await l.expireJob();
    expect(await expiries(l, "u1")).toEqual([]);
    expect(await l.grants("u1")).toMatchObject([{ remaining: 10, status: "expired" }]);
    l.t.advance(HOUR);
    expect(await l.expireJob()).toEqual({ expiries: 1, failed: 0 });
    expect(await expiries(l, "u1")).toEqual([["credits_expired", g, 10]]);
    expect(await l.balance("u1")).toMatchObject({ balance: 0, reserved: 0 });
  });

  it("what holds keep of an expired grant goes as soon as available allows; only their confirms spend it", async () => {
    const l = await ledger();
    await account(l, "u1");
    const g = await add(l, "u1", 10, { expiresAt: l.isoIn(HOUR) });
    const r = await reserve(l, "u1", 8);
    l.t.advance(HOUR);
    // The add books g's expiry first, capped at available (2); then 5 more are available.
    const other = await add(l, "u1", 5, { priority: 0 });
    expect(await remaining(l, "u1")).toEqual({ [g]: 8, [other]: 5 });
    expect(await l.balance("u1")).toMatchObject({ balance: 13, reserved: 8, available: 5 });
    // A deduction first removes 5 more of g (available 5 -> 0), then finds nothing available:
    // 402, and the failed request changes nothing.
    const refused = await l.fail(
      "POST",
      "/v1/accounts/credits/deduct",
      { accountId: "u1", amount: 3 },
      402,
      "INSUFFICIENT_CREDITS",
    );
    expect(refused.details).toMatchObject({ available: 0, requested: 3 });
    expect(await remaining(l, "u1")).toEqual({ [g]: 8, [other]: 5 });
    // The next write that succeeds keeps that removal: here the hold's confirm, which then spends
    // the 3 left of g first and 5 of the other grant.
    const c = await l.ok("POST", "/v1/reservations/confirm", { reservationId: r, actualAmount: 8 });
    expect(c).toMatchObject({ balance: 0 });
    expect(await remaining(l, "u1")).toEqual({ [g]: 0, [other]: 0 });
    expect(await expiries(l, "u1")).toEqual([
      ["credits_expired", g, 2],
      ["credits_expired", g, 5],
    ]);
  });

  it("expired credits a hold kept are removed before a later deduction: 402 with available 90 (issue 50)", async () => {
    // The reproduction: 10 expiring in 2 s, held whole; 100 added after the expiry; a deduction
    // of 100 must first remove the 10 (balance 100, available 90) and then refuse.
    const l = await ledger();
    await account(l, "held-1");
    const g = await add(l, "held-1", 10, { expiresAt: l.isoIn(2_000) });
    await l.ok("POST", "/v1/reservations/create", {
      accountId: "held-1",
      amount: 10,
      operation: "x",
      model: "gpt-4o",
      ttlSeconds: 600,
    });
    // 8 s later, after the expiry job's runs (every 5 s by default).
    l.t.advance(5_000);
    await l.expireJob();
    l.t.advance(3_000);
    expect(await l.balance("held-1")).toMatchObject({ balance: 10, reserved: 10, available: 0 });
    expect(
      await l.ok("POST", "/v1/accounts/credits/add", { accountId: "held-1", amount: 100 }),
    ).toMatchObject({ balance: 110 });
    expect(await l.balance("held-1")).toMatchObject({ balance: 110, reserved: 10, available: 100 });
    const refused = await l.fail(
      "POST",
      "/v1/accounts/credits/deduct",
      { accountId: "held-1", amount: 100 },
      402,
      "INSUFFICIENT_CREDITS",
    );
    expect(refused.details).toMatchObject({ available: 90, requested: 100 });
    // The refused request kept nothing; the job books the removal.
    expect(await expiries(l, "held-1")).toEqual([]);
    expect(await l.expireJob()).toEqual({ expiries: 1, failed: 0 });
    expect(await expiries(l, "held-1")).toEqual([["credits_expired", g, 10]]);
    expect(await l.balance("held-1")).toMatchObject({ balance: 100, reserved: 10, available: 90 });
    // Every other kind of write sees the same 90.
    await l.fail(
      "POST",
      "/v1/reservations/create",
      { accountId: "held-1", amount: 91, ttlSeconds: 60 },
      402,
      "INSUFFICIENT_CREDITS",
    );
    await l.fail(
      "POST",
      "/v1/transactions/create",
      { accountId: "held-1", amount: 91, type: "debit" },
      402,
      "INSUFFICIENT_CREDITS",
    );
    expect(await deduct(l, "held-1", 90)).toMatchObject({ balance: 10 });
    expect(await l.balance("held-1")).toMatchObject({ balance: 10, reserved: 10, available: 0 });
  });
});

describe("the low-balance alert of a credit that books an expiry", () => {
  /** The `balance.low` events stored for webhooks, oldest first, as their `data`. */
  async function lowEvents(l: HttpLedger) {
    const rows = await l.t.ledger.db.read
      .selectFrom("webhook_events")
      .select("payload")
      .where("type", "=", "balance.low")
      .orderBy("id")
      .execute();
    return rows.map((r) => (JSON.parse(r.payload) as { data: Record<string, unknown> }).data);
  }

  /** A ledger with an endpoint subscribed to `balance.low` (events nobody takes are not stored). */
  async function watched() {
    const l = await ledger();
    const hook = await l.t.client.POST("/v1/webhooks/create", {
      body: { url: "http://127.0.0.1:9/low", events: ["balance.low"] },
    });
    expect(hook.response.status).toBe(200);
    return l;
  }

  it("fires when the expiry it books takes available below the threshold and the credit does not bring it back", async () => {
    const l = await watched();
    await l.ok("POST", "/v1/accounts/create", { externalId: "low-1", lowBalanceThreshold: 5 });
    await add(l, "low-1", 10, { expiresAt: l.isoIn(1_000) });
    l.t.advance(2_000);
    // available 10 → 0 (the expiry) → 1 (the credit): below 5 at the end of the unit.
    expect(await add(l, "low-1", 1)).toMatch(/^grt_/);
    const [expiry] = (await l.txns("low-1")).filter((x) => x.metadata.reason === "credits_expired");
    expect(await lowEvents(l)).toEqual([
      {
        accountId: expect.stringMatching(/^acc_/),
        externalId: "low-1",
        balance: 1,
        reserved: 0,
        available: 1,
        threshold: 5,
        transactionId: expiry?.id,
      },
    ]);
  });

  it("does not fire when the credit brings available back to the threshold or above", async () => {
    const l = await watched();
    await l.ok("POST", "/v1/accounts/create", { externalId: "low-2", lowBalanceThreshold: 5 });
    await add(l, "low-2", 10, { expiresAt: l.isoIn(1_000) });
    l.t.advance(2_000);
    await add(l, "low-2", 5); // 10 → 0 → 5: at the threshold, not below it
    expect(await lowEvents(l)).toEqual([]);
    expect(await l.balance("low-2")).toMatchObject({ balance: 5, available: 5 });
  });
});

describe("GET /v1/accounts/grants", () => {
  it("lists newest first with pagination, activeOnly and every status", async () => {
    const l = await ledger();
    await account(l, "u1");
    const a = await add(l, "u1", 1, { priority: 1 }); // spent below
    const b = await add(l, "u1", 2, { expiresAt: l.isoIn(HOUR) }); // expired below
    const c = await add(l, "u1", 3);
    await deduct(l, "u1", 1);
    l.t.advance(HOUR);
    const page = await l.ok("GET", "/v1/accounts/grants?externalId=u1&limit=2");
    expect(page.grants.map((g) => [g.id, g.status])).toEqual([
      [c, "active"],
      [b, "expired"],
    ]);
    expect(page.pagination).toEqual({ limit: 2, offset: 0, totalCount: 3, hasMore: true });
    const rest = await l.ok("GET", "/v1/accounts/grants?accountId=u1&limit=2&offset=2");
    expect(rest.grants.map((g) => [g.id, g.status])).toEqual([[a, "spent"]]);
    expect(rest.pagination).toEqual({ limit: 2, offset: 2, totalCount: 3, hasMore: false });
    const active = await l.ok("GET", "/v1/accounts/grants?accountId=u1&activeOnly=true");
    expect(active.grants.map((g) => g.id)).toEqual([c]);
    expect(active.pagination).toMatchObject({ limit: 100, totalCount: 1 });
  });

  it("400 for a limit outside 1-1000 or no account, 404 for an unknown or foreign account", async () => {
    const l = await ledger();
    const id = await account(l, "u1");
    await l.ok("GET", "/v1/accounts/grants?accountId=u1&limit=1000");
    for (const q of ["limit=0", "limit=1001", "limit=1.5", "offset=-1", "activeOnly=yes"]) {
      await l.fail(
        "GET",
        `/v1/accounts/grants?accountId=u1&${q}`,
        undefined,
        400,
        "VALIDATION_ERROR",
      );
    }
    await l.fail("GET", "/v1/accounts/grants", undefined, 400, "VALIDATION_ERROR");
    await l.fail(
      "GET",
      `/v1/accounts/grants?accountId=${id}&externalId=u2`,
      undefined,
      400,
      "VALIDATION_ERROR",
    );
    await l.fail(
      "GET",
      "/v1/accounts/grants?accountId=nobody",
      undefined,
      404,
      "ACCOUNT_NOT_FOUND",
    );
    const other = await l.t.newProject("other");
    const res = await l.t.api("GET", `/v1/accounts/grants?accountId=${id}`, { key: other.key });
    expect(res.status).toBe(404);
  });
});

describe("non-rolling plan grants", () => {
  it("are priority-0 grants expiring when the next grant is due; cancelling does not move that", async () => {
    const l = await ledger("2026-01-31T09:00:00Z");
    await account(l, "u1");
    await add(l, "u1", 10);
    const planId = (
      await l.ok("POST", "/v1/plans/create", {
        name: "Use or lose",
        amount: 100,
        interval: "month",
        accumulate: false,
      })
    ).plan.id;
    const ap = (await l.ok("POST", "/v1/accounts/plans/assign", { accountId: "u1", planId }))
      .accountPlan.id;
    const [grant] = await l.grants("u1");
    expect(grant).toMatchObject({
      amount: 100,
      priority: 0,
      expiresAt: "2026-02-28T09:00:00.000Z",
    });
    await deduct(l, "u1", 30); // from the plan grant
    expect((await l.grants("u1"))[0]?.remaining).toBe(70);
    l.t.advance(10 * DAY);
    await l.ok("POST", "/v1/accounts/plans/cancel", { accountPlanId: ap });
    // Still spendable until the end of its period.
    await deduct(l, "u1", 20);
    l.t.setNow(Date.parse("2026-02-28T09:00:00Z"));
    expect(await runGrantPlans({ queue: l.t.ledger.queue, nowMs: l.t.now() })).toMatchObject({
      grants: 0,
    });
    await l.expireJob();
    const expired = (await l.txns("u1")).filter(
      (x) => x.metadata.reason === "plan_credits_expired",
    );
    expect(expired).toHaveLength(1);
    expect(expired[0]).toMatchObject({ type: "debit", amount: 50 });
    expect(expired[0]?.metadata).toMatchObject({ grantId: grant?.id, planId, accountPlanId: ap });
    expect(await l.balance("u1")).toMatchObject({ balance: 10 });
  });

  it("a rolling plan's grants have priority 50 and no expiry", async () => {
    const l = await ledger();
    await account(l, "u1");
    const planId = (
      await l.ok("POST", "/v1/plans/create", { name: "Rolls", amount: 5, interval: "1d" })
    ).plan.id;
    await l.ok("POST", "/v1/accounts/plans/assign", { accountId: "u1", planId });
    expect(await l.grants("u1")).toMatchObject([{ amount: 5, priority: 50, expiresAt: null }]);
  });
});

describe("worked example (docs/api.md#worked-example)", () => {
  async function setup() {
    const l = await ledger("2026-03-01T00:00:00Z");
    await account(l, "acme");
    const g1 = await add(l, "acme", 100);
    const g2 = await add(l, "acme", 30, { priority: 10, expiresAt: "2026-03-31T00:00:00Z" });
    const g3 = await add(l, "acme", 20, { priority: 10, expiresAt: "2026-03-10T00:00:00Z" });
    const g4 = await add(l, "acme", 40, { priority: 10 });
    await deduct(l, "acme", 40);
    expect(await remaining(l, "acme")).toEqual({ [g1]: 100, [g2]: 10, [g3]: 0, [g4]: 40 });
    l.t.setNow(Date.parse("2026-03-30T12:00:00Z"));
    const hold = await reserve(l, "acme", 148);
    l.t.setNow(Date.parse("2026-03-31T00:00:00Z"));
    await l.expireJob();
    expect(await expiries(l, "acme")).toEqual([["credits_expired", g2, 2]]);
    expect(await l.balance("acme")).toMatchObject({
      externalId: "acme",
      balance: 148,
      reserved: 148,
      available: 0,
    });
    l.t.setNow(Date.parse("2026-03-31T06:00:00Z"));
    return { l, hold, g1, g2, g3, g4 };
  }

  it("confirm: the held 8 of the expired grant are spent first", async () => {
    const { l, hold, g1, g2, g3, g4 } = await setup();
    const c = await l.ok("POST", "/v1/reservations/confirm", {
      reservationId: hold,
      actualAmount: 100,
    });
    expect(c.balance).toBe(48);
    expect(await remaining(l, "acme")).toEqual({ [g1]: 48, [g2]: 0, [g3]: 0, [g4]: 0 });
    expect(await expiries(l, "acme")).toEqual([["credits_expired", g2, 2]]);
  });

  it("cancel: the held 8 are removed in the same transaction", async () => {
    const { l, hold, g1, g2, g3, g4 } = await setup();
    await l.ok("POST", "/v1/reservations/cancel", { reservationId: hold });
    expect(await remaining(l, "acme")).toEqual({ [g1]: 100, [g2]: 0, [g3]: 0, [g4]: 40 });
    expect(await expiries(l, "acme")).toEqual([
      ["credits_expired", g2, 2],
      ["credits_expired", g2, 8],
    ]);
    expect(await l.balance("acme")).toMatchObject({ balance: 140, available: 140 });
  });
});

describe("concurrency", () => {
  it("parallel deductions across many grants keep balance = Σ remaining", async () => {
    const l = await ledger();
    await account(l, "u1");
    for (let i = 0; i < 10; i++) await add(l, "u1", 3, { priority: i * 10 });
    const results = await Promise.all(
      Array.from({ length: 40 }, () =>
        l.http("POST", "/v1/accounts/credits/deduct", {
          accountId: "u1",
          amount: 1,
        }),
      ),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(30);
    expect(results.filter((r) => r.status === 402)).toHaveLength(10);
    expect(Object.values(await remaining(l, "u1"))).toEqual(Array(10).fill(0));
    await expectBalanceIsRemaining(l, "u1");
  });
});
