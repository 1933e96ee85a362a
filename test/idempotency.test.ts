import type { RouteConfig } from "@hono/zod-openapi";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { accountRoutes } from "../src/accounts/routes.ts";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import { modelRoutes } from "../src/models/routes.ts";
import { planRoutes } from "../src/plans/routes.ts";
import { reservationRoutes } from "../src/reservations/routes.ts";
import { transactionRoutes } from "../src/transactions/routes.ts";
import { usageRoutes } from "../src/usage/routes.ts";
import { expectError, type OkBody, responseProblems } from "./contract.ts";
import { type ApiResponse, fundedAccount, makeLedger, type TestLedger } from "./harness.ts";

const DAY_MS = 24 * 60 * 60 * 1000;

describe("idempotency", () => {
  let t: TestLedger;
  beforeEach(async () => {
    t = await makeLedger({ fakeClock: "2026-03-01T10:00:00Z" });
  });
  afterEach(async () => {
    expect(await t.verify()).toEqual([]);
    await t.close();
  });

  /** POSTs `body` to `route` with an Idempotency-Key. @returns the raw answer, with its headers */
  const post = (route: RouteConfig, body: unknown, key: string, apiKey?: string) =>
    t.api("POST", route.path, {
      body,
      headers: { "Idempotency-Key": key },
      ...(apiKey ? { key: apiKey } : {}),
    });
  /** Asserts that `res`, an answer of `route`, is 200 with the route's 200 body. @returns it */
  const okBody = <R extends RouteConfig>(route: R, res: ApiResponse): OkBody<R> => {
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(responseProblems(route, 200, res.body)).toEqual([]);
    return res.body as OkBody<R>;
  };
  const balanceOf = async (externalId: string, apiKey?: string) =>
    (await t.call(accountRoutes.balance, { query: { externalId }, key: apiKey })).balance;
  const txCount = async (externalId: string) =>
    (await t.call(transactionRoutes.list, { query: { accountId: externalId } })).pagination
      .totalCount;
  const add = ledgerRoutes.add;
  const deduct = ledgerRoutes.deduct;
  /** Every row of every table an effect can touch, except the stored keys. */
  const snapshot = async () => {
    const db = t.ledger.db.read;
    const tables = [
      "accounts",
      "transactions",
      "reservations",
      "plans",
      "account_plans",
      "plan_grants",
      "usage_records",
    ] as const;
    const rows = await Promise.all(tables.map((name) => db.selectFrom(name).selectAll().execute()));
    return JSON.stringify(rows);
  };
  const expectReplay = (first: ApiResponse, again: ApiResponse) => {
    expect(first.headers.get("Idempotent-Replayed")).toBeNull();
    expect(again.status).toBe(first.status);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get("Idempotent-Replayed")).toBe("true");
  };

  it("replays the first response for the same key, path and body, applying it once", async () => {
    await fundedAccount(t, "u1", 10);
    const body = {
      accountId: "u1",
      amount: 5,
      description: "top-up",
      metadata: { a: 1, b: [1, 2] },
    };
    const first = await post(add, body, "k-add");
    expect(okBody(add, first)).toMatchObject({ success: true, balance: 15, added: 5 });
    t.advance(60_000);
    const same = await post(add, body, "k-add");
    expectReplay(first, same);
    // Same JSON value, other key order and whitespace.
    const reordered = `{ "metadata": {"b":[1, 2],   "a":1},\n "description":"top-up", "amount": 5,"accountId":"u1" }`;
    expectReplay(first, await post(add, reordered, "k-add"));
    expect(await balanceOf("u1")).toBe(15);
    expect(await txCount("u1")).toBe(2);
  });

  it("answers 409 IDEMPOTENCY_KEY_REUSED for another body or another path", async () => {
    await fundedAccount(t, "u1", 100);
    const first = await post(deduct, { accountId: "u1", amount: 5 }, "k1");
    okBody(deduct, first);
    const before = await snapshot();
    const otherBodies: unknown[] = [
      { accountId: "u1", amount: 6 },
      { accountId: "u1", amount: 5, description: "x" },
      { accountId: "u1", amount: 5, metadata: { n: 1 } },
    ];
    for (const body of otherBodies) {
      const res = await post(deduct, body, "k1");
      expectError(res, 409, "IDEMPOTENCY_KEY_REUSED");
      expect(res.headers.get("Idempotent-Replayed")).toBeNull();
    }
    const otherPath = await post(add, { accountId: "u1", amount: 5 }, "k1");
    expectError(otherPath, 409, "IDEMPOTENCY_KEY_REUSED");
    expect(await snapshot()).toBe(before);
    expect(await balanceOf("u1")).toBe(95);
    // The original request still replays.
    expectReplay(first, await post(deduct, { accountId: "u1", amount: 5 }, "k1"));
  });

  it("stores nothing for a failed request: a 402 retried after a top-up succeeds", async () => {
    await fundedAccount(t, "u1", 10);
    const body = { accountId: "u1", amount: 50 };
    const failed = await post(deduct, body, "k-retry");
    expectError(failed, 402, "INSUFFICIENT_CREDITS");
    const again = await post(deduct, body, "k-retry");
    expectError(again, 402, "INSUFFICIENT_CREDITS");
    expect(again.headers.get("Idempotent-Replayed")).toBeNull();
    await t.call(add, { body: { accountId: "u1", amount: 100 } });
    const ok = await post(deduct, body, "k-retry");
    expect(okBody(deduct, ok)).toMatchObject({ balance: 60, deducted: 50 });
    expectReplay(ok, await post(deduct, body, "k-retry"));
    expect(await balanceOf("u1")).toBe(60);
    expect(await txCount("u1")).toBe(3);
    // A 400 stores nothing either: the key is still free for a valid request elsewhere.
    const bad = await post(add, { accountId: "u1", amount: -1 }, "k-400");
    expectError(bad, 400, "VALIDATION_ERROR");
    const good = await post(add, { accountId: "u1", amount: 1 }, "k-400");
    okBody(add, good);
    expect(await balanceOf("u1")).toBe(61);
  });

  it("accepts keys of 1 to 255 characters and rejects longer ones", async () => {
    await fundedAccount(t, "u1", 10);
    const body = { accountId: "u1", amount: 1 };
    const tooLong = await post(add, body, "x".repeat(256));
    expectError(tooLong, 400, "VALIDATION_ERROR");
    const empty = await post(add, body, "");
    expectError(empty, 400, "VALIDATION_ERROR");
    expect(await balanceOf("u1")).toBe(10);
    const max = await post(add, body, "y".repeat(255));
    okBody(add, max);
    const one = await post(add, body, "z");
    okBody(add, one);
    expectReplay(max, await post(add, body, "y".repeat(255)));
    expect(await balanceOf("u1")).toBe(12);
  });

  it("scopes keys to the project", async () => {
    const b = await t.newProject("b");
    await fundedAccount(t, "u1", 10);
    const createB = await t.call(accountRoutes.create, {
      body: { externalId: "u1" },
      key: b.key,
    });
    const body = { accountId: "u1", amount: 7 };
    const inA = await post(add, body, "shared-key");
    const inB = await post(add, body, "shared-key", b.key);
    expect(inB.headers.get("Idempotent-Replayed")).toBeNull();
    expect(okBody(add, inB).accountId).toBe(createB.account.id);
    expect(okBody(add, inB).accountId).not.toBe(okBody(add, inA).accountId);
    expect(await balanceOf("u1")).toBe(17);
    expect(await balanceOf("u1", b.key)).toBe(7);
    // B may even use the key with another body: it is B's own key.
    const other = await post(deduct, { accountId: "u1", amount: 2 }, "k2", b.key);
    okBody(deduct, other);
    okBody(add, await post(add, body, "k2"));
    expect(await balanceOf("u1")).toBe(24);
    expect(await balanceOf("u1", b.key)).toBe(5);
  });

  it("forgets a key after 24 hours", async () => {
    await fundedAccount(t, "u1", 10);
    const body = { accountId: "u1", amount: 3 };
    const first = await post(add, body, "k-day");
    expect(okBody(add, first).balance).toBe(13);
    t.advance(DAY_MS - 1);
    expectReplay(first, await post(add, body, "k-day"));
    const changed = await post(add, { ...body, amount: 4 }, "k-day");
    expectError(changed, 409, "IDEMPOTENCY_KEY_REUSED");
    expect(await balanceOf("u1")).toBe(13);
    t.advance(1);
    const later = await post(add, body, "k-day");
    expect(later.headers.get("Idempotent-Replayed")).toBeNull();
    expect(okBody(add, later).balance).toBe(16);
    expectReplay(later, await post(add, body, "k-day"));
    t.advance(DAY_MS + 1);
    // Past 24 hours even another body runs under the old key.
    const reused = await post(deduct, { accountId: "u1", amount: 1 }, "k-day");
    okBody(deduct, reused);
    expect(await balanceOf("u1")).toBe(15);
    expect(await txCount("u1")).toBe(4);
  });

  it("works on every POST endpoint", async () => {
    const accountId = await fundedAccount(t, "u1", 1000);
    const plan = await t.call(planRoutes.create, {
      body: { name: "seed", amount: 1, interval: "month" },
    });
    const planId = plan.plan.id;
    await t.call(add, { body: { accountId, amount: 1 } });
    const hold = async (amount: number) =>
      (await t.call(reservationRoutes.create, { body: { accountId, amount } })).reservation.id;
    const toConfirm = await hold(10);
    const toCancel = await hold(20);
    // [route, body, another body for the same key]
    const cases: Array<[RouteConfig, object, object]> = [
      [accountRoutes.create, { externalId: "u2", metadata: { tier: "pro" } }, { externalId: "u3" }],
      [ledgerRoutes.add, { accountId, amount: 5, paymentMethod: "card" }, { accountId, amount: 5 }],
      [ledgerRoutes.deduct, { accountId, amount: 3 }, { accountId, amount: 3.5 }],
      [
        reservationRoutes.create,
        { accountId, amount: 7, operation: "op", model: "gpt-4o" },
        { accountId, amount: 7, operation: "op2", model: "gpt-4o" },
      ],
      [
        reservationRoutes.confirm,
        { reservationId: toConfirm, actualAmount: 4 },
        { reservationId: toConfirm, actualAmount: 5 },
      ],
      [reservationRoutes.cancel, { reservationId: toCancel }, { reservationId: toConfirm }],
      [
        planRoutes.create,
        { name: "Pro", amount: 50, interval: "month", occurrences: 3 },
        { name: "Pro", amount: 50, interval: "month", occurrences: null },
      ],
      [planRoutes.assign, { accountId, planId }, { accountId, planId, startMode: "next_interval" }],
      [
        transactionRoutes.create,
        { accountId, amount: 2, type: "debit", description: "fix" },
        { accountId, amount: 2, type: "credit", description: "fix" },
      ],
      [
        usageRoutes.record,
        { accountId, modelId: "gpt-4o", inputTokens: 100, outputTokens: 10 },
        { accountId, modelId: "gpt-4o", inputTokens: 100, outputTokens: 11 },
      ],
      [
        modelRoutes.calculate,
        { modelId: "gpt-4o", inputTokens: 1000, outputTokens: 500 },
        { modelId: "gpt-4o", inputTokens: 1000, outputTokens: 500, cachedTokens: 1 },
      ],
    ];
    for (const [i, [route, body, other]] of cases.entries()) {
      const { path } = route;
      const key = `every-${i}`;
      const before = await snapshot();
      const first = await post(route, body, key);
      expect(okBody(route, first), path).toMatchObject({ success: true });
      const afterFirst = await snapshot();
      if (route !== modelRoutes.calculate) expect(afterFirst, path).not.toBe(before);
      t.advance(1000);
      const again = await post(route, body, key);
      expectReplay(first, again);
      expect(await snapshot(), `${path} applied twice`).toBe(afterFirst);
      const reused = await post(route, other, key);
      expectError(reused, 409, "IDEMPOTENCY_KEY_REUSED");
    }
    // 1000 + 1 + 5 − 3 − 4 (confirm) + 1 (plan grant) − 2 = 998
    expect(await balanceOf("u1")).toBe(998);
  });

  it("treats a body with an extra (unknown) field as another body: 409", async () => {
    await fundedAccount(t, "u1", 10);
    const body = { accountId: "u1", amount: 1 };
    okBody(add, await post(add, body, "k-extra"));
    const extra = await post(add, { ...body, note: "hello" }, "k-extra");
    // Only the same JSON value replays; another body is 409 (docs/api.md#idempotency).
    expect(extra.headers.get("Idempotent-Replayed")).toBeNull();
    expectError(extra, 409, "IDEMPOTENCY_KEY_REUSED");
    expect(await balanceOf("u1")).toBe(11);
  });
});
