/**
 * Idempotency keys (docs/api.md#idempotency): replay of the first answer, 409 for another body
 * or path, nothing stored for a failure, the key's bounds, project scope, 24 hours, every POST.
 * Requests go through the typed client (test/harness.ts's `t.client`) with the key in its
 * `headers`; bodies its types cannot write (the same JSON reordered as text, an unknown field)
 * go raw through `t.api`.
 */
import type { RouteConfig } from "@hono/zod-openapi";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { components, LedgerClient } from "../src/client/index.ts";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import { expectError, type OkBody, responseProblems } from "./contract.ts";
import { expectOk, fundedAccount, makeLedger, type TestLedger } from "./harness.ts";

type AddBody = components["schemas"]["AddCreditsRequest"];
type DeductBody = components["schemas"]["DeductCreditsRequest"];

/** An answer, raw or through the client: its status, its body and its headers. */
interface Answer {
  status: number;
  body: unknown;
  headers: Headers;
}

/** What a call of the typed client resolves to. */
interface Outcome<D> {
  data?: D;
  error?: unknown;
  response: Response;
}

/** The answer of a client call, its body being `data` or `error`. */
function answer<D>(outcome: Outcome<D>): Answer & { data?: D } {
  const { data, error, response } = outcome;
  return { status: response.status, body: data ?? error, headers: response.headers, data };
}

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

  /**
   * POSTs `body` (JSON text as given, or a value) to `route` with an Idempotency-Key, raw.
   * @returns the raw answer, with its headers
   */
  const post = (route: RouteConfig, body: unknown, key: string) =>
    t.api("POST", route.path, { body, headers: { "Idempotency-Key": key } });
  /** Asserts that `res`, a raw answer of `route`, is 200 with the route's 200 body. @returns it */
  const okBody = <R extends RouteConfig>(route: R, res: Answer): OkBody<R> => {
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(responseProblems(route, 200, res.body)).toEqual([]);
    return res.body as OkBody<R>;
  };
  /** The client of the project (`apiKey` unset) or of another key. */
  const clientOf = (apiKey?: string): LedgerClient =>
    apiKey === undefined ? t.client : t.clientFor(apiKey);
  const headers = (key: string) => ({ "Idempotency-Key": key });
  /** An add through the client with an Idempotency-Key. */
  const add = async (body: AddBody, key: string, apiKey?: string) =>
    answer(
      await clientOf(apiKey).POST("/v1/accounts/credits/add", { body, headers: headers(key) }),
    );
  /** A deduction through the client with an Idempotency-Key. */
  const deduct = async (body: DeductBody, key: string, apiKey?: string) =>
    answer(
      await clientOf(apiKey).POST("/v1/accounts/credits/deduct", { body, headers: headers(key) }),
    );
  /** Asserts a 200 answer of the client. @returns its body */
  const ok = <D>(res: Answer & { data?: D }): D => {
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    if (res.data === undefined) throw new Error("no body");
    return res.data;
  };
  const balanceOf = async (externalId: string, apiKey?: string) => {
    const query = { externalId };
    return expectOk(await clientOf(apiKey).GET("/v1/accounts/balance", { params: { query } }))
      .balance;
  };
  const txCount = async (externalId: string) => {
    const query = { accountId: externalId };
    return expectOk(await t.client.GET("/v1/transactions", { params: { query } })).pagination
      .totalCount;
  };
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
  const expectReplay = (first: Answer, again: Answer) => {
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
    const first = await add(body, "k-add");
    expect(ok(first)).toMatchObject({ success: true, balance: 15, added: 5 });
    t.advance(60_000);
    const same = await add(body, "k-add");
    expectReplay(first, same);
    // Same JSON value, other key order and whitespace: text the client does not write, raw.
    const reordered = `{ "metadata": {"b":[1, 2],   "a":1},\n "description":"top-up", "amount": 5,"accountId":"u1" }`;
    const raw = await post(ledgerRoutes.add, reordered, "k-add");
    expectReplay(first, raw);
    okBody(ledgerRoutes.add, raw);
    expect(await balanceOf("u1")).toBe(15);
    expect(await txCount("u1")).toBe(2);
  });

  it("answers 409 IDEMPOTENCY_KEY_REUSED for another body or another path", async () => {
    await fundedAccount(t, "u1", 100);
    const first = await deduct({ accountId: "u1", amount: 5 }, "k1");
    ok(first);
    const before = await snapshot();
    const otherBodies: DeductBody[] = [
      { accountId: "u1", amount: 6 },
      { accountId: "u1", amount: 5, description: "x" },
      { accountId: "u1", amount: 5, metadata: { n: 1 } },
    ];
    for (const body of otherBodies) {
      const res = await deduct(body, "k1");
      expectError(res, 409, "IDEMPOTENCY_KEY_REUSED");
      expect(res.headers.get("Idempotent-Replayed")).toBeNull();
    }
    const otherPath = await add({ accountId: "u1", amount: 5 }, "k1");
    expectError(otherPath, 409, "IDEMPOTENCY_KEY_REUSED");
    expect(await snapshot()).toBe(before);
    expect(await balanceOf("u1")).toBe(95);
    // The original request still replays.
    expectReplay(first, await deduct({ accountId: "u1", amount: 5 }, "k1"));
  });

  it("stores nothing for a failed request: a 402 retried after a top-up succeeds", async () => {
    await fundedAccount(t, "u1", 10);
    const body = { accountId: "u1", amount: 50 };
    const failed = await deduct(body, "k-retry");
    expectError(failed, 402, "INSUFFICIENT_CREDITS");
    const again = await deduct(body, "k-retry");
    expectError(again, 402, "INSUFFICIENT_CREDITS");
    expect(again.headers.get("Idempotent-Replayed")).toBeNull();
    expectOk(
      await t.client.POST("/v1/accounts/credits/add", { body: { accountId: "u1", amount: 100 } }),
    );
    const done = await deduct(body, "k-retry");
    expect(ok(done)).toMatchObject({ balance: 60, deducted: 50 });
    expectReplay(done, await deduct(body, "k-retry"));
    expect(await balanceOf("u1")).toBe(60);
    expect(await txCount("u1")).toBe(3);
    // A 400 stores nothing either: the key is still free for a valid request elsewhere.
    const bad = await add({ accountId: "u1", amount: -1 }, "k-400");
    expectError(bad, 400, "VALIDATION_ERROR");
    const good = await add({ accountId: "u1", amount: 1 }, "k-400");
    ok(good);
    expect(await balanceOf("u1")).toBe(61);
  });

  it("accepts keys of 1 to 255 characters and rejects longer ones", async () => {
    await fundedAccount(t, "u1", 10);
    const body = { accountId: "u1", amount: 1 };
    const tooLong = await add(body, "x".repeat(256));
    expectError(tooLong, 400, "VALIDATION_ERROR");
    const empty = await add(body, "");
    expectError(empty, 400, "VALIDATION_ERROR");
    expect(await balanceOf("u1")).toBe(10);
    const max = await add(body, "y".repeat(255));
    ok(max);
    const one = await add(body, "z");
    ok(one);
    expectReplay(max, await add(body, "y".repeat(255)));
    expect(await balanceOf("u1")).toBe(12);
  });

  it("scopes keys to the project", async () => {
    const b = await t.newProject("b");
    await fundedAccount(t, "u1", 10);
    const createB = expectOk(
      await t.clientFor(b.key).POST("/v1/accounts/create", { body: { externalId: "u1" } }),
    );
    const body = { accountId: "u1", amount: 7 };
    const inA = await add(body, "shared-key");
    const inB = await add(body, "shared-key", b.key);
    expect(inB.headers.get("Idempotent-Replayed")).toBeNull();
    expect(ok(inB).accountId).toBe(createB.account.id);
    expect(ok(inB).accountId).not.toBe(ok(inA).accountId);
    expect(await balanceOf("u1")).toBe(17);
    expect(await balanceOf("u1", b.key)).toBe(7);
    // B may even use the key with another body: it is B's own key.
    const other = await deduct({ accountId: "u1", amount: 2 }, "k2", b.key);
    ok(other);
    ok(await add(body, "k2"));
    expect(await balanceOf("u1")).toBe(24);
    expect(await balanceOf("u1", b.key)).toBe(5);
  });

  it("forgets a key after 24 hours", async () => {
    await fundedAccount(t, "u1", 10);
    const body = { accountId: "u1", amount: 3 };
    const first = await add(body, "k-day");
    expect(ok(first).balance).toBe(13);
    t.advance(DAY_MS - 1);
    expectReplay(first, await add(body, "k-day"));
    const changed = await add({ ...body, amount: 4 }, "k-day");
    expectError(changed, 409, "IDEMPOTENCY_KEY_REUSED");
    expect(await balanceOf("u1")).toBe(13);
    t.advance(1);
    const later = await add(body, "k-day");
    expect(later.headers.get("Idempotent-Replayed")).toBeNull();
    expect(ok(later).balance).toBe(16);
    expectReplay(later, await add(body, "k-day"));
    t.advance(DAY_MS + 1);
    // Past 24 hours even another body runs under the old key.
    const reused = await deduct({ accountId: "u1", amount: 1 }, "k-day");
    ok(reused);
    expect(await balanceOf("u1")).toBe(15);
    expect(await txCount("u1")).toBe(4);
  });

  it("works on every POST endpoint", async () => {
    const accountId = await fundedAccount(t, "u1", 1000);
    const c = t.client;
    const plan = expectOk(
      await c.POST("/v1/plans/create", { body: { name: "seed", amount: 1, interval: "month" } }),
    );
    const planId = plan.plan.id;
    expectOk(await c.POST("/v1/accounts/credits/add", { body: { accountId, amount: 1 } }));
    const hold = async (amount: number) =>
      expectOk(await c.POST("/v1/reservations/create", { body: { accountId, amount } })).reservation
        .id;
    const toConfirm = await hold(10);
    const toCancel = await hold(20);
    type Send = (key: string) => Promise<Outcome<unknown>>;
    /** `[path, the request with a key, another body with the same key]` */
    const cases: Array<[string, Send, Send]> = [
      [
        "/v1/accounts/create",
        (key) =>
          c.POST("/v1/accounts/create", {
            body: { externalId: "u2", metadata: { tier: "pro" } },
            headers: headers(key),
          }),
        (key) =>
          c.POST("/v1/accounts/create", { body: { externalId: "u3" }, headers: headers(key) }),
      ],
      [
        "/v1/accounts/credits/add",
        (key) =>
          c.POST("/v1/accounts/credits/add", {
            body: { accountId, amount: 5, paymentMethod: "card" },
            headers: headers(key),
          }),
        (key) =>
          c.POST("/v1/accounts/credits/add", {
            body: { accountId, amount: 5 },
            headers: headers(key),
          }),
      ],
      [
        "/v1/accounts/credits/deduct",
        (key) =>
          c.POST("/v1/accounts/credits/deduct", {
            body: { accountId, amount: 3 },
            headers: headers(key),
          }),
        (key) =>
          c.POST("/v1/accounts/credits/deduct", {
            body: { accountId, amount: 3.5 },
            headers: headers(key),
          }),
      ],
      [
        "/v1/reservations/create",
        (key) =>
          c.POST("/v1/reservations/create", {
            body: { accountId, amount: 7, operation: "op", model: "gpt-4o" },
            headers: headers(key),
          }),
        (key) =>
          c.POST("/v1/reservations/create", {
            body: { accountId, amount: 7, operation: "op2", model: "gpt-4o" },
            headers: headers(key),
          }),
      ],
      [
        "/v1/reservations/confirm",
        (key) =>
          c.POST("/v1/reservations/confirm", {
            body: { reservationId: toConfirm, actualAmount: 4 },
            headers: headers(key),
          }),
        (key) =>
          c.POST("/v1/reservations/confirm", {
            body: { reservationId: toConfirm, actualAmount: 5 },
            headers: headers(key),
          }),
      ],
      [
        "/v1/reservations/cancel",
        (key) =>
          c.POST("/v1/reservations/cancel", {
            body: { reservationId: toCancel },
            headers: headers(key),
          }),
        (key) =>
          c.POST("/v1/reservations/cancel", {
            body: { reservationId: toConfirm },
            headers: headers(key),
          }),
      ],
      [
        "/v1/plans/create",
        (key) =>
          c.POST("/v1/plans/create", {
            body: { name: "Pro", amount: 50, interval: "month", occurrences: 3 },
            headers: headers(key),
          }),
        (key) =>
          c.POST("/v1/plans/create", {
            body: { name: "Pro", amount: 50, interval: "month", occurrences: null },
            headers: headers(key),
          }),
      ],
      [
        "/v1/accounts/plans/assign",
        (key) =>
          c.POST("/v1/accounts/plans/assign", {
            body: { accountId, planId },
            headers: headers(key),
          }),
        (key) =>
          c.POST("/v1/accounts/plans/assign", {
            body: { accountId, planId, startMode: "next_interval" },
            headers: headers(key),
          }),
      ],
      [
        "/v1/transactions/create",
        (key) =>
          c.POST("/v1/transactions/create", {
            body: { accountId, amount: 2, type: "debit", description: "fix" },
            headers: headers(key),
          }),
        (key) =>
          c.POST("/v1/transactions/create", {
            body: { accountId, amount: 2, type: "credit", description: "fix" },
            headers: headers(key),
          }),
      ],
      [
        "/v1/usage/record",
        (key) =>
          c.POST("/v1/usage/record", {
            body: { accountId, modelId: "gpt-4o", inputTokens: 100, outputTokens: 10 },
            headers: headers(key),
          }),
        (key) =>
          c.POST("/v1/usage/record", {
            body: { accountId, modelId: "gpt-4o", inputTokens: 100, outputTokens: 11 },
            headers: headers(key),
          }),
      ],
      [
        "/v1/models/calculate",
        (key) =>
          c.POST("/v1/models/calculate", {
            body: { modelId: "gpt-4o", inputTokens: 1000, outputTokens: 500 },
            headers: headers(key),
          }),
        (key) =>
          c.POST("/v1/models/calculate", {
            body: { modelId: "gpt-4o", inputTokens: 1000, outputTokens: 500, cachedTokens: 1 },
            headers: headers(key),
          }),
      ],
    ];
    for (const [i, [path, send, sendOther]] of cases.entries()) {
      const key = `every-${i}`;
      const before = await snapshot();
      const first = answer(await send(key));
      expect(ok(first), path).toMatchObject({ success: true });
      const afterFirst = await snapshot();
      if (path !== "/v1/models/calculate") expect(afterFirst, path).not.toBe(before);
      t.advance(1000);
      const again = answer(await send(key));
      expectReplay(first, again);
      expect(await snapshot(), `${path} applied twice`).toBe(afterFirst);
      const reused = answer(await sendOther(key));
      expectError(reused, 409, "IDEMPOTENCY_KEY_REUSED");
    }
    // 1000 + 1 + 5 − 3 − 4 (confirm) + 1 (plan grant) − 2 = 998
    expect(await balanceOf("u1")).toBe(998);
  });

  it("treats a body with an extra field as another body: 409", async () => {
    await fundedAccount(t, "u1", 10);
    const body = { accountId: "u1", amount: 1 };
    ok(await add(body, "k-extra"));
    // An optional field the first body left out (an undefined one is a 400 before this:
    // docs/api.md#strict-input).
    const extra = await post(ledgerRoutes.add, { ...body, description: "hello" }, "k-extra");
    // Only the same JSON value replays; another body is 409 (docs/api.md#idempotency).
    expect(extra.headers.get("Idempotent-Replayed")).toBeNull();
    expectError(extra, 409, "IDEMPOTENCY_KEY_REUSED");
    expect(await balanceOf("u1")).toBe(11);
  });
});
