import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashApiKey } from "../src/http/auth.ts";
import { type ApiResponse, fundedAccount, makeLedger, type TestLedger } from "./harness.ts";

/** Every /v1 route of the service (GET routes with a query where one is required). */
const ROUTES: [method: "GET" | "POST", path: string][] = [
  ["POST", "/v1/accounts/create"],
  ["GET", "/v1/accounts"],
  ["GET", "/v1/accounts/get?accountId=x"],
  ["GET", "/v1/accounts/balance?accountId=x"],
  ["POST", "/v1/accounts/credits/add"],
  ["POST", "/v1/accounts/credits/deduct"],
  ["GET", "/v1/plans"],
  ["POST", "/v1/plans/create"],
  ["POST", "/v1/plans/archive"],
  ["POST", "/v1/plans/activate"],
  ["GET", "/v1/accounts/plans?accountId=x"],
  ["POST", "/v1/accounts/plans/assign"],
  ["POST", "/v1/accounts/plans/cancel"],
  ["POST", "/v1/reservations/create"],
  ["GET", "/v1/reservations?accountId=x"],
  ["POST", "/v1/reservations/confirm"],
  ["POST", "/v1/reservations/cancel"],
  ["GET", "/v1/transactions"],
  ["POST", "/v1/transactions/create"],
  ["POST", "/v1/usage/record"],
  ["GET", "/v1/usage"],
  ["GET", "/v1/models"],
  ["POST", "/v1/models/calculate"],
];

function expectError(res: ApiResponse, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.body).toEqual({ success: false, error: expect.objectContaining({ code }) });
  expect(typeof res.body.error.message).toBe("string");
  expect(Object.keys(res.body.error).every((k) => ["code", "message", "details"].includes(k))).toBe(
    true,
  );
}

describe("authentication", () => {
  let t: TestLedger;
  beforeAll(async () => {
    t = await makeLedger();
  });
  afterAll(async () => t.close());

  const call = (method: string, path: string, key: string | null) =>
    t.api(method, path, { key, ...(method === "POST" ? { body: {} } : {}) });

  describe.each(ROUTES)("%s %s", (method, path) => {
    it("is 401 UNAUTHORIZED without a key", async () => {
      expectError(await call(method, path, null), 401, "UNAUTHORIZED");
    });
    it("is 401 UNAUTHORIZED with a wrong key", async () => {
      expectError(await call(method, path, "ldg_not-a-real-key"), 401, "UNAUTHORIZED");
      expectError(await call(method, path, ""), 401, "UNAUTHORIZED");
    });
    it("is not 401 with the project's key", async () => {
      const res = await call(method, path, t.key);
      expect(res.status).not.toBe(401);
      expect(res.status).toBeLessThan(500);
    });
  });

  it("creates nothing on an unauthenticated write", async () => {
    const res = await t.api("POST", "/v1/accounts/create", {
      body: { externalId: "sneaky" },
      key: null,
    });
    expectError(res, 401, "UNAUTHORIZED");
    const get = await t.api("GET", "/v1/accounts/get?accountId=sneaky");
    expectError(get, 404, "ACCOUNT_NOT_FOUND");
  });

  it("answers an unknown /v1 route 401 without a key and 404 NOT_FOUND with one", async () => {
    expectError(await t.api("GET", "/v1/nope", { key: null }), 401, "UNAUTHORIZED");
    expectError(await t.api("GET", "/v1/nope"), 404, "NOT_FOUND");
    expectError(await t.api("DELETE", "/v1/accounts", { key: null }), 401, "UNAUTHORIZED");
    expectError(await t.api("DELETE", "/v1/accounts"), 404, "NOT_FOUND");
  });

  it("serves /health and /openapi.json without a key", async () => {
    const health = await t.api("GET", "/health", { key: null });
    expect(health.status).toBe(200);
    expect(health.body).toEqual({ status: "ok" });
    const doc = await t.api("GET", "/openapi.json", { key: null });
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toMatch(/^3\./);
    expect(Object.keys(doc.body.paths)).toContain("/v1/accounts/create");
  });

  it("works over a real HTTP server with the header and refuses without", async () => {
    const base = await t.listen();
    const ok = await fetch(`${base}/v1/accounts`, { headers: { "X-API-Key": t.key } });
    expect(ok.status).toBe(200);
    const denied = await fetch(`${base}/v1/accounts`);
    expect(denied.status).toBe(401);
    expect(await denied.json()).toMatchObject({ success: false, error: { code: "UNAUTHORIZED" } });
  });

  it("refuses a revoked key with 401 while other keys keep working", async () => {
    const p = await t.newProject("to-revoke");
    expect((await t.api("GET", "/v1/accounts", { key: p.key })).status).toBe(200);
    const revoked = await t.ledger.queue.run(async (trx, nowMs) => {
      const r = await trx
        .updateTable("api_keys")
        .set({ revoked_at_ms: nowMs })
        .where("key_hash", "=", hashApiKey(p.key))
        .where("revoked_at_ms", "is", null)
        .executeTakeFirst();
      return Number(r.numUpdatedRows);
    });
    expect(revoked).toBe(1);
    expectError(await t.api("GET", "/v1/accounts", { key: p.key }), 401, "UNAUTHORIZED");
    expectError(
      await t.api("POST", "/v1/accounts/create", { key: p.key, body: { externalId: "r" } }),
      401,
      "UNAUTHORIZED",
    );
    expect((await t.api("GET", "/v1/accounts")).status).toBe(200);
  });
});

describe("project isolation", () => {
  let t: TestLedger;
  let bKey: string;
  const a: Record<string, string> = {};
  beforeAll(async () => {
    t = await makeLedger();
    a.account = await fundedAccount(t, "a_cust", 100);
    const res = await t.api("POST", "/v1/reservations/create", {
      body: { accountId: a.account, amount: 10 },
    });
    a.reservation = res.body.reservation.id;
    const plan = await t.api("POST", "/v1/plans/create", {
      body: { name: "A plan", amount: 5, interval: "month" },
    });
    a.plan = plan.body.plan.id;
    const ap = await t.api("POST", "/v1/accounts/plans/assign", {
      body: { accountId: a.account, planId: a.plan },
    });
    a.accountPlan = ap.body.accountPlan.id;
    const txn = await t.api("POST", "/v1/transactions/create", {
      body: { accountId: a.account, amount: 1, type: "credit" },
    });
    a.transaction = txn.body.transaction.id;
    for (const [k, v] of Object.entries(a)) if (typeof v !== "string") throw new Error(k);
    bKey = (await t.newProject("B")).key;
    await t.api("POST", "/v1/accounts/create", { key: bKey, body: { externalId: "b_cust" } });
    await t.api("POST", "/v1/accounts/credits/add", {
      key: bKey,
      body: { accountId: "b_cust", amount: 50 },
    });
  });
  afterAll(async () => t.close());

  const asB = (method: string, path: string, body?: unknown) =>
    t.api(method, path, { key: bKey, ...(body === undefined ? {} : { body }) });

  /** Requests naming an account, as functions of the account reference. */
  const accountRequests: [string, (ref: string) => Promise<ApiResponse>][] = [
    ["get", (ref) => asB("GET", `/v1/accounts/get?accountId=${ref}`)],
    ["get by externalId=", (ref) => asB("GET", `/v1/accounts/get?externalId=${ref}`)],
    ["balance", (ref) => asB("GET", `/v1/accounts/balance?accountId=${ref}`)],
    ["add", (ref) => asB("POST", "/v1/accounts/credits/add", { accountId: ref, amount: 1 })],
    ["deduct", (ref) => asB("POST", "/v1/accounts/credits/deduct", { accountId: ref, amount: 1 })],
    ["reserve", (ref) => asB("POST", "/v1/reservations/create", { accountId: ref, amount: 1 })],
    ["list reservations", (ref) => asB("GET", `/v1/reservations?accountId=${ref}`)],
    ["list transactions", (ref) => asB("GET", `/v1/transactions?accountId=${ref}`)],
    [
      "manual transaction",
      (ref) =>
        asB("POST", "/v1/transactions/create", { accountId: ref, amount: 1, type: "credit" }),
    ],
    ["list account plans", (ref) => asB("GET", `/v1/accounts/plans?accountId=${ref}`)],
  ];

  it.each(accountRequests)("%s with A's account is 404 ACCOUNT_NOT_FOUND", async (_n, request) => {
    for (const ref of [a.account as string, "a_cust"]) {
      const res = await request(ref);
      expectError(res, 404, "ACCOUNT_NOT_FOUND");
      const unknown = await request("zz_unknown");
      expect(unknown.status).toBe(404);
      expect(res.body.error.message.replace(ref, "ID")).toBe(
        unknown.body.error.message.replace("zz_unknown", "ID"),
      );
    }
  });

  it("cannot confirm or cancel A's reservation (404 RESERVATION_NOT_FOUND)", async () => {
    const id = a.reservation as string;
    const confirm = await asB("POST", "/v1/reservations/confirm", {
      reservationId: id,
      actualAmount: 1,
    });
    expectError(confirm, 404, "RESERVATION_NOT_FOUND");
    expectError(
      await asB("POST", "/v1/reservations/cancel", { reservationId: id }),
      404,
      "RESERVATION_NOT_FOUND",
    );
    expectError(
      await asB("POST", "/v1/reservations/cancel", { reservationId: "res_unknown" }),
      404,
      "RESERVATION_NOT_FOUND",
    );
    const list = await t.api("GET", `/v1/reservations?accountId=${a.account}`);
    expect(list.body.reservations[0]).toMatchObject({ id, status: "pending" });
  });

  it("cannot archive, activate or assign A's plan (404 PLAN_NOT_FOUND)", async () => {
    const planId = a.plan as string;
    expectError(await asB("POST", "/v1/plans/archive", { planId }), 404, "PLAN_NOT_FOUND");
    expectError(await asB("POST", "/v1/plans/activate", { planId }), 404, "PLAN_NOT_FOUND");
    const assign = await asB("POST", "/v1/accounts/plans/assign", {
      accountId: "b_cust",
      planId,
    });
    expectError(assign, 404, "PLAN_NOT_FOUND");
    const plans = await t.api("GET", "/v1/plans");
    expect(plans.body.plans).toEqual([expect.objectContaining({ id: planId, isActive: true })]);
    expect((await asB("GET", "/v1/plans")).body.plans).toEqual([]);
  });

  it("cannot cancel A's account plan (404 ACCOUNT_PLAN_NOT_FOUND)", async () => {
    const res = await asB("POST", "/v1/accounts/plans/cancel", { accountPlanId: a.accountPlan });
    expectError(res, 404, "ACCOUNT_PLAN_NOT_FOUND");
    const plans = await t.api("GET", `/v1/accounts/plans?accountId=${a.account}`);
    expect(plans.body.plans[0]).toMatchObject({ id: a.accountPlan, active: true });
  });

  it("cannot attach usage to A's transaction (404 TRANSACTION_NOT_FOUND)", async () => {
    const res = await asB("POST", "/v1/usage/record", {
      accountId: "b_cust",
      modelId: "gpt-4o",
      inputTokens: 10,
      outputTokens: 10,
      transactionId: a.transaction,
    });
    expectError(res, 404, "TRANSACTION_NOT_FOUND");
    expect((await asB("GET", "/v1/usage")).body.usageRecords).toEqual([]);
  });

  it("B's account and transaction lists hold none of A's data", async () => {
    const accounts = await asB("GET", "/v1/accounts");
    expect(accounts.body.accounts.map((x: { externalId: string }) => x.externalId)).toEqual([
      "b_cust",
    ]);
    const txns = await asB("GET", "/v1/transactions");
    expect(txns.body.pagination.totalCount).toBe(1);
    expect(txns.body.items).toEqual([expect.objectContaining({ amount: 50, type: "credit" })]);
    expect(JSON.stringify(txns.body)).not.toContain(a.account as string);
    const mine = await t.api("GET", "/v1/transactions");
    expect(mine.body.items.map((x: { accountId: string }) => x.accountId)).not.toContain(
      accounts.body.accounts[0].id,
    );
  });

  it("left A's ledger untouched by B's attempts", async () => {
    const bal = await t.api("GET", `/v1/accounts/balance?accountId=${a.account}`);
    expect(bal.body).toMatchObject({ balance: 106, reserved: 10, available: 96 });
    expect(await t.verify()).toEqual([]);
  });
});
