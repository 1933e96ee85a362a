import { afterEach, beforeEach, describe, expect, it } from "vitest";
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

  const post = (path: string, body: unknown, key: string, apiKey?: string) =>
    t.api("POST", path, {
      body,
      headers: { "Idempotency-Key": key },
      ...(apiKey ? { key: apiKey } : {}),
    });
  const balanceOf = async (externalId: string, apiKey?: string) => {
    const res = await t.api("GET", `/v1/accounts/balance?externalId=${externalId}`, {
      ...(apiKey ? { key: apiKey } : {}),
    });
    expect(res.status).toBe(200);
    return res.body.balance as number;
  };
  const txCount = async (externalId: string) =>
    (await t.api("GET", `/v1/transactions?accountId=${externalId}`)).body.pagination
      .totalCount as number;
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
    const first = await post("/v1/accounts/credits/add", body, "k-add");
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ success: true, balance: 15, added: 5 });
    t.advance(60_000);
    const same = await post("/v1/accounts/credits/add", body, "k-add");
    expectReplay(first, same);
    // Same JSON value, other key order and whitespace.
    const reordered = `{ "metadata": {"b":[1, 2],   "a":1},\n "description":"top-up", "amount": 5,"accountId":"u1" }`;
    expectReplay(first, await post("/v1/accounts/credits/add", reordered, "k-add"));
    expect(await balanceOf("u1")).toBe(15);
    expect(await txCount("u1")).toBe(2);
  });

  it("answers 409 IDEMPOTENCY_KEY_REUSED for another body or another path", async () => {
    await fundedAccount(t, "u1", 100);
    const first = await post("/v1/accounts/credits/deduct", { accountId: "u1", amount: 5 }, "k1");
    expect(first.status).toBe(200);
    const before = await snapshot();
    const otherBodies: unknown[] = [
      { accountId: "u1", amount: 6 },
      { accountId: "u1", amount: 5, description: "x" },
      { accountId: "u1", amount: 5, metadata: { n: 1 } },
    ];
    for (const body of otherBodies) {
      const res = await post("/v1/accounts/credits/deduct", body, "k1");
      expect(res.status, JSON.stringify(body)).toBe(409);
      expect(res.body).toMatchObject({ success: false, error: { code: "IDEMPOTENCY_KEY_REUSED" } });
      expect(res.headers.get("Idempotent-Replayed")).toBeNull();
    }
    const otherPath = await post("/v1/accounts/credits/add", { accountId: "u1", amount: 5 }, "k1");
    expect(otherPath.status).toBe(409);
    expect(otherPath.body.error.code).toBe("IDEMPOTENCY_KEY_REUSED");
    expect(await snapshot()).toBe(before);
    expect(await balanceOf("u1")).toBe(95);
    // The original request still replays.
    expectReplay(
      first,
      await post("/v1/accounts/credits/deduct", { accountId: "u1", amount: 5 }, "k1"),
    );
  });

  it("stores nothing for a failed request: a 402 retried after a top-up succeeds", async () => {
    await fundedAccount(t, "u1", 10);
    const body = { accountId: "u1", amount: 50 };
    const failed = await post("/v1/accounts/credits/deduct", body, "k-retry");
    expect(failed.status).toBe(402);
    expect(failed.body.error.code).toBe("INSUFFICIENT_CREDITS");
    const again = await post("/v1/accounts/credits/deduct", body, "k-retry");
    expect(again.status).toBe(402);
    expect(again.headers.get("Idempotent-Replayed")).toBeNull();
    await t.api("POST", "/v1/accounts/credits/add", { body: { accountId: "u1", amount: 100 } });
    const ok = await post("/v1/accounts/credits/deduct", body, "k-retry");
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ balance: 60, deducted: 50 });
    expectReplay(ok, await post("/v1/accounts/credits/deduct", body, "k-retry"));
    expect(await balanceOf("u1")).toBe(60);
    expect(await txCount("u1")).toBe(3);
    // A 400 stores nothing either: the key is still free for a valid request elsewhere.
    const bad = await post("/v1/accounts/credits/add", { accountId: "u1", amount: -1 }, "k-400");
    expect(bad.status).toBe(400);
    const good = await post("/v1/accounts/credits/add", { accountId: "u1", amount: 1 }, "k-400");
    expect(good.status).toBe(200);
    expect(await balanceOf("u1")).toBe(61);
  });

  it("accepts keys of 1 to 255 characters and rejects longer ones", async () => {
    await fundedAccount(t, "u1", 10);
    const body = { accountId: "u1", amount: 1 };
    const tooLong = await post("/v1/accounts/credits/add", body, "x".repeat(256));
    expect(tooLong.status).toBe(400);
    expect(tooLong.body).toMatchObject({ success: false, error: { code: "VALIDATION_ERROR" } });
    const empty = await post("/v1/accounts/credits/add", body, "");
    expect(empty.status).toBe(400);
    expect(await balanceOf("u1")).toBe(10);
    const max = await post("/v1/accounts/credits/add", body, "y".repeat(255));
    expect(max.status).toBe(200);
    const one = await post("/v1/accounts/credits/add", body, "z");
    expect(one.status).toBe(200);
    expectReplay(max, await post("/v1/accounts/credits/add", body, "y".repeat(255)));
    expect(await balanceOf("u1")).toBe(12);
  });

  it("scopes keys to the project", async () => {
    const b = await t.newProject("b");
    await fundedAccount(t, "u1", 10);
    const createB = await t.api("POST", "/v1/accounts/create", {
      body: { externalId: "u1" },
      key: b.key,
    });
    expect(createB.status).toBe(200);
    const body = { accountId: "u1", amount: 7 };
    const inA = await post("/v1/accounts/credits/add", body, "shared-key");
    expect(inA.status).toBe(200);
    const inB = await post("/v1/accounts/credits/add", body, "shared-key", b.key);
    expect(inB.status).toBe(200);
    expect(inB.headers.get("Idempotent-Replayed")).toBeNull();
    expect(inB.body.accountId).toBe(createB.body.account.id);
    expect(inB.body.accountId).not.toBe(inA.body.accountId);
    expect(await balanceOf("u1")).toBe(17);
    expect(await balanceOf("u1", b.key)).toBe(7);
    // B may even use the key with another body: it is B's own key.
    const other = await post(
      "/v1/accounts/credits/deduct",
      { accountId: "u1", amount: 2 },
      "k2",
      b.key,
    );
    expect(other.status).toBe(200);
    expect((await post("/v1/accounts/credits/add", body, "k2")).status).toBe(200);
    expect(await balanceOf("u1")).toBe(24);
    expect(await balanceOf("u1", b.key)).toBe(5);
  });

  it("forgets a key after 24 hours", async () => {
    await fundedAccount(t, "u1", 10);
    const body = { accountId: "u1", amount: 3 };
    const first = await post("/v1/accounts/credits/add", body, "k-day");
    expect(first.body.balance).toBe(13);
    t.advance(DAY_MS - 1);
    expectReplay(first, await post("/v1/accounts/credits/add", body, "k-day"));
    expect((await post("/v1/accounts/credits/add", { ...body, amount: 4 }, "k-day")).status).toBe(
      409,
    );
    expect(await balanceOf("u1")).toBe(13);
    t.advance(1);
    const later = await post("/v1/accounts/credits/add", body, "k-day");
    expect(later.status).toBe(200);
    expect(later.headers.get("Idempotent-Replayed")).toBeNull();
    expect(later.body.balance).toBe(16);
    expectReplay(later, await post("/v1/accounts/credits/add", body, "k-day"));
    t.advance(DAY_MS + 1);
    // Past 24 hours even another body runs under the old key.
    const reused = await post(
      "/v1/accounts/credits/deduct",
      { accountId: "u1", amount: 1 },
      "k-day",
    );
    expect(reused.status).toBe(200);
    expect(await balanceOf("u1")).toBe(15);
    expect(await txCount("u1")).toBe(4);
  });

  it("works on every POST endpoint", async () => {
    const accountId = await fundedAccount(t, "u1", 1000);
    const plan = await t.api("POST", "/v1/plans/create", {
      body: { name: "seed", amount: 1, interval: "month" },
    });
    const planId = plan.body.plan.id as string;
    await t.api("POST", "/v1/accounts/credits/add", { body: { accountId, amount: 1 } });
    const hold = async (amount: number) =>
      (await t.api("POST", "/v1/reservations/create", { body: { accountId, amount } })).body
        .reservation.id as string;
    const toConfirm = await hold(10);
    const toCancel = await hold(20);
    // [path, body, another body for the same key]
    const cases: Array<[string, object, object]> = [
      [
        "/v1/accounts/create",
        { externalId: "u2", metadata: { tier: "pro" } },
        { externalId: "u3" },
      ],
      [
        "/v1/accounts/credits/add",
        { accountId, amount: 5, paymentMethod: "card" },
        { accountId, amount: 5 },
      ],
      ["/v1/accounts/credits/deduct", { accountId, amount: 3 }, { accountId, amount: 3.5 }],
      [
        "/v1/reservations/create",
        { accountId, amount: 7, operation: "op", model: "gpt-4o" },
        { accountId, amount: 7, operation: "op2", model: "gpt-4o" },
      ],
      [
        "/v1/reservations/confirm",
        { reservationId: toConfirm, actualAmount: 4 },
        { reservationId: toConfirm, actualAmount: 5 },
      ],
      ["/v1/reservations/cancel", { reservationId: toCancel }, { reservationId: toConfirm }],
      [
        "/v1/plans/create",
        { name: "Pro", amount: 50, interval: "month", occurrences: 3 },
        { name: "Pro", amount: 50, interval: "month", occurrences: null },
      ],
      [
        "/v1/accounts/plans/assign",
        { accountId, planId },
        { accountId, planId, startMode: "next_interval" },
      ],
      [
        "/v1/transactions/create",
        { accountId, amount: 2, type: "debit", description: "fix" },
        { accountId, amount: 2, type: "credit", description: "fix" },
      ],
      [
        "/v1/usage/record",
        { accountId, modelId: "gpt-4o", inputTokens: 100, outputTokens: 10 },
        { accountId, modelId: "gpt-4o", inputTokens: 100, outputTokens: 11 },
      ],
      [
        "/v1/models/calculate",
        { modelId: "gpt-4o", inputTokens: 1000, outputTokens: 500 },
        { modelId: "gpt-4o", inputTokens: 1000, outputTokens: 500, cachedTokens: 1 },
      ],
    ];
    for (const [i, [path, body, other]] of cases.entries()) {
      const key = `every-${i}`;
      const before = await snapshot();
      const first = await post(path, body, key);
      expect(first.status, path).toBe(200);
      expect(first.body.success, path).toBe(true);
      const afterFirst = await snapshot();
      if (path !== "/v1/models/calculate") expect(afterFirst, path).not.toBe(before);
      t.advance(1000);
      const again = await post(path, body, key);
      expectReplay(first, again);
      expect(await snapshot(), `${path} applied twice`).toBe(afterFirst);
      const reused = await post(path, other, key);
      expect(reused.status, `${path} reused`).toBe(409);
      expect(reused.body.error.code).toBe("IDEMPOTENCY_KEY_REUSED");
    }
    // 1000 + 1 + 5 − 3 − 4 (confirm) + 1 (plan grant) − 2 = 998
    expect(await balanceOf("u1")).toBe(998);
  });

  it("treats a body with an extra (unknown) field as another body: 409", async () => {
    await fundedAccount(t, "u1", 10);
    const body = { accountId: "u1", amount: 1 };
    expect((await post("/v1/accounts/credits/add", body, "k-extra")).status).toBe(200);
    const extra = await post("/v1/accounts/credits/add", { ...body, note: "hello" }, "k-extra");
    // Only the same JSON value replays; another body is 409 (docs/api.md#idempotency).
    expect(extra.headers.get("Idempotent-Replayed")).toBeNull();
    expect(extra.status).toBe(409);
    expect(extra.body.error.code).toBe("IDEMPOTENCY_KEY_REUSED");
    expect(await balanceOf("u1")).toBe(11);
  });
});
