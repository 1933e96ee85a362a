/**
 * Plan grants over simulated time (docs/api.md#plans-and-grants, docs/design.md#plan-grants-job):
 * the grant job, schedules in UTC with month-end clamping from the anchor, occurrences,
 * accumulate false, catch-up after downtime, racing job runs (one process and two), and
 * startMode next_interval.
 */
import { sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { accountRoutes } from "../src/accounts/routes.ts";
import { loadConfig } from "../src/config.ts";
import { runGrantPlans } from "../src/jobs/grant-plans.ts";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import { planRoutes } from "../src/plans/routes.ts";
import { addIntervals } from "../src/plans/schedule.ts";
import { grantNextPeriod } from "../src/plans/settlement.ts";
import { reservationRoutes } from "../src/reservations/routes.ts";
import { openLedger } from "../src/runtime.ts";
import { transactionRoutes } from "../src/transactions/routes.ts";
import { fundedAccount, makeLedger, type TestLedger } from "./harness.ts";
import { sqliteOnly } from "./pg-harness.ts";

const DAY = 86_400_000;
const HOUR = 3_600_000;
const ms = (s: string) => Date.parse(s);
const isoAt = (n: number) => new Date(n).toISOString();
const NONE = { grants: 0, completed: 0, failed: 0 };

const open: TestLedger[] = [];
afterEach(async () => {
  for (const l of open.splice(0)) await l.close();
});

/** A ledger on a fake clock with account "u1" holding `credits` purchased credits. */
async function ledger(start = "2026-01-31T09:00:00Z", credits = 0) {
  const t = await makeLedger({ fakeClock: start });
  open.push(t);
  await fundedAccount(t, "u1", credits);
  return t;
}

/** Creates a plan (`amount`, `interval`, …) and assigns it. @returns the assignment id */
async function assignNew(t: TestLedger, ref: string, plan: object, startMode?: string) {
  const created = await t.call(planRoutes.create, { body: { name: "P", ...plan } });
  const body = { accountId: ref, planId: created.plan.id, ...(startMode ? { startMode } : {}) };
  return (await t.call(planRoutes.assign, { body })).accountPlan.id;
}

const run = (t: TestLedger) => runGrantPlans({ queue: t.ledger.queue, nowMs: t.now() });
const view = (t: TestLedger, ref = "u1") =>
  t.call(accountRoutes.balance, { query: { accountId: ref } });
const bal = async (t: TestLedger, ref = "u1") => (await view(t, ref)).balance;
const deduct = (t: TestLedger, amount: number) =>
  t.call(ledgerRoutes.deduct, { body: { accountId: "u1", amount } });
const confirm = (t: TestLedger, reservationId: string, actualAmount: number) =>
  t.call(reservationRoutes.confirm, { body: { reservationId, actualAmount } });

/** Reserves `amount` of u1 for a day. @returns the reservation id */
async function reserve(t: TestLedger, amount: number): Promise<string> {
  const body = { accountId: "u1", amount, operation: "op", model: "m", ttlSeconds: 86_400 };
  return (await t.call(reservationRoutes.create, { body })).reservation.id;
}

/** The account's transactions, oldest first. */
async function txns(t: TestLedger, ref = "u1") {
  const { items } = await t.call(transactionRoutes.list, { query: { accountId: ref, limit: 500 } });
  return [...items].reverse();
}
const moves = (list: { type: string; amount: number }[]) => list.map((x) => [x.type, x.amount]);

/** Amounts of the plan expiry debits, oldest first. */
async function expiries(t: TestLedger) {
  const expired = (await txns(t)).filter((x) => x.metadata.reason === "plan_credits_expired");
  expect(expired.every((x) => x.type === "debit")).toBe(true);
  return expired.map((x) => x.amount);
}

async function assignment(t: TestLedger, ref: string, apId: string) {
  const { plans } = await t.call(planRoutes.listAssigned, { query: { accountId: ref } });
  const ap = plans.find((p) => p.id === apId);
  expect(ap).toBeDefined();
  if (!ap) throw new Error(`no account plan ${apId}`);
  return ap;
}

describe("addIntervals (UTC, months clamped from the anchor)", () => {
  const at = "T09:30:15.250Z";
  // [anchor date, interval, k, expected date]; the time of day is kept.
  it.each([
    ["2026-03-28", "1d", 1, "2026-03-29"], // a DST change elsewhere: UTC ignores it
    ["2026-03-28", "1d", 40, "2026-05-07"],
    ["2026-03-28", "week", 1, "2026-04-04"],
    ["2026-03-28", "week", 52, "2027-03-27"],
    ["2026-01-31", "month", 0, "2026-01-31"],
    ["2026-01-31", "month", 1, "2026-02-28"],
    ["2026-01-31", "month", 2, "2026-03-31"], // from the anchor: no drift to Mar 28
    ["2026-01-31", "month", 3, "2026-04-30"],
    ["2026-01-31", "month", 11, "2026-12-31"],
    ["2026-01-31", "month", 13, "2027-02-28"],
    ["2028-01-31", "month", 1, "2028-02-29"],
    ["2027-12-31", "month", 2, "2028-02-29"],
    ["2028-02-29", "month", 12, "2029-02-28"],
    ["2026-01-30", "month", 2, "2026-03-30"],
    ["2025-11-30", "month", 3, "2026-02-28"],
    ["2026-05-15", "month", 25, "2028-06-15"],
  ] as const)("%s + %s × %i = %s", (anchor, interval, k, expected) => {
    expect(isoAt(addIntervals(ms(`${anchor}${at}`), interval, k))).toBe(`${expected}${at}`);
  });
});

describe("grant job", () => {
  it("a daily plan over 40 simulated days grants 40 times", async () => {
    const t = await ledger();
    const start = t.now();
    const ap = await assignNew(t, "u1", { amount: 2.5, interval: "1d" });
    for (let day = 1; day < 40; day++) {
      t.advance(DAY);
      expect(await run(t)).toEqual({ grants: 1, completed: 0, failed: 0 });
    }
    t.advance(DAY - 1); // just before day 40's grant
    expect(await run(t)).toEqual(NONE);
    const credits = (await txns(t)).filter((x) => x.type === "credit");
    expect(credits.map((x) => x.createdAt)).toEqual(
      Array.from({ length: 40 }, (_, d) => isoAt(start + d * DAY)),
    );
    expect(credits.every((x) => x.metadata.accountPlanId === ap && x.amount === 2.5)).toBe(true);
    expect(await bal(t)).toBe(100);
    const listed = await assignment(t, "u1", ap);
    expect(listed).toMatchObject({ grantsMade: 40, nextGrantAt: isoAt(start + 40 * DAY) });
    expect(await t.verify()).toEqual([]);
  });

  for (const [year, feb] of [
    ["2026", "28"],
    ["2028", "29"],
  ] as const) {
    it(`a monthly plan started Jan 31 ${year} grants on Feb ${feb}, Mar 31, Apr 30`, async () => {
      const t = await ledger(`${year}-01-31T09:00:00Z`);
      const ap = await assignNew(t, "u1", { amount: 10, interval: "month" });
      const dues = [`02-${feb}`, "03-31", "04-30", "05-31"].map(
        (d) => `${year}-${d}T09:00:00.000Z`,
      );
      for (const due of dues.slice(0, 3)) {
        expect((await assignment(t, "u1", ap)).nextGrantAt).toBe(due);
        t.setNow(ms(due) - 1);
        expect((await run(t)).grants).toBe(0);
        t.setNow(ms(due));
        expect((await run(t)).grants).toBe(1);
      }
      expect(await assignment(t, "u1", ap)).toMatchObject({ grantsMade: 4, nextGrantAt: dues[3] });
      expect((await txns(t)).map((x) => x.createdAt)).toEqual([
        `${year}-01-31T09:00:00.000Z`,
        ...dues.slice(0, 3),
      ]);
      expect(await bal(t)).toBe(40);
      expect(await t.verify()).toEqual([]);
    });
  }

  it("a monthly schedule is computed from the anchor (catch-up: Feb 28, then Mar 31)", async () => {
    const t = await ledger();
    const ap = await assignNew(t, "u1", { amount: 10, interval: "month" });
    t.setNow(ms("2026-04-01T00:00:00Z"));
    expect((await run(t)).grants).toBe(2);
    expect((await txns(t)).map((x) => x.metadata.periodStart)).toEqual([
      "2026-01-31T09:00:00.000Z",
      "2026-02-28T09:00:00.000Z",
      "2026-03-31T09:00:00.000Z",
    ]);
    expect((await assignment(t, "u1", ap)).nextGrantAt).toBe("2026-04-30T09:00:00.000Z");
    expect(await t.verify()).toEqual([]);
  });

  it("occurrences 3: grants 3 times, becomes inactive at expiresAt, grants no more", async () => {
    const t = await ledger();
    const start = t.now();
    const ap = await assignNew(t, "u1", { amount: 5, interval: "1d", occurrences: 3 });
    expect((await assignment(t, "u1", ap)).expiresAt).toBe(isoAt(start + 3 * DAY));
    for (let day = 1; day <= 2; day++) {
      t.advance(DAY);
      expect(await run(t)).toEqual({ grants: 1, completed: 0, failed: 0 });
    }
    const done = { grantsMade: 3, nextGrantAt: null, active: true };
    expect(await assignment(t, "u1", ap)).toMatchObject(done);
    t.advance(DAY - 1);
    expect(await run(t)).toEqual(NONE);
    t.advance(1); // expiresAt
    expect(await run(t)).toEqual({ grants: 0, completed: 1, failed: 0 });
    expect((await assignment(t, "u1", ap)).active).toBe(false);
    t.advance(30 * DAY);
    expect(await run(t)).toEqual(NONE);
    expect(await bal(t)).toBe(15);
    expect(await txns(t)).toHaveLength(3);
    expect(await t.verify()).toEqual([]);
  });

  it("occurrences: a job back after expiresAt grants the missing periods and ends it", async () => {
    const t = await ledger();
    const ap = await assignNew(t, "u1", { amount: 5, interval: "week", occurrences: 4 });
    t.advance(60 * DAY);
    expect(await run(t)).toEqual({ grants: 3, completed: 1, failed: 0 });
    expect(await assignment(t, "u1", ap)).toMatchObject({ grantsMade: 4, active: false });
    expect(await bal(t)).toBe(20);
    expect(await t.verify()).toEqual([]);
  });
});

describe("accumulate: false", () => {
  it("expires exactly the unspent part of the previous grant, then grants", async () => {
    const t = await ledger();
    const ap = await assignNew(t, "u1", { amount: 100, interval: "1d", accumulate: false });
    await deduct(t, 30);
    t.advance(DAY);
    expect((await run(t)).grants).toBe(1);
    const [expiry, grant, ...rest] = (await txns(t)).slice(2);
    expect(rest).toEqual([]);
    expect(expiry).toMatchObject({ type: "debit", amount: 70, balanceAfter: 0 });
    expect(expiry?.metadata).toMatchObject({ reason: "plan_credits_expired", accountPlanId: ap });
    expect(grant).toMatchObject({ type: "credit", amount: 100, balanceAfter: 100 });
    // Nothing spent the next day: the whole previous grant expires.
    t.advance(DAY);
    await run(t);
    const last = (await txns(t)).slice(4).map((x) => [x.type, x.amount, x.balanceAfter]);
    expect(last).toEqual([
      ["debit", 100, 0],
      ["credit", 100, 100],
    ]);
    expect(await t.verify()).toEqual([]);
  });

  it("plan credits are spent first; purchased credits survive the expiry", async () => {
    const t = await ledger(undefined, 50);
    await assignNew(t, "u1", { amount: 100, interval: "1d", accumulate: false });
    await deduct(t, 30); // 120 left: 70 plan + 50 purchased
    t.advance(DAY);
    await run(t);
    expect(await bal(t)).toBe(150); // 70 expired, 100 granted
    await deduct(t, 120); // all of the grant and 20 purchased: 30 purchased left
    t.advance(DAY);
    await run(t);
    expect(await expiries(t)).toEqual([70]); // nothing left to expire on day 2
    expect(await bal(t)).toBe(130);
    // A confirmed reservation also spends plan credits first.
    const reservationId = await reserve(t, 40);
    await confirm(t, reservationId, 40);
    t.advance(DAY);
    await run(t);
    expect(await expiries(t)).toEqual([70, 60]);
    expect(await bal(t)).toBe(130); // 30 purchased + 100 plan
    expect(await t.verify()).toEqual([]);
  });

  it("the expiry is capped at available: credits held by a reservation stay", async () => {
    const t = await ledger();
    await assignNew(t, "u1", { amount: 100, interval: "1d", accumulate: false });
    t.advance(12 * HOUR);
    const reservationId = await reserve(t, 80); // held for a day
    t.advance(12 * HOUR);
    expect((await run(t)).grants).toBe(1);
    expect(await expiries(t)).toEqual([20]);
    expect(await view(t)).toMatchObject({ balance: 180, reserved: 80, available: 100 });
    // The confirm first removes the 80 the hold kept, now that `available` (100) allows it: the
    // hold is covered by the new grant, which the confirm then spends (expired credits are never
    // spent while unexpired ones can cover the hold).
    const c = await confirm(t, reservationId, 80);
    expect(c.balance).toBe(20);
    expect(await expiries(t)).toEqual([20, 80]);
    expect(await t.verify()).toEqual([]);
  });
});

describe("catch-up and exactly-once", () => {
  it("a 10-day downtime catches up exactly 10 grants in order; a second run grants nothing", async () => {
    const t = await ledger();
    const start = t.now();
    const ap = await assignNew(t, "u1", { amount: 3, interval: "1d" });
    t.advance(10 * DAY);
    expect(await run(t)).toEqual({ grants: 10, completed: 0, failed: 0 });
    expect(await run(t)).toEqual(NONE);
    const list = await txns(t);
    const days = Array.from({ length: 11 }, (_, d) => d);
    expect(list.map((x) => x.metadata.periodStart)).toEqual(
      days.map((d) => isoAt(start + d * DAY)),
    );
    expect(list.map((x) => x.balanceAfter)).toEqual(days.map((d) => 3 * (d + 1)));
    const listed = await assignment(t, "u1", ap);
    expect(listed).toMatchObject({ grantsMade: 11, nextGrantAt: isoAt(start + 11 * DAY) });
    expect(await t.verify()).toEqual([]);
  });

  it("catch-up with accumulate false expires each previous grant in turn", async () => {
    const t = await ledger(undefined, 5);
    await assignNew(t, "u1", { amount: 100, interval: "1d", accumulate: false });
    t.advance(3 * DAY);
    expect((await run(t)).grants).toBe(3);
    const pair = [
      ["debit", 100],
      ["credit", 100],
    ];
    expect(moves((await txns(t)).slice(2))).toEqual([...pair, ...pair, ...pair]);
    expect(await bal(t)).toBe(105);
    expect(await t.verify()).toEqual([]);
  });

  async function setupMany(t: TestLedger, n: number) {
    const body = { name: "D", amount: 1, interval: "1d" };
    const planId = (await t.call(planRoutes.create, { body })).plan.id;
    for (let i = 0; i < n; i++) {
      await fundedAccount(t, `m${i}`);
      await t.call(planRoutes.assign, { body: { accountId: `m${i}`, planId } });
    }
  }

  async function expectGrantedOnce(t: TestLedger, n: number, perAccount: number) {
    for (let i = 0; i < n; i++) {
      const credits = await txns(t, `m${i}`);
      expect(credits).toHaveLength(perAccount);
      expect(new Set(credits.map((x) => x.metadata.period)).size).toBe(perAccount);
      expect(await bal(t, `m${i}`)).toBe(perAccount);
    }
    expect(await t.verify()).toEqual([]);
  }

  it("two job runs racing on one queue grant each period once", async () => {
    const t = await ledger();
    await setupMany(t, 5);
    t.advance(3 * DAY);
    const [a, b] = await Promise.all([run(t), run(t)]);
    expect(a.grants + b.grants).toBe(15);
    expect(a.failed + b.failed).toBe(0);
    await expectGrantedOnce(t, 5, 4);
  });

  it("two processes (two ledgers on one database) racing grant each period once", async () => {
    const t = await ledger();
    const config = loadConfig(t.databaseEnv);
    const second = await openLedger(config, { clock: () => t.now() });
    // Both "processes" share one thread and the native driver waits for a lock synchronously,
    // freezing the holder too: fail fast and let the write queue's SQLITE_BUSY retry take turns.
    for (const db of sqliteOnly ? [t.ledger.db.write, second.db.write] : []) {
      await sql.raw("PRAGMA busy_timeout = 20").execute(db);
    }
    try {
      await setupMany(t, 6);
      for (let round = 0; round < 3; round++) {
        t.advance(2 * DAY);
        const nowMs = t.now();
        const results = await Promise.all([
          runGrantPlans({ queue: second.queue, nowMs, batchSize: 1 }),
          runGrantPlans({ queue: t.ledger.queue, nowMs, batchSize: 1 }),
          runGrantPlans({ queue: second.queue, nowMs }),
          runGrantPlans({ queue: t.ledger.queue, nowMs }),
        ]);
        expect(results.reduce((s, r) => s + r.grants, 0)).toBe(12);
        expect(results.reduce((s, r) => s + r.failed, 0)).toBe(0);
      }
    } finally {
      await second.close();
    }
    await expectGrantedOnce(t, 6, 7);
  });

  it("a grant from a stale view of the assignment does not grant the period again", async () => {
    const t = await ledger();
    const apId = await assignNew(t, "u1", { amount: 10, interval: "1d", accumulate: false });
    const db = t.ledger.db.read;
    const stale = await db
      .selectFrom("account_plans")
      .selectAll()
      .where("id", "=", apId)
      .executeTakeFirstOrThrow();
    const planRow = await db
      .selectFrom("plans")
      .selectAll()
      .where("id", "=", stale.plan_id)
      .executeTakeFirstOrThrow();
    t.advance(DAY);
    expect((await run(t)).grants).toBe(1);
    // Another process that read the assignment before that grant now tries period 2 again.
    await t.ledger.queue.run((trx, nowMs) => grantNextPeriod(trx, stale, planRow, nowMs));
    // grant 1, then day 2: expiry of grant 1's 10 and grant 2; nothing more.
    expect(moves(await txns(t))).toEqual([
      ["credit", 10],
      ["debit", 10],
      ["credit", 10],
    ]);
    expect(await t.verify()).toEqual([]);
  });
});

describe("startMode next_interval", () => {
  it("carries over the replaced plan's schedule, then follows its own interval", async () => {
    const t = await ledger();
    const day0 = t.now();
    const a = await assignNew(t, "u1", { name: "A", amount: 10, interval: "1d" });
    expect((await assignment(t, "u1", a)).nextGrantAt).toBe(isoAt(day0 + DAY));
    t.advance(6 * HOUR);
    const weekly = { name: "B", amount: 25, interval: "week" };
    const b = await assignNew(t, "u1", weekly, "next_interval");
    expect(await bal(t)).toBe(10);
    expect((await assignment(t, "u1", a)).active).toBe(false);
    expect(await assignment(t, "u1", b)).toMatchObject({
      active: true,
      startMode: "next_interval",
      grantsMade: 0,
      nextGrantAt: isoAt(day0 + DAY),
    });
    for (const [at, balance] of [
      [day0 + DAY, 35],
      [day0 + 8 * DAY, 60], // B's own interval from its first grant
    ] as const) {
      t.setNow(at - 1);
      expect(await run(t)).toEqual(NONE);
      t.setNow(at);
      expect(await run(t)).toEqual({ grants: 1, completed: 0, failed: 0 });
      expect(await bal(t)).toBe(balance);
      const last = (await txns(t)).at(-1);
      expect(last).toMatchObject({ type: "credit", amount: 25, createdAt: isoAt(at) });
      expect(last?.metadata).toMatchObject({ accountPlanId: b });
    }
    expect((await assignment(t, "u1", b)).nextGrantAt).toBe(isoAt(day0 + 15 * DAY));
    expect(await t.verify()).toEqual([]);
  });

  // Periods missed while down are granted when it comes back (docs/api.md#grants-exactly-once);
  // B's first grant is when A's next grant was due — A's next *ungranted* grant, not periods
  // before B existed (docs/api.md#assigning-a-plan).
  it("replacing a plan with overdue grants: A's due periods are kept, B is not backdated", async () => {
    const t = await ledger();
    const day0 = t.now();
    const a = await assignNew(t, "u1", { name: "A", amount: 10, interval: "1d" });
    t.advance(3 * DAY + HOUR); // the job has not run since day 0: A's days 1-3 are due
    const b = await assignNew(t, "u1", { name: "B", amount: 100, interval: "1d" }, "next_interval");
    await run(t);
    const list = await txns(t);
    const sum = (ap: string) =>
      list.filter((x) => x.metadata.accountPlanId === ap).reduce((s, x) => s + x.amount, 0);
    expect(sum(a)).toBe(40); // day 0 + the 3 periods missed while down
    expect(sum(b)).toBe(0); // B was assigned an hour ago: no grants for days 1-3
    t.setNow(day0 + 4 * DAY);
    await run(t);
    expect(await bal(t)).toBe(140);
    expect(await t.verify()).toEqual([]);
  });

  it("with no previous plan the first grant comes one interval from now", async () => {
    const t = await ledger();
    const now = t.now();
    const plan = { amount: 4, interval: "1d", occurrences: 2 };
    const d = await assignNew(t, "u1", plan, "next_interval");
    expect(await bal(t)).toBe(0);
    expect(await assignment(t, "u1", d)).toMatchObject({
      grantsMade: 0,
      nextGrantAt: isoAt(now + DAY),
      expiresAt: isoAt(now + 3 * DAY),
    });
    await fundedAccount(t, "u2");
    const m = await assignNew(t, "u2", { amount: 9, interval: "month" }, "next_interval");
    expect((await assignment(t, "u2", m)).nextGrantAt).toBe("2026-02-28T09:00:00.000Z");
    t.advance(DAY);
    expect((await run(t)).grants).toBe(1);
    expect([await bal(t), await bal(t, "u2")]).toEqual([4, 0]);
    t.setNow(ms("2026-02-28T09:00:00Z"));
    expect(await run(t)).toEqual({ grants: 2, completed: 1, failed: 0 });
    expect([await bal(t), await bal(t, "u2")]).toEqual([8, 9]);
    expect((await assignment(t, "u1", d)).active).toBe(false);
    expect(await t.verify()).toEqual([]);
  });
});
