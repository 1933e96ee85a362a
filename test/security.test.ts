import type { RouteConfig } from "@hono/zod-openapi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { accountRoutes } from "../src/accounts/routes.ts";
import { hashApiKey, revokeKey } from "../src/db/api-keys.ts";
import type { ErrorCode } from "../src/errors.ts";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import { planRoutes } from "../src/plans/routes.ts";
import { reservationRoutes } from "../src/reservations/routes.ts";
import { transactionRoutes } from "../src/transactions/routes.ts";
import { usageRoutes } from "../src/usage/routes.ts";
import { expectError, type RegisteredRoute, registeredRoutes } from "./contract.ts";
import { type CallInput, fundedAccount, makeLedger, type TestLedger } from "./harness.ts";

/** How many /v1 routes the matrix covered when it was a hand-kept list: it may only grow. */
const ROUTES_COVERED_BEFORE = 23;

describe("authentication", () => {
  let t: TestLedger;
  /** Every /v1 route of the app, from its OpenAPI registry. */
  let routes: RegisteredRoute[];
  beforeAll(async () => {
    t = await makeLedger();
    routes = registeredRoutes(t.app).filter((r) => r.path.startsWith("/v1/"));
  });
  afterAll(async () => t.close());

  /** Calls a route with no query (a POST with an empty JSON object), any path parameter "x". */
  const call = (r: RegisteredRoute, key: string | null) =>
    t.api(r.method, r.path.replace(/\{[^}]+\}/g, "x"), {
      key,
      ...(r.method === "POST" ? { body: {} } : {}),
    });

  /** Runs `check` on every route. @throws listing every route it failed on, with why */
  async function onEveryRoute(check: (r: RegisteredRoute) => Promise<void>) {
    const failures: string[] = [];
    for (const r of routes) {
      try {
        await check(r);
      } catch (err) {
        failures.push(`${r.method} ${r.path}: ${err instanceof Error ? err.message : err}`);
      }
    }
    expect(failures).toEqual([]);
  }

  it("covers every registered /v1 route, at least as many as the hand-kept list did", () => {
    expect(routes.length).toBeGreaterThanOrEqual(ROUTES_COVERED_BEFORE);
    const names = routes.map((r) => `${r.method} ${r.path}`);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual(
      expect.arrayContaining(["POST /v1/accounts/create", "GET /v1/accounts", "GET /v1/models"]),
    );
  });

  it("is 401 UNAUTHORIZED without a key on every /v1 route", async () => {
    await onEveryRoute(async (r) => {
      expectError(await call(r, null), 401, "UNAUTHORIZED");
    });
  });

  it("is 401 UNAUTHORIZED with a wrong key on every /v1 route", async () => {
    await onEveryRoute(async (r) => {
      expectError(await call(r, "ldg_not-a-real-key"), 401, "UNAUTHORIZED");
      expectError(await call(r, ""), 401, "UNAUTHORIZED");
    });
  });

  it("is not 401 (nor a 5xx) with the project's key on every /v1 route", async () => {
    await onEveryRoute(async (r) => {
      const res = await call(r, t.key);
      expect(res.status, JSON.stringify(res.body)).not.toBe(401);
      expect(res.status, JSON.stringify(res.body)).toBeLessThan(500);
    });
  });

  it("creates nothing on an unauthenticated write", async () => {
    const body = { externalId: "sneaky" };
    await t.fail(accountRoutes.create, { body, key: null }, 401, "UNAUTHORIZED");
    const query = { accountId: "sneaky" };
    await t.fail(accountRoutes.get, { query }, 404, "ACCOUNT_NOT_FOUND");
  });

  it("answers an unknown /v1 route 401 without a key and 404 NOT_FOUND (405 for a known path) with one", async () => {
    expectError(await t.api("GET", "/v1/nope", { key: null }), 401, "UNAUTHORIZED");
    expectError(await t.api("GET", "/v1/nope"), 404, "NOT_FOUND");
    expectError(await t.api("DELETE", "/v1/accounts", { key: null }), 401, "UNAUTHORIZED");
    // A known path with a method it does not serve (docs/api.md#errors).
    expectError(await t.api("DELETE", "/v1/accounts"), 405, "METHOD_NOT_ALLOWED");
  });

  it("serves /health and /openapi.json without a key", async () => {
    const health = await t.api("GET", "/health", { key: null });
    expect(health.status).toBe(200);
    expect(health.body).toEqual({ status: "ok" });
    const doc = await t.api("GET", "/openapi.json", { key: null });
    expect(doc.status).toBe(200);
    const { openapi, paths } = z
      .object({ openapi: z.string(), paths: z.record(z.string(), z.unknown()) })
      .parse(doc.body);
    expect(openapi).toMatch(/^3\./);
    expect(Object.keys(paths)).toContain("/v1/accounts/create");
  });

  it("works over a real HTTP server with the header and refuses without", async () => {
    const base = await t.listen();
    const ok = await fetch(`${base}/v1/accounts`, { headers: { "X-API-Key": t.key } });
    expect(ok.status).toBe(200);
    const denied = await fetch(`${base}/v1/accounts`);
    expect(denied.status).toBe(401);
    expect(await denied.json()).toMatchObject({ success: false, error: { code: "UNAUTHORIZED" } });
  });

  it("refuses a key revoked by this process at once, while other keys keep working", async () => {
    const p = await t.newProject("to-revoke");
    await t.call(accountRoutes.list, { key: p.key });
    expect(await revokeKey(t.ledger.queue, p.key)).toMatch(/^key_/);
    await t.fail(accountRoutes.list, { key: p.key }, 401, "UNAUTHORIZED");
    await t.fail(
      accountRoutes.create,
      { key: p.key, body: { externalId: "r" } },
      401,
      "UNAUTHORIZED",
    );
    await t.call(accountRoutes.list);
  });

  it("refuses a key revoked by another process within 5 seconds", async () => {
    const p = await t.newProject("revoked-elsewhere");
    await t.call(accountRoutes.list, { key: p.key });
    // What another process's revocation leaves: the row revoked, this process not told.
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
    const started = performance.now();
    let status = 200;
    while (status === 200 && performance.now() - started < 6000) {
      status = (await t.api("GET", "/v1/accounts", { key: p.key })).status;
      if (status === 200) await new Promise((r) => setTimeout(r, 50));
    }
    expect(status).toBe(401);
    expect(performance.now() - started).toBeLessThan(5000);
    await t.call(accountRoutes.list);
  });
});

describe("project isolation", () => {
  let t: TestLedger;
  let bKey: string;
  /** Project A's objects, by kind. */
  const a = { account: "", reservation: "", plan: "", accountPlan: "", transaction: "" };
  beforeAll(async () => {
    t = await makeLedger();
    a.account = await fundedAccount(t, "a_cust", 100);
    const res = await t.call(reservationRoutes.create, {
      body: { accountId: a.account, amount: 10 },
    });
    a.reservation = res.reservation.id;
    const plan = await t.call(planRoutes.create, {
      body: { name: "A plan", amount: 5, interval: "month" },
    });
    a.plan = plan.plan.id;
    const ap = await t.call(planRoutes.assign, {
      body: { accountId: a.account, planId: a.plan },
    });
    a.accountPlan = ap.accountPlan.id;
    const txn = await t.call(transactionRoutes.create, {
      body: { accountId: a.account, amount: 1, type: "credit" },
    });
    a.transaction = txn.transaction.id;
    for (const [k, v] of Object.entries(a)) if (!v) throw new Error(k);
    bKey = (await t.newProject("B")).key;
    await t.call(accountRoutes.create, { key: bKey, body: { externalId: "b_cust" } });
    await t.call(ledgerRoutes.add, { key: bKey, body: { accountId: "b_cust", amount: 50 } });
  });
  afterAll(async () => t.close());

  /** `route` called with B's key: a body for a POST, a query for a GET. */
  const asB = <R extends RouteConfig>(route: R, input: Record<string, unknown> = {}) =>
    t.call(route, { key: bKey, ...inputOf(route, input) });
  const asBFails = (
    route: RouteConfig,
    input: Record<string, unknown>,
    status: number,
    code: ErrorCode,
  ) => t.fail(route, { key: bKey, ...inputOf(route, input) }, status, code);
  function inputOf(route: RouteConfig, input: Record<string, unknown>): CallInput {
    if (route.method === "post") return { body: input };
    const query: Record<string, string> = {};
    for (const [k, v] of Object.entries(input)) query[k] = String(v);
    return { query };
  }

  /** Requests naming an account: the route, and its input as a function of the reference. */
  const accountRequests: [string, RouteConfig, (ref: string) => Record<string, unknown>][] = [
    ["get", accountRoutes.get, (ref) => ({ accountId: ref })],
    ["get by externalId=", accountRoutes.get, (ref) => ({ externalId: ref })],
    ["balance", accountRoutes.balance, (ref) => ({ accountId: ref })],
    ["add", ledgerRoutes.add, (ref) => ({ accountId: ref, amount: 1 })],
    ["deduct", ledgerRoutes.deduct, (ref) => ({ accountId: ref, amount: 1 })],
    ["reserve", reservationRoutes.create, (ref) => ({ accountId: ref, amount: 1 })],
    ["list reservations", reservationRoutes.list, (ref) => ({ accountId: ref })],
    ["list transactions", transactionRoutes.list, (ref) => ({ accountId: ref })],
    [
      "manual transaction",
      transactionRoutes.create,
      (ref) => ({ accountId: ref, amount: 1, type: "credit" }),
    ],
    ["list account plans", planRoutes.listAssigned, (ref) => ({ accountId: ref })],
  ];

  it.each(accountRequests)(
    "%s with A's account is 404 ACCOUNT_NOT_FOUND",
    async (_n, route, input) => {
      for (const ref of [a.account, "a_cust"]) {
        const res = await asBFails(route, input(ref), 404, "ACCOUNT_NOT_FOUND");
        const unknown = await asBFails(route, input("zz_unknown"), 404, "ACCOUNT_NOT_FOUND");
        expect(res.error.message.replace(ref, "ID")).toBe(
          unknown.error.message.replace("zz_unknown", "ID"),
        );
      }
    },
  );

  it("cannot confirm or cancel A's reservation (404 RESERVATION_NOT_FOUND)", async () => {
    const id = a.reservation;
    const notFound = "RESERVATION_NOT_FOUND";
    const confirm = { reservationId: id, actualAmount: 1 };
    await asBFails(reservationRoutes.confirm, confirm, 404, notFound);
    await asBFails(reservationRoutes.cancel, { reservationId: id }, 404, notFound);
    await asBFails(reservationRoutes.cancel, { reservationId: "res_unknown" }, 404, notFound);
    const list = await t.call(reservationRoutes.list, { query: { accountId: a.account } });
    expect(list.reservations[0]).toMatchObject({ id, status: "pending" });
  });

  it("cannot archive, activate or assign A's plan (404 PLAN_NOT_FOUND)", async () => {
    const planId = a.plan;
    await asBFails(planRoutes.archive, { planId }, 404, "PLAN_NOT_FOUND");
    await asBFails(planRoutes.activate, { planId }, 404, "PLAN_NOT_FOUND");
    const assign = { accountId: "b_cust", planId };
    await asBFails(planRoutes.assign, assign, 404, "PLAN_NOT_FOUND");
    const plans = await t.call(planRoutes.list);
    expect(plans.plans).toEqual([expect.objectContaining({ id: planId, isActive: true })]);
    expect((await asB(planRoutes.list)).plans).toEqual([]);
  });

  it("cannot cancel A's account plan (404 ACCOUNT_PLAN_NOT_FOUND)", async () => {
    const cancel = { accountPlanId: a.accountPlan };
    await asBFails(planRoutes.cancel, cancel, 404, "ACCOUNT_PLAN_NOT_FOUND");
    const plans = await t.call(planRoutes.listAssigned, { query: { accountId: a.account } });
    expect(plans.plans[0]).toMatchObject({ id: a.accountPlan, active: true });
  });

  it("cannot attach usage to A's transaction (404 TRANSACTION_NOT_FOUND)", async () => {
    const usage = {
      accountId: "b_cust",
      modelId: "gpt-4o",
      inputTokens: 10,
      outputTokens: 10,
      transactionId: a.transaction,
    };
    await asBFails(usageRoutes.record, usage, 404, "TRANSACTION_NOT_FOUND");
    expect(await asB(usageRoutes.list)).toMatchObject({ usageRecords: [] });
  });

  it("B's account and transaction lists hold none of A's data", async () => {
    const accounts = await asB(accountRoutes.list);
    expect(accounts.accounts.map((x) => x.externalId)).toEqual(["b_cust"]);
    const txns = await asB(transactionRoutes.list);
    expect(txns.pagination.totalCount).toBe(1);
    expect(txns.items).toEqual([expect.objectContaining({ amount: 50, type: "credit" })]);
    expect(JSON.stringify(txns)).not.toContain(a.account);
    const mine = await t.call(transactionRoutes.list);
    expect(accounts.accounts[0]?.id).toEqual(expect.any(String));
    expect(mine.items.map((x) => x.accountId)).not.toContain(accounts.accounts[0]?.id);
  });

  it("left A's ledger untouched by B's attempts", async () => {
    const bal = await t.call(accountRoutes.balance, { query: { accountId: a.account } });
    expect(bal).toMatchObject({ balance: 106, reserved: 10, available: 96 });
    expect(await t.verify()).toEqual([]);
  });
});
