/**
 * Accounts inside accounts over real HTTP (contract section 24, with sections 7, 14, 18 and 23),
 * on every engine: the tree and its Account objects (`parentId`, `funding`, `fundedBy`,
 * `?parentId=`), a member's balance read answering its pool's figures, its holds counted at every
 * level and its debits booked on the pool's ledger with `onBehalfOf`, the refusals' `details`
 * naming the pool or the refusing level, 200 simultaneous reservations over two capped members
 * of one pool, the `total` period, a member's reversal, transfers (20 simultaneous, the answer,
 * the credit's expiry, what is refused), moves and funding switches and what refuses them, and
 * the events a member's write fires. A fake clock keeps time deterministic (Monday 2026-03-02,
 * 10:00 UTC). After each test `ledger verify`'s checks find nothing.
 */
import { afterEach, describe, expect, it } from "vitest";
import { countStatuses } from "./http-client.ts";
import {
  DAY,
  okAnswer,
  type PoolAccount,
  type PoolErrorCode,
  type PoolLedger,
  poolLedger,
  type Reply,
  type ReverseAnswer,
  refusal,
  type TransferAnswer,
} from "./pools-helpers.ts";

const open: PoolLedger[] = [];
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
  const l = await poolLedger(start);
  open.push(l);
  return l;
}

/** The ISO form the API writes an instant in. */
const iso = (text: string) => new Date(Date.parse(text)).toISOString();

/** The end of the fake clock's first UTC day, and the seconds from 10:00 to it. */
const MIDNIGHT = "2026-03-03T00:00:00.000Z";
const TO_MIDNIGHT = String(14 * 3600);

/** The code of an error answer, read before the full check of `refusal`. */
const codeOf = (r: Reply) => (r.body as { error?: { code?: string } }).error?.code ?? "";

const dayCap = (amount: number) => [{ period: "day", amount }];

describe("the tree and its Account objects", () => {
  it("shows parentId, funding and fundedBy on every Account read, and lists children with ?parentId=", async () => {
    const l = await ledger();
    const pool = await l.create("pool");
    expect(pool).toMatchObject({ parentId: null, funding: "own", fundedBy: pool.id, balance: 0 });
    // A parent by externalId or by id; funding defaults to `parent` under a parent.
    const m1 = await l.create("m1", { parentId: "pool" });
    expect(m1).toMatchObject({
      parentId: pool.id,
      funding: "parent",
      fundedBy: pool.id,
      balance: 0,
    });
    const m2 = await l.create("m2", { parentId: pool.id, funding: "own" });
    expect(m2).toMatchObject({ parentId: pool.id, funding: "own", fundedBy: m2.id });
    // The pool is the nearest account above that funds itself.
    const g1 = await l.create("g1", { parentId: "m1" });
    expect(g1).toMatchObject({ parentId: m1.id, funding: "parent", fundedBy: pool.id });
    const g2 = await l.create("g2", { parentId: "m2" });
    expect(g2).toMatchObject({ parentId: m2.id, funding: "parent", fundedBy: m2.id });

    await l.add("pool", 50);
    expect(await l.account("m1")).toMatchObject({
      id: m1.id,
      parentId: pool.id,
      funding: "parent",
      fundedBy: pool.id,
      balance: 0,
    });
    expect(await l.account(g1.id)).toMatchObject({
      parentId: m1.id,
      fundedBy: pool.id,
      balance: 0,
    });
    expect(await l.account("pool")).toMatchObject({
      parentId: null,
      fundedBy: pool.id,
      balance: 50,
    });
    // An update that names neither keeps parentId and funding.
    expect(await l.update("g1", { name: "renamed" })).toMatchObject({
      name: "renamed",
      parentId: m1.id,
      funding: "parent",
      fundedBy: pool.id,
      balance: 0,
    });
    const all = (await l.read<{ accounts: PoolAccount[] }>("/v1/accounts")).accounts;
    expect(
      Object.fromEntries(all.map((a) => [a.externalId, [a.parentId, a.funding, a.fundedBy]])),
    ).toEqual({
      pool: [null, "own", pool.id],
      m1: [pool.id, "parent", pool.id],
      m2: [pool.id, "own", m2.id],
      g1: [m1.id, "parent", pool.id],
      g2: [m2.id, "parent", m2.id],
    });
    const children = async (ref: string) =>
      (
        await l.read<{ accounts: PoolAccount[] }>(
          `/v1/accounts?parentId=${encodeURIComponent(ref)}`,
        )
      ).accounts
        .map((a) => a.externalId)
        .sort();
    expect(await children("pool")).toEqual(["m1", "m2"]);
    expect(await children(pool.id)).toEqual(["m1", "m2"]);
    expect(await children("m1")).toEqual(["g1"]);
    expect(await children(m2.id)).toEqual(["g2"]);
    expect(await children("g1")).toEqual([]);
  });

  it("answers a member's balance read with its pool's balance, reserved and available, and fundedBy", async () => {
    const l = await ledger();
    const pool = await l.create("pool");
    await l.add("pool", 30);
    const m1 = await l.create("m1", { parentId: "pool" });
    const g1 = await l.create("g1", { parentId: "m1" });
    const own = await l.create("own", { parentId: "pool", funding: "own" });
    await l.add("own", 4);
    await l.reserve("pool", 5);
    expect(await l.balance("m1")).toMatchObject({
      accountId: m1.id,
      externalId: "m1",
      balance: 30,
      reserved: 5,
      available: 25,
      fundedBy: pool.id,
    });
    expect(await l.balance("g1")).toMatchObject({
      accountId: g1.id,
      balance: 30,
      reserved: 5,
      available: 25,
      fundedBy: pool.id,
    });
    expect(await l.balance("pool")).toMatchObject({
      accountId: pool.id,
      balance: 30,
      reserved: 5,
      available: 25,
      fundedBy: pool.id,
    });
    // A member that funds itself reads its own figures, and is its own fundedBy.
    expect(await l.balance("own")).toMatchObject({
      accountId: own.id,
      balance: 4,
      reserved: 0,
      available: 4,
      fundedBy: own.id,
    });
    // A member's deduction answers its pool's balance; its own Account balance stays 0.
    expect((await l.deduct("g1", 2)).balance).toBe(28);
    const byExternalId = await l.read<{ balance: number; available: number; fundedBy: string }>(
      "/v1/accounts/balance?externalId=m1",
    );
    expect(byExternalId).toMatchObject({ balance: 28, available: 23, fundedBy: pool.id });
    expect((await l.account("g1")).balance).toBe(0);
    expect((await l.account("m1")).balance).toBe(0);
    expect((await l.account("pool")).balance).toBe(28);
  });

  it("moves a member under another pool: it spends there from then on, and a move carries no past spend", async () => {
    const l = await ledger();
    const a = await l.create("a", { spendLimits: dayCap(10) });
    const b = await l.create("b", { spendLimits: dayCap(10) });
    await l.add("a", 100);
    await l.add("b", 100);
    const m = await l.create("m", { parentId: "a" });
    await l.deduct("m", 3);
    expect((await l.limits("a")).limits[0]).toMatchObject({ spent: 3, remaining: 7 });

    const moved = await l.update("m", { parentId: "b" });
    expect(moved).toMatchObject({ parentId: b.id, funding: "parent", fundedBy: b.id, balance: 0 });
    expect(await l.balance("m")).toMatchObject({ balance: 100, available: 100, fundedBy: b.id });
    // What m spent under a stays a's; b's window starts empty for it.
    expect((await l.limits("a")).limits[0]).toMatchObject({ spent: 3, remaining: 7 });
    expect((await l.limits("b")).limits[0]).toMatchObject({ spent: 0, remaining: 10 });
    const view = await l.limits("m");
    expect(view.ancestors).toEqual([expect.objectContaining({ accountId: b.id, externalId: "b" })]);

    expect((await l.deduct("m", 2)).balance).toBe(98);
    expect((await l.limits("a")).limits[0]).toMatchObject({ spent: 3 });
    expect((await l.limits("b")).limits[0]).toMatchObject({ spent: 2, remaining: 8 });
    expect((await l.balance("a")).balance).toBe(97);
    const rows = await l.txns({ onBehalfOf: "m" });
    expect(rows.map((x) => [x.accountId, x.type, x.amount, x.balanceAfter, x.onBehalfOf])).toEqual([
      [a.id, "debit", 3, 97, m.id],
      [b.id, "debit", 2, 98, m.id],
    ]);
    const childrenOf = async (ref: string) =>
      (await l.read<{ accounts: PoolAccount[] }>(`/v1/accounts?parentId=${ref}`)).accounts.map(
        (x) => x.id,
      );
    expect(await childrenOf("a")).toEqual([]);
    expect(await childrenOf("b")).toEqual([m.id]);
  });
});

describe("validation of the tree", () => {
  it("answers an unknown or another project's parentId with 404 ACCOUNT_NOT_FOUND, creating nothing", async () => {
    const l = await ledger();
    const root = await l.create("root");
    const other = await l.t.newProject("other");
    const theirs = await l.request(
      "POST",
      "/v1/accounts/create",
      { externalId: "theirs" },
      { key: other.key },
    );
    expect(theirs.status, theirs.text).toBe(200);
    const theirId = (theirs.body as { account: { id: string } }).account.id;

    for (const parentId of ["nope", theirId]) {
      const res = await l.post("/v1/accounts/create", { externalId: "m", parentId });
      refusal(res, 404, "ACCOUNT_NOT_FOUND");
      const moved = await l.post("/v1/accounts/update", { accountId: "root", parentId });
      refusal(moved, 404, "ACCOUNT_NOT_FOUND");
    }
    refusal(await l.get("/v1/accounts/get?accountId=m"), 404, "ACCOUNT_NOT_FOUND");
    expect(await l.account("root")).toMatchObject({ id: root.id, parentId: null });
  });

  it("refuses a fifth level, also after a move with its subtree, and a parent at or below the account (400)", async () => {
    const l = await ledger();
    const r = await l.create("r");
    const l2 = await l.create("l2", { parentId: "r" });
    const l3 = await l.create("l3", { parentId: "l2" });
    const l4 = await l.create("l4", { parentId: "l3" });
    expect(l4).toMatchObject({ parentId: l3.id, fundedBy: r.id });
    refusal(
      await l.post("/v1/accounts/create", { externalId: "l5", parentId: "l4" }),
      400,
      "VALIDATION_ERROR",
    );
    refusal(await l.get("/v1/accounts/get?accountId=l5"), 404, "ACCOUNT_NOT_FOUND");

    // x with a child: under l3 the child would be a fifth level; under l2 it is the fourth.
    const x = await l.create("x");
    const y = await l.create("y", { parentId: "x" });
    refusal(
      await l.post("/v1/accounts/update", { accountId: "x", parentId: "l3" }),
      400,
      "VALIDATION_ERROR",
    );
    expect((await l.account("x")).parentId).toBeNull();
    expect(await l.update("x", { parentId: l2.id })).toMatchObject({
      parentId: l2.id,
      funding: "own",
    });
    expect(await l.account(y.id)).toMatchObject({ parentId: x.id, fundedBy: x.id });

    // A parent that is the account itself or below it.
    const cycles: [string, string][] = [
      ["r", "r"],
      ["r", "l3"],
      ["l2", "l4"],
      ["l2", "y"],
      ["l3", l3.id],
    ];
    for (const [accountId, parentId] of cycles) {
      const res = await l.post("/v1/accounts/update", { accountId, parentId });
      refusal(res, 400, "VALIDATION_ERROR");
    }
    expect((await l.account("r")).parentId).toBeNull();
    expect((await l.account("l2")).parentId).toBe(r.id);
    expect((await l.account("l3")).parentId).toBe(l2.id);
  });

  it("refuses funding parent on a root, and parentId null without funding own (400)", async () => {
    const l = await ledger();
    const pool = await l.create("pool");
    refusal(
      await l.post("/v1/accounts/create", { externalId: "r2", funding: "parent" }),
      400,
      "VALIDATION_ERROR",
    );
    refusal(await l.get("/v1/accounts/get?accountId=r2"), 404, "ACCOUNT_NOT_FOUND");
    refusal(
      await l.post("/v1/accounts/update", { accountId: "pool", funding: "parent" }),
      400,
      "VALIDATION_ERROR",
    );
    refusal(
      await l.post("/v1/accounts/create", { externalId: "bad", parentId: "pool", funding: "x" }),
      400,
      "VALIDATION_ERROR",
    );
    const m = await l.create("m", { parentId: "pool" });
    refusal(
      await l.post("/v1/accounts/update", { accountId: "m", parentId: null }),
      400,
      "VALIDATION_ERROR",
    );
    expect(await l.account("m")).toMatchObject({ parentId: pool.id, funding: "parent" });
    const root = await l.update("m", { parentId: null, funding: "own" });
    expect(root).toMatchObject({ parentId: null, funding: "own", fundedBy: m.id });
    expect(await l.account("pool")).toMatchObject({ funding: "own", parentId: null });
  });

  it("refuses credits, a plan and a low-balance threshold to a member funded by its parent (409 FUNDED_BY_PARENT)", async () => {
    const l = await ledger();
    await l.create("pool", { lowBalanceThreshold: 1 });
    await l.add("pool", 10);
    await l.create("m", { parentId: "pool" });
    const plan = await l.posted<{ plan: { id: string } }>("/v1/plans/create", {
      name: "Pro",
      amount: 5,
      interval: "month",
    });
    const refused: [string, unknown][] = [
      ["/v1/accounts/credits/add", { accountId: "m", amount: 5 }],
      ["/v1/transactions/create", { accountId: "m", type: "credit", amount: 5 }],
      [
        "/v1/accounts/plans/assign",
        { accountId: "m", planId: plan.plan.id, startMode: "immediate" },
      ],
      ["/v1/accounts/update", { accountId: "m", lowBalanceThreshold: 3 }],
      ["/v1/accounts/create", { externalId: "m2", parentId: "pool", lowBalanceThreshold: 3 }],
    ];
    for (const [path, body] of refused) {
      refusal(await l.post(path, body), 409, "FUNDED_BY_PARENT");
    }
    refusal(await l.get("/v1/accounts/get?accountId=m2"), 404, "ACCOUNT_NOT_FOUND");
    expect(await l.account("m")).toMatchObject({ balance: 0, lowBalanceThreshold: null });
    expect(await l.balance("pool")).toMatchObject({ balance: 10, available: 10 });
    expect(await l.txns({ accountId: "m" })).toEqual([]);
    const plans = await l.read<{ plans: unknown[] }>("/v1/accounts/plans?accountId=m");
    expect(plans.plans).toEqual([]);
    // A member that funds itself takes credits as any account.
    await l.create("own", { parentId: "pool", funding: "own", lowBalanceThreshold: 2 });
    expect((await l.add("own", 5)).balance).toBe(5);
  });

  it("refuses a move while the account or one below holds a pending, unexpired reservation (409 ACCOUNT_BUSY)", async () => {
    const l = await ledger();
    const p = await l.create("p");
    await l.add("p", 100);
    const q = await l.create("q");
    await l.add("q", 100);
    const mid = await l.create("mid", { parentId: "p" });
    await l.create("leaf", { parentId: "mid" });
    const hold = await l.reserve("leaf", 5, { ttlSeconds: 60 });
    const moves: Record<string, unknown>[] = [
      { accountId: "mid", parentId: "q" },
      { accountId: "leaf", parentId: "q" },
      { accountId: "leaf", parentId: null, funding: "own" },
      { accountId: "mid", parentId: null, funding: "own" },
    ];
    for (const body of moves) {
      const { details } = refusal(await l.post("/v1/accounts/update", body), 409, "ACCOUNT_BUSY");
      expect(details.reason).toBe("reservation");
    }
    expect(await l.account(mid.id)).toMatchObject({ parentId: p.id, fundedBy: p.id });
    expect(await l.balance("leaf")).toMatchObject({ reserved: 5, fundedBy: p.id });
    // Not a move: other fields change while a hold is pending.
    expect((await l.update("mid", { name: "still here" })).name).toBe("still here");

    await l.cancel(hold.id);
    expect(await l.update("mid", { parentId: "q" })).toMatchObject({
      parentId: q.id,
      fundedBy: q.id,
    });
    expect(await l.account("leaf")).toMatchObject({ fundedBy: q.id });

    // A hold past its expiresAt no longer counts, whether or not the sweeper has run.
    await l.reserve("leaf", 5, { ttlSeconds: 60 });
    refusal(
      await l.post("/v1/accounts/update", { accountId: "mid", parentId: "p" }),
      409,
      "ACCOUNT_BUSY",
    );
    l.t.advance(61_000);
    expect(await l.update("mid", { parentId: "p" })).toMatchObject({
      parentId: p.id,
      fundedBy: p.id,
    });
  });

  it("refuses switching to funding parent with a balance, a hold below or an active plan (409 ACCOUNT_BUSY)", async () => {
    const l = await ledger();
    const pool = await l.create("pool");
    await l.add("pool", 10);
    const c = await l.create("c", { parentId: "pool", funding: "own", lowBalanceThreshold: 2 });
    expect(c).toMatchObject({ funding: "own", fundedBy: c.id, lowBalanceThreshold: 2 });
    await l.add("c", 5);
    const switchToParent = () =>
      l.post("/v1/accounts/update", { accountId: "c", funding: "parent" });
    let busy = refusal(await switchToParent(), 409, "ACCOUNT_BUSY");
    expect(busy.details.reason).toBe("balance");

    // Something pending below it: d funds itself, under c.
    await l.create("d", { parentId: "c", funding: "own" });
    await l.add("d", 3);
    const hold = await l.reserve("d", 1);
    await l.deduct("c", 5);
    busy = refusal(await switchToParent(), 409, "ACCOUNT_BUSY");
    expect(busy.details.reason).toBe("reservation");
    await l.cancel(hold.id);

    // An active plan assignment.
    const plan = await l.posted<{ plan: { id: string } }>("/v1/plans/create", {
      name: "Later",
      amount: 5,
      interval: "month",
    });
    const assigned = await l.posted<{ accountPlan: { id: string } }>("/v1/accounts/plans/assign", {
      accountId: "c",
      planId: plan.plan.id,
      startMode: "next_interval",
    });
    busy = refusal(await switchToParent(), 409, "ACCOUNT_BUSY");
    expect(busy.details.reason).toBe("plan");
    await l.posted("/v1/accounts/plans/cancel", { accountPlanId: assigned.accountPlan.id });
    expect(await l.account("c")).toMatchObject({
      funding: "own",
      balance: 0,
      lowBalanceThreshold: 2,
    });

    const switched = await l.update("c", { funding: "parent" });
    expect(switched).toMatchObject({
      funding: "parent",
      fundedBy: pool.id,
      balance: 0,
      lowBalanceThreshold: null,
    });
    expect(await l.balance("c")).toMatchObject({ balance: 10, available: 10, fundedBy: pool.id });
    // d still funds itself.
    expect(await l.balance("d")).toMatchObject({ balance: 3, fundedBy: (await l.account("d")).id });
    // And back: funding own, with nothing of its own.
    expect(await l.update("c", { funding: "own" })).toMatchObject({
      funding: "own",
      fundedBy: c.id,
    });
    expect(await l.balance("c")).toMatchObject({ balance: 0, fundedBy: c.id });
  });
});

describe("a member spends from its pool", () => {
  it("counts a member's hold at every level and releases it on cancel; a confirm is booked on the pool on behalf of the member", async () => {
    const l = await ledger();
    const pool = await l.create("pool", { spendLimits: dayCap(50) });
    await l.add("pool", 100);
    const m = await l.create("m1", { parentId: "pool", spendLimits: dayCap(20) });

    const hold = await l.reserve("m1", 7);
    expect(hold).toMatchObject({ accountId: m.id, amount: 7, status: "pending" });
    const member = await l.limits("m1");
    expect(member).toMatchObject({
      accountId: m.id,
      externalId: "m1",
      available: 93,
      spendable: 13,
    });
    expect(member.limits).toEqual([
      expect.objectContaining({ period: "day", amount: 20, spent: 0, held: 7, remaining: 13 }),
    ]);
    expect(member.ancestors).toEqual([
      {
        accountId: pool.id,
        externalId: "pool",
        limits: [
          expect.objectContaining({
            period: "day",
            amount: 50,
            spent: 0,
            held: 7,
            remaining: 43,
            windowStart: "2026-03-02T00:00:00.000Z",
            resetsAt: MIDNIGHT,
          }),
        ],
      },
    ]);
    const ofPool = await l.limits("pool");
    expect(ofPool).toMatchObject({ available: 93, spendable: 43, ancestors: [] });
    expect(ofPool.limits[0]).toMatchObject({ held: 7, remaining: 43 });
    const check = await l.check("m1", 14);
    expect(check).toMatchObject({
      allowed: false,
      code: "SPEND_LIMIT_EXCEEDED",
      available: 93,
      spendable: 13,
    });
    expect(check.ancestors.map((a) => [a.accountId, a.limits[0]?.held])).toEqual([[pool.id, 7]]);
    expect(await l.balance("m1")).toMatchObject({
      balance: 100,
      reserved: 7,
      available: 93,
      fundedBy: pool.id,
    });
    expect(await l.balance("pool")).toMatchObject({ balance: 100, reserved: 7, available: 93 });
    const listed = await l.read<{ reservations: { id: string; accountId: string }[] }>(
      "/v1/reservations?accountId=m1&activeOnly=true",
    );
    expect(listed.reservations.map((r) => [r.id, r.accountId])).toEqual([[hold.id, m.id]]);

    const cancelled = await l.cancel(hold.id);
    expect(cancelled).toMatchObject({ amountReleased: 7, accountId: m.id });
    const released = await l.limits("m1");
    expect(released).toMatchObject({ available: 100, spendable: 20 });
    expect(released.limits[0]).toMatchObject({ held: 0, remaining: 20 });
    expect(released.ancestors[0]?.limits[0]).toMatchObject({ held: 0, remaining: 50 });
    expect((await l.limits("pool")).limits[0]).toMatchObject({ held: 0 });
    expect(await l.balance("m1")).toMatchObject({ balance: 100, reserved: 0, available: 100 });

    // A confirm: one debit on the pool's ledger, on behalf of the member.
    const second = await l.reserve("m1", 4);
    const confirmed = await l.confirm(second.id, 3);
    expect(confirmed.balance).toBe(97);
    const poolRows = await l.txns({ accountId: "pool" });
    expect(poolRows.at(-1)).toMatchObject({
      id: confirmed.transactionId,
      accountId: pool.id,
      type: "debit",
      amount: 3,
      balanceAfter: 97,
      onBehalfOf: m.id,
      transferId: null,
    });
    expect(poolRows[0]).toMatchObject({ type: "credit", onBehalfOf: null, transferId: null });
    // A manual debit of the member, the same way.
    const manual = await l.posted<{
      transaction: { id: string; accountId: string; balanceAfter: number };
    }>("/v1/transactions/create", { accountId: "m1", type: "debit", amount: 1 });
    expect(manual.transaction).toMatchObject({ accountId: pool.id, balanceAfter: 96 });

    expect(await l.txns({ accountId: "m1" })).toEqual([]);
    expect(await l.txns({ accountId: m.id })).toEqual([]);
    for (const onBehalfOf of ["m1", m.id]) {
      const rows = await l.txns({ onBehalfOf });
      expect(rows.map((x) => [x.id, x.accountId, x.onBehalfOf])).toEqual([
        [confirmed.transactionId, pool.id, m.id],
        [manual.transaction.id, pool.id, m.id],
      ]);
    }
    expect(await l.txns({ onBehalfOf: "pool" })).toEqual([]);
    const after = await l.limits("m1");
    expect(after.limits[0]).toMatchObject({ spent: 4, held: 0, remaining: 16 });
    expect(after.ancestors[0]?.limits[0]).toMatchObject({ spent: 4, held: 0, remaining: 46 });
    expect(after).toMatchObject({ available: 96, spendable: 16 });

    // The ledger export: its last columns, and the onBehalfOf filter.
    const csv = await l.get("/v1/transactions/export?accountId=pool");
    expect(csv.status, csv.text).toBe(200);
    expect(csv.text.split("\r\n")[0]).toMatch(/,reversalOf,amountReversed,onBehalfOf,transferId$/);
    const ndjson = await l.get("/v1/transactions/export?onBehalfOf=m1&format=ndjson");
    expect(ndjson.status, ndjson.text).toBe(200);
    const lines = ndjson.text
      .split("\n")
      .filter((x) => x !== "")
      .map((x) => JSON.parse(x) as { id: string; onBehalfOf: string });
    expect(lines.map((x) => [x.id, x.onBehalfOf])).toEqual([
      [confirmed.transactionId, m.id],
      [manual.transaction.id, m.id],
    ]);
  });

  it("names the pool (the nearest account above funding itself) in INSUFFICIENT_CREDITS", async () => {
    const l = await ledger();
    const root = await l.create("root");
    await l.add("root", 10);
    await l.create("mid", { parentId: "root" });
    await l.create("leaf", { parentId: "mid" });
    let details = refusal(await l.tryDeduct("leaf", 11), 402, "INSUFFICIENT_CREDITS").details;
    expect(details).toMatchObject({
      available: 10,
      requested: 11,
      accountId: root.id,
      externalId: "root",
    });
    details = refusal(await l.tryReserve("mid", 10.5), 402, "INSUFFICIENT_CREDITS").details;
    expect(details).toMatchObject({ accountId: root.id, externalId: "root", requested: 10.5 });
    await l.reserve("leaf", 4);
    details = refusal(await l.tryDeduct("leaf", 7), 402, "INSUFFICIENT_CREDITS").details;
    expect(details).toMatchObject({
      available: 6,
      requested: 7,
      accountId: root.id,
      externalId: "root",
    });
    const manual = await l.post("/v1/transactions/create", {
      accountId: "leaf",
      type: "debit",
      amount: 7,
    });
    expect(refusal(manual, 402, "INSUFFICIENT_CREDITS").details).toMatchObject({
      accountId: root.id,
      externalId: "root",
    });

    // Under a member that funds itself, that member is the pool.
    await l.create("root2");
    const ownMid = await l.create("own-mid", { parentId: "root2", funding: "own" });
    await l.add("own-mid", 3);
    await l.create("leaf2", { parentId: "own-mid" });
    details = refusal(await l.tryDeduct("leaf2", 4), 402, "INSUFFICIENT_CREDITS").details;
    expect(details).toMatchObject({
      available: 3,
      requested: 4,
      accountId: ownMid.id,
      externalId: "own-mid",
    });
    expect(await l.balance("leaf")).toMatchObject({ balance: 10, reserved: 4, available: 6 });
    expect(await l.balance("leaf2")).toMatchObject({
      balance: 3,
      available: 3,
      fundedBy: ownMid.id,
    });
  });
});

describe("limits at every level", () => {
  it("a middle level's cap refuses a leaf's deduction: 402 SPEND_LIMIT_EXCEEDED naming the middle level", async () => {
    const l = await ledger();
    const root = await l.create("root");
    await l.add("root", 100);
    const mid = await l.create("mid", { parentId: "root", spendLimits: dayCap(5) });
    const leaf = await l.create("leaf", { parentId: mid.id });
    const sibling = await l.create("leaf2", { parentId: "mid" });
    expect(mid).toMatchObject({ parentId: root.id, funding: "parent", fundedBy: root.id });
    expect(leaf).toMatchObject({ parentId: mid.id, funding: "parent", fundedBy: root.id });

    expect((await l.deduct("leaf", 4)).balance).toBe(96);
    expect((await l.deduct("leaf2", 1)).balance).toBe(95);
    const res = await l.tryDeduct("leaf", 1);
    const { details } = refusal(res, 402, "SPEND_LIMIT_EXCEEDED");
    expect(details).toMatchObject({
      accountId: mid.id,
      externalId: "mid",
      period: "day",
      limit: 5,
      timeZone: "UTC",
      spent: 5,
      held: 0,
      requested: 1,
      remaining: 0,
      resetsAt: MIDNIGHT,
    });
    expect(res.headers.get("Retry-After")).toBe(TO_MIDNIGHT);
    // The sibling's reservation and the middle level's own deduction hit the same cap.
    for (const r of [await l.tryReserve("leaf2", 1), await l.tryDeduct("mid", 0.5)]) {
      expect(refusal(r, 402, "SPEND_LIMIT_EXCEEDED").details).toMatchObject({
        accountId: mid.id,
        externalId: "mid",
      });
    }
    // The root, above the cap, is not limited by it.
    expect((await l.deduct("root", 1)).balance).toBe(94);

    const view = await l.limits("leaf");
    expect(view).toMatchObject({
      accountId: leaf.id,
      externalId: "leaf",
      available: 94,
      spendable: 0,
      limits: [],
    });
    expect(view.ancestors).toEqual([
      {
        accountId: mid.id,
        externalId: "mid",
        limits: [
          expect.objectContaining({ period: "day", amount: 5, spent: 5, held: 0, remaining: 0 }),
        ],
      },
      { accountId: root.id, externalId: "root", limits: [] },
    ]);
    const check = await l.check("leaf", 1);
    expect(check).toMatchObject({ allowed: false, code: "SPEND_LIMIT_EXCEEDED", spendable: 0 });
    expect(check.ancestors.map((a) => a.accountId)).toEqual([mid.id, root.id]);
    expect((await l.limits("root")).ancestors).toEqual([]);

    // Every row on the root's ledger, each naming its spender only.
    const rows = await l.txns({ accountId: "root" });
    expect(rows.map((x) => [x.type, x.amount, x.balanceAfter, x.onBehalfOf])).toEqual([
      ["credit", 100, 100, null],
      ["debit", 4, 96, leaf.id],
      ["debit", 1, 95, sibling.id],
      ["debit", 1, 94, null],
    ]);
    expect((await l.txns({ onBehalfOf: "leaf" })).map((x) => x.amount)).toEqual([4]);
    // Not of those below it.
    expect(await l.txns({ onBehalfOf: "mid" })).toEqual([]);
    expect(await l.txns({ accountId: "mid" })).toEqual([]);
    expect(await l.txns({ accountId: "leaf" })).toEqual([]);
  });

  it("names the level whose refusing window ends last, among equals the one nearest the spender", async () => {
    const l = await ledger();
    await l.create("root");
    await l.add("root", 100);
    // The leaf's hour (ends 11:00) and its parent's day both refuse: the day ends last.
    const midA = await l.create("mid-a", { parentId: "root", spendLimits: dayCap(5) });
    await l.create("hourly", {
      parentId: "mid-a",
      spendLimits: [{ period: "hour", amount: 5 }],
    });
    await l.deduct("hourly", 5);
    let res = await l.tryDeduct("hourly", 1);
    expect(refusal(res, 402, "SPEND_LIMIT_EXCEEDED").details).toMatchObject({
      accountId: midA.id,
      externalId: "mid-a",
      period: "day",
      resetsAt: MIDNIGHT,
    });
    expect(res.headers.get("Retry-After")).toBe(TO_MIDNIGHT);
    // Two days ending together: the leaf's own, nearest the spender.
    await l.create("mid-b", { parentId: "root", spendLimits: dayCap(5) });
    const daily = await l.create("daily", { parentId: "mid-b", spendLimits: dayCap(5) });
    await l.deduct("daily", 5);
    res = await l.tryDeduct("daily", 1);
    expect(refusal(res, 402, "SPEND_LIMIT_EXCEEDED").details).toMatchObject({
      accountId: daily.id,
      externalId: "daily",
      period: "day",
      spent: 5,
      limit: 5,
    });
    // A root's limit caps every member below it, the root being their pool too.
    const capped = await l.create("capped", { spendLimits: dayCap(3) });
    await l.add("capped", 100);
    await l.create("under", { parentId: "capped" });
    await l.deduct("under", 3);
    res = await l.tryDeduct("under", 0.000001);
    expect(refusal(res, 402, "SPEND_LIMIT_EXCEEDED").details).toMatchObject({
      accountId: capped.id,
      externalId: "capped",
      spent: 3,
      requested: 0.000001,
    });
    expect(await l.balance("root")).toMatchObject({ balance: 90 });
    expect(await l.balance("capped")).toMatchObject({ balance: 97 });
  });
});

describe("200 simultaneous reservations of 1 over two members of one pool", () => {
  /**
   * A pool of `credits` with members a and b, each capped at 6 a day, and 200 simultaneous
   * reservations of 1 alternating between them. @returns the successes of each member
   */
  const race = async (credits: number) => {
    const l = await ledger();
    const pool = await l.create("pool");
    await l.add("pool", credits);
    const a = await l.create("a", { parentId: "pool", spendLimits: dayCap(6) });
    const b = await l.create("b", { parentId: "pool", spendLimits: dayCap(6) });
    for (const m of [a, b]) expect(m).toMatchObject({ funding: "parent", fundedBy: pool.id });
    const members = [a, b];
    const replies = await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        const member = members[i % 2] ?? a;
        return { reply: await l.tryReserve(member.externalId, 1), member };
      }),
    );
    const wins = { a: 0, b: 0 };
    for (const { reply, member } of replies) {
      if (reply.status === 200) {
        const { reservation } = okAnswer<{ reservation: { accountId: string; amount: number } }>(
          l.t,
          reply,
          "POST",
          "/v1/reservations/create",
        );
        expect(reservation).toMatchObject({ accountId: member.id, amount: 1 });
        wins[member.externalId as "a" | "b"]++;
        continue;
      }
      const code = codeOf(reply);
      expect(["INSUFFICIENT_CREDITS", "SPEND_LIMIT_EXCEEDED"]).toContain(code);
      const { details } = refusal(reply, 402, code as PoolErrorCode);
      // The pool when credits fall short, else the member whose own cap refused.
      expect(details.accountId).toBe(code === "INSUFFICIENT_CREDITS" ? pool.id : member.id);
    }
    expect(countStatuses(replies.map((r) => r.reply))[200]).toBe(wins.a + wins.b);
    for (const m of members) {
      const view = await l.limits(m.externalId);
      expect(view.limits[0]).toMatchObject({ held: wins[m.externalId as "a" | "b"], spent: 0 });
    }
    return { l, pool, a, b, wins, replies };
  };

  it("gives exactly 10 of a pool of 10, neither member above its cap of 6", async () => {
    const { l, pool, wins, replies } = await race(10);
    expect(countStatuses(replies.map((r) => r.reply))).toEqual({ 200: 10, 402: 190 });
    expect(wins.a + wins.b).toBe(10);
    expect(wins.a).toBeLessThanOrEqual(6);
    expect(wins.b).toBeLessThanOrEqual(6);
    expect(await l.balance("pool")).toMatchObject({ balance: 10, reserved: 10, available: 0 });
    expect(await l.balance("a")).toMatchObject({ reserved: 10, available: 0, fundedBy: pool.id });
    const after = await l.tryReserve("a", 1);
    expect(refusal(after, 402, "INSUFFICIENT_CREDITS").details).toMatchObject({
      accountId: pool.id,
      available: 0,
    });
  });

  it("gives exactly 6 to each member of a pool of 20: the caps hold under the race", async () => {
    const { l, a, wins, replies } = await race(20);
    expect(countStatuses(replies.map((r) => r.reply))).toEqual({ 200: 12, 402: 188 });
    expect(wins).toEqual({ a: 6, b: 6 });
    expect(await l.balance("pool")).toMatchObject({ balance: 20, reserved: 12, available: 8 });
    const after = await l.tryDeduct("a", 1);
    expect(refusal(after, 402, "SPEND_LIMIT_EXCEEDED").details).toMatchObject({
      accountId: a.id,
      held: 6,
      remaining: 0,
    });
  });
});

describe("the total period", () => {
  it("caps a member's lifetime spend: no window, no reset, no Retry-After", async () => {
    const l = await ledger();
    await l.create("pool");
    await l.add("pool", 100);
    const m = await l.create("m", {
      parentId: "pool",
      spendLimits: [{ period: "total", amount: 5 }],
    });
    expect(m.spendLimits).toEqual([
      expect.objectContaining({ period: "total", amount: 5, soft: false }),
    ]);
    let view = await l.limits("m");
    expect(view.limits).toEqual([
      expect.objectContaining({
        period: "total",
        amount: 5,
        windowStart: null,
        resetsAt: null,
        spent: 0,
        held: 0,
        remaining: 5,
      }),
    ]);
    expect(view.spendable).toBe(5);
    await l.deduct("m", 3);
    l.t.advance(40 * DAY);
    view = await l.limits("m");
    expect(view.limits[0]).toMatchObject({
      spent: 3,
      remaining: 2,
      windowStart: null,
      resetsAt: null,
    });
    await l.deduct("m", 2);
    const res = await l.tryDeduct("m", 0.000001);
    expect(refusal(res, 402, "SPEND_LIMIT_EXCEEDED").details).toMatchObject({
      accountId: m.id,
      externalId: "m",
      period: "total",
      limit: 5,
      spent: 5,
      held: 0,
      requested: 0.000001,
      remaining: 0,
      resetsAt: null,
    });
    expect(res.headers.get("Retry-After")).toBeNull();
    refusal(await l.tryReserve("m", 1), 402, "SPEND_LIMIT_EXCEEDED");
    expect(await l.balance("m")).toMatchObject({ balance: 95 });
  });

  it("ranks a total as the window that ends last, above a nearer level's day", async () => {
    const l = await ledger();
    await l.create("pool");
    await l.add("pool", 100);
    const mid = await l.create("mid", {
      parentId: "pool",
      spendLimits: [{ period: "total", amount: 5 }],
    });
    await l.create("leaf", { parentId: "mid", spendLimits: dayCap(5) });
    await l.deduct("leaf", 5);
    const res = await l.tryDeduct("leaf", 1);
    expect(refusal(res, 402, "SPEND_LIMIT_EXCEEDED").details).toMatchObject({
      accountId: mid.id,
      period: "total",
      resetsAt: null,
    });
    expect(res.headers.get("Retry-After")).toBeNull();
    // The next day the leaf's day is free again, the total is not.
    l.t.advance(DAY);
    const next = await l.tryDeduct("leaf", 1);
    expect(refusal(next, 402, "SPEND_LIMIT_EXCEEDED").details).toMatchObject({
      accountId: mid.id,
      period: "total",
    });
    const view = await l.limits("leaf");
    expect(view.limits[0]).toMatchObject({ period: "day", spent: 0, remaining: 5 });
    expect(view.ancestors[0]?.limits[0]).toMatchObject({ period: "total", spent: 5, remaining: 0 });
    expect(view.spendable).toBe(0);
  });
});

describe("a member's debit reversed", () => {
  it("is booked on the pool on behalf of the member and frees the day's headroom at every level", async () => {
    const l = await ledger();
    await l.subscribe(["transaction.reversed"]);
    const pool = await l.create("pool", { spendLimits: dayCap(8) });
    const credit = await l.add("pool", 100);
    const m = await l.create("m", { parentId: "pool", spendLimits: dayCap(5) });
    const debit = await l.deduct("m", 5);
    expect(debit.balance).toBe(95);
    expect(refusal(await l.tryDeduct("m", 1), 402, "SPEND_LIMIT_EXCEEDED").details).toMatchObject({
      accountId: m.id,
    });

    const r = await l.posted<ReverseAnswer>("/v1/transactions/reverse", {
      transactionId: debit.transactionId,
      amount: 2,
    });
    expect(r).toMatchObject({
      reversedTransactionId: debit.transactionId,
      amountReversed: 2,
      reversible: 3,
      balance: 97,
      available: 97,
    });
    expect(r.transaction).toMatchObject({
      accountId: pool.id,
      type: "credit",
      amount: 2,
      balanceAfter: 97,
      onBehalfOf: m.id,
      reversalOf: debit.transactionId,
      transferId: null,
    });
    const view = await l.limits("m");
    expect(view.limits[0]).toMatchObject({ spent: 3, remaining: 2 });
    expect(view.ancestors[0]?.limits[0]).toMatchObject({ spent: 3, remaining: 5 });
    expect((await l.limits("pool")).limits[0]).toMatchObject({ spent: 3, remaining: 5 });
    // The credits went back to the pool's grant.
    const grant = (await l.grants("pool")).find((g) => g.transactionId === credit.transactionId);
    expect(grant).toMatchObject({ remaining: 97 });

    expect((await l.deduct("m", 2)).balance).toBe(95);
    refusal(await l.tryDeduct("m", 0.000001), 402, "SPEND_LIMIT_EXCEEDED");
    expect(await l.txns({ accountId: "m" })).toEqual([]);
    const rows = await l.txns({ onBehalfOf: "m" });
    expect(rows.map((x) => [x.type, x.amount, x.accountId, x.reversalOf])).toEqual([
      ["debit", 5, pool.id, null],
      ["credit", 2, pool.id, debit.transactionId],
      ["debit", 2, pool.id, null],
    ]);
    expect(await l.events("transaction.reversed")).toEqual([
      expect.objectContaining({
        accountId: pool.id,
        externalId: "pool",
        onBehalfOf: m.id,
        transactionId: r.transaction.id,
        reversedTransactionId: debit.transactionId,
        type: "credit",
        amount: 2,
        amountReversed: 2,
        balance: 97,
      }),
    ]);
  });
});

describe("members and transfers in a batch", () => {
  it("books each member's deduction on its pool and a transfer, as the routes alone would", async () => {
    const l = await ledger();
    const pool = await l.create("pool", { spendLimits: dayCap(7) });
    await l.add("pool", 20);
    const a = await l.create("a", { parentId: "pool", spendLimits: dayCap(3) });
    await l.create("b", { parentId: "pool" });
    await l.create("other");
    const deduct = (accountId: string, amount: number) => ({
      path: "/v1/accounts/credits/deduct",
      body: { accountId, amount },
    });
    const batch = await l.posted<{
      committed: number;
      results: { status: number; body: Record<string, unknown> }[];
    }>("/v1/batch", {
      operations: [
        deduct("a", 2),
        deduct("b", 4),
        deduct("a", 2),
        deduct("b", 1),
        {
          path: "/v1/accounts/transfer",
          body: { fromAccountId: "pool", toAccountId: "other", amount: 5 },
        },
        deduct("b", 1),
      ],
    });
    // a's cap of 3 refuses its second deduction; the pool's cap of 7 refuses b's last.
    expect(batch.results.map((r) => r.status)).toEqual([200, 200, 402, 200, 200, 402]);
    expect(batch.results[2]?.body).toMatchObject({
      error: { code: "SPEND_LIMIT_EXCEEDED", details: { accountId: a.id } },
    });
    expect(batch.results[5]?.body).toMatchObject({
      error: { code: "SPEND_LIMIT_EXCEEDED", details: { accountId: pool.id } },
    });
    expect(batch.committed).toBe(4);
    expect((await l.balance("pool")).balance).toBe(8);
    expect((await l.balance("other")).balance).toBe(5);
    const rows = await l.txns({ accountId: "pool" });
    expect(rows.map((x) => [x.type, x.amount, x.onBehalfOf])).toEqual([
      ["credit", 20, null],
      ["debit", 2, a.id],
      ["debit", 4, expect.stringMatching(/^acc_/)],
      ["debit", 1, expect.stringMatching(/^acc_/)],
      ["debit", 5, null],
    ]);
  });
});

describe("a reversal after a switch to funding by the parent", () => {
  it("is refused with 409 FUNDED_BY_PARENT, changing nothing, and goes through once switched back", async () => {
    const l = await ledger();
    const pool = await l.create("pool");
    await l.add("pool", 10);
    const team = await l.create("team", { parentId: "pool", funding: "own" });
    await l.add("team", 4);
    const debit = await l.deduct("team", 4);
    expect(debit.balance).toBe(0);
    await l.update("team", { funding: "parent" });
    const refused = await l.post("/v1/transactions/reverse", {
      transactionId: debit.transactionId,
    });
    expect(refusal(refused, 409, "FUNDED_BY_PARENT").details).toMatchObject({
      accountId: team.id,
      externalId: "team",
    });
    expect(await l.txns({ reversalOf: debit.transactionId })).toEqual([]);
    expect((await l.account("team")).balance).toBe(0);
    expect((await l.balance("pool")).balance).toBe(10);
    // Switched back to funding itself, the reversal gives the credits back to its grant.
    await l.update("team", { funding: "own" });
    const r = await l.posted<ReverseAnswer>("/v1/transactions/reverse", {
      transactionId: debit.transactionId,
    });
    expect(r).toMatchObject({ amountReversed: 4, reversible: 0, balance: 4 });
    expect(r.transaction).toMatchObject({ accountId: team.id, onBehalfOf: null });
    expect(pool.id).not.toBe(team.id);
  });
});

describe("transfers", () => {
  const TRANSFER = "/v1/accounts/transfer";

  it("20 simultaneous transfers of 1 from an account of 10: exactly 10 succeed, 10 are 402", async () => {
    const l = await ledger();
    const from = await l.create("from");
    await l.add("from", 10);
    const to = await l.create("to");
    const replies = await Promise.all(
      Array.from({ length: 20 }, () =>
        l.transfer({ fromAccountId: "from", toAccountId: to.id, amount: 1 }),
      ),
    );
    expect(countStatuses(replies)).toEqual({ 200: 10, 402: 10 });
    for (const r of replies.filter((x) => x.status === 402)) {
      refusal(r, 402, "INSUFFICIENT_CREDITS");
    }
    const done = replies
      .filter((r) => r.status === 200)
      .map((r) => okAnswer<TransferAnswer>(l.t, r, "POST", TRANSFER));
    const sorted = (xs: number[]) => [...xs].sort((x, y) => x - y);
    expect(sorted(done.map((d) => d.fromBalance))).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(sorted(done.map((d) => d.toBalance))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(new Set(done.map((d) => d.transferId)).size).toBe(10);
    for (const d of done) {
      expect(d.success).toBe(true);
      expect(d.debit).toMatchObject({
        accountId: from.id,
        type: "debit",
        amount: 1,
        transferId: d.transferId,
        onBehalfOf: null,
      });
      expect(d.credit).toMatchObject({
        accountId: to.id,
        type: "credit",
        amount: 1,
        transferId: d.transferId,
        onBehalfOf: null,
      });
    }
    expect(await l.balance("from")).toMatchObject({ balance: 0, available: 0 });
    expect(await l.balance("to")).toMatchObject({ balance: 10, available: 10 });
    const debits = (await l.txns({ accountId: "from" })).filter((x) => x.type === "debit");
    expect(debits).toHaveLength(10);
    expect(debits.every((x) => x.transferId !== null)).toBe(true);
  });

  it("answers {success, transferId, debit, credit, fromBalance, toBalance}; a transfer is not spending nor reversible", async () => {
    const l = await ledger();
    const a = await l.create("a", { spendLimits: dayCap(1) });
    await l.add("a", 20);
    const pool = await l.create("pool");
    // A member that funds itself may send and receive.
    const c = await l.create("c", { parentId: "pool", funding: "own" });
    expect(c).toMatchObject({ parentId: pool.id, fundedBy: c.id });
    const r = await l.transferred({ fromAccountId: "a", toAccountId: "c", amount: 7 });
    expect(Object.keys(r).sort()).toEqual(
      expect.arrayContaining([
        "success",
        "transferId",
        "debit",
        "credit",
        "fromBalance",
        "toBalance",
      ]),
    );
    expect(r).toMatchObject({ success: true, fromBalance: 13, toBalance: 7 });
    expect(typeof r.transferId).toBe("string");
    expect(r.debit).toMatchObject({
      accountId: a.id,
      type: "debit",
      amount: 7,
      balanceAfter: 13,
      transferId: r.transferId,
      onBehalfOf: null,
      reversalOf: null,
    });
    expect(r.credit).toMatchObject({
      accountId: c.id,
      type: "credit",
      amount: 7,
      balanceAfter: 7,
      transferId: r.transferId,
      onBehalfOf: null,
      reversalOf: null,
    });
    expect(r.debit.id).not.toBe(r.credit.id);
    // Not spending: a's day limit of 1 neither refused it nor counts it.
    expect((await l.limits("a")).limits[0]).toMatchObject({ spent: 0, remaining: 1 });
    // Both halves in their ledgers.
    expect((await l.txns({ accountId: "a" })).at(-1)).toMatchObject({
      id: r.debit.id,
      transferId: r.transferId,
    });
    expect(await l.txns({ accountId: "c" })).toEqual([
      expect.objectContaining({ id: r.credit.id, transferId: r.transferId, amount: 7 }),
    ]);
    // Not reversible, either half.
    for (const transactionId of [r.debit.id, r.credit.id]) {
      const res = await l.post("/v1/transactions/reverse", { transactionId });
      refusal(res, 409, "NOT_REVERSIBLE");
    }
    // It needs amount ≤ available at the source: holds stay covered.
    await l.reserve("c", 5);
    const short = await l.transfer({ fromAccountId: "c", toAccountId: "a", amount: 3 });
    expect(refusal(short, 402, "INSUFFICIENT_CREDITS").details).toMatchObject({
      available: 2,
      requested: 3,
    });
    const back = await l.transferred({ fromAccountId: c.id, toAccountId: "a", amount: 2 });
    expect(back).toMatchObject({ fromBalance: 5, toBalance: 15 });
    expect(await l.balance("c")).toMatchObject({ balance: 5, reserved: 5, available: 0 });
    expect(await l.balance("a")).toMatchObject({ balance: 15, available: 15 });
  });

  it("gives the credit the earliest expiry of the grants the debit drew from, unless expiresAt is given", async () => {
    const l = await ledger();
    await l.create("a");
    const soon = l.isoIn(2 * DAY);
    const later = l.isoIn(5 * DAY);
    const g1 = await l.add("a", 5, { priority: 10, expiresAt: soon });
    const g2 = await l.add("a", 5, { priority: 20, expiresAt: later });
    const g3 = await l.add("a", 10, { priority: 30 });
    await l.create("b");
    const grantOf = async (transactionId: string) =>
      (await l.grants("b")).find((g) => g.transactionId === transactionId);

    // 7 draws g1 (5) and g2 (2): the earliest of the two.
    const first = await l.transferred({ fromAccountId: "a", toAccountId: "b", amount: 7 });
    expect(await grantOf(first.credit.id)).toMatchObject({
      amount: 7,
      remaining: 7,
      priority: 50,
      expiresAt: iso(soon),
      status: "active",
    });
    // 8 draws g2 (3) and g3 (5): g2's expiry, not g1's, which it did not draw.
    const second = await l.transferred({ fromAccountId: "a", toAccountId: "b", amount: 8 });
    expect(await grantOf(second.credit.id)).toMatchObject({ amount: 8, expiresAt: iso(later) });
    // 2 from g3 alone, which never expires; the priority given is kept.
    const third = await l.transferred({
      fromAccountId: "a",
      toAccountId: "b",
      amount: 2,
      priority: 5,
    });
    expect(await grantOf(third.credit.id)).toMatchObject({
      amount: 2,
      priority: 5,
      expiresAt: null,
    });
    // An expiresAt given is the grant's.
    const given = l.isoIn(3 * DAY);
    const fourth = await l.transferred({
      fromAccountId: "a",
      toAccountId: "b",
      amount: 1,
      expiresAt: given,
    });
    expect(await grantOf(fourth.credit.id)).toMatchObject({ amount: 1, expiresAt: iso(given) });

    const ofA = new Map((await l.grants("a")).map((g) => [g.id, g.remaining]));
    expect([ofA.get(g1.grantId), ofA.get(g2.grantId), ofA.get(g3.grantId)]).toEqual([0, 0, 2]);
    expect(await l.balance("a")).toMatchObject({ balance: 2 });
    expect(await l.balance("b")).toMatchObject({ balance: 18 });
    // The soonest credits expire at b as they would have at a.
    l.t.advance(2 * DAY + 1);
    expect((await l.deduct("b", 1)).balance).toBe(10);
    expect(await grantOf(first.credit.id)).toMatchObject({ remaining: 0, status: "expired" });
  });

  it("refuses a transfer to itself (400), to or from a member funded by its parent (409 FUNDED_BY_PARENT), and bad input", async () => {
    const l = await ledger();
    const pool = await l.create("pool");
    await l.add("pool", 10);
    await l.create("m", { parentId: "pool" });
    await l.create("o");
    const cases: [Record<string, unknown>, number, PoolErrorCode][] = [
      [{ fromAccountId: "pool", toAccountId: "pool", amount: 1 }, 400, "VALIDATION_ERROR"],
      [{ fromAccountId: pool.id, toAccountId: "pool", amount: 1 }, 400, "VALIDATION_ERROR"],
      [{ fromAccountId: "pool", toAccountId: "m", amount: 1 }, 409, "FUNDED_BY_PARENT"],
      [{ fromAccountId: "m", toAccountId: "o", amount: 1 }, 409, "FUNDED_BY_PARENT"],
      [{ fromAccountId: "pool", toAccountId: "nope", amount: 1 }, 404, "ACCOUNT_NOT_FOUND"],
      [{ fromAccountId: "nope", toAccountId: "o", amount: 1 }, 404, "ACCOUNT_NOT_FOUND"],
      [{ fromAccountId: "pool", toAccountId: "o", amount: 0 }, 400, "VALIDATION_ERROR"],
      [{ fromAccountId: "pool", toAccountId: "o", amount: -1 }, 400, "VALIDATION_ERROR"],
      [{ fromAccountId: "pool", toAccountId: "o", amount: 1.0000001 }, 400, "VALIDATION_ERROR"],
      [{ fromAccountId: "pool", toAccountId: "o" }, 400, "VALIDATION_ERROR"],
      [{ fromAccountId: "pool", amount: 1 }, 400, "VALIDATION_ERROR"],
      [{ fromAccountId: "pool", toAccountId: "o", amount: 1, extra: 1 }, 400, "VALIDATION_ERROR"],
      [{ fromAccountId: "pool", toAccountId: "o", amount: 11 }, 402, "INSUFFICIENT_CREDITS"],
    ];
    for (const [body, status, code] of cases) {
      refusal(await l.transfer(body), status, code);
    }
    expect(await l.balance("pool")).toMatchObject({ balance: 10, reserved: 0 });
    expect(await l.balance("o")).toMatchObject({ balance: 0 });
    expect(await l.txns({ accountId: "pool" })).toHaveLength(1);
    expect(await l.txns({ accountId: "o" })).toEqual([]);
  });
});

describe("events of a member's write", () => {
  it("fires balance.low for the pool and spend_limit.reached for the level reached, with onBehalfOf", async () => {
    const l = await ledger();
    await l.subscribe(["balance.low", "spend_limit.reached"]);
    const pool = await l.create("pool", { lowBalanceThreshold: 5 });
    await l.add("pool", 10);
    const mid = await l.create("mid", { parentId: "pool", spendLimits: dayCap(6) });
    const leaf = await l.create("leaf", { parentId: "mid" });
    const debit = await l.deduct("leaf", 6);
    expect(debit.balance).toBe(4);
    expect(await l.events("balance.low")).toEqual([
      expect.objectContaining({
        accountId: pool.id,
        externalId: "pool",
        balance: 4,
        reserved: 0,
        available: 4,
        threshold: 5,
        transactionId: debit.transactionId,
        onBehalfOf: leaf.id,
      }),
    ]);
    expect(await l.events("spend_limit.reached")).toEqual([
      expect.objectContaining({
        accountId: mid.id,
        externalId: "mid",
        period: "day",
        amount: 6,
        spent: 6,
        held: 0,
        windowStart: "2026-03-02T00:00:00.000Z",
        resetsAt: MIDNIGHT,
        transactionId: debit.transactionId,
        reservationId: null,
        onBehalfOf: leaf.id,
      }),
    ]);
  });
});
