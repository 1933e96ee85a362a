import type { RouteConfig } from "@hono/zod-openapi";
import type { CompiledQuery, KyselyPlugin } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { accountRoutes } from "../src/accounts/routes.ts";
import { createApp } from "../src/app.ts";
import type { ErrorBody, ErrorCode } from "../src/errors.ts";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import type { Logger } from "../src/logger.ts";
import { reservationRoutes } from "../src/reservations/routes.ts";
import { transactionRoutes } from "../src/transactions/routes.ts";
import { expectError } from "./contract.ts";
import { type ApiResponse, fundedAccount, makeLedger, type TestLedger } from "./harness.ts";

const STATUS_OF: Partial<Record<ErrorCode, number>> = {
  VALIDATION_ERROR: 400,
  UNAUTHORIZED: 401,
  INSUFFICIENT_CREDITS: 402,
  ACCOUNT_NOT_FOUND: 404,
  NOT_FOUND: 404,
  DUPLICATE_EXTERNAL_ID: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  INTERNAL_ERROR: 500,
};

/**
 * Asserts the exact error envelope {success:false, error:{code, message, details?}} (the shared
 * `expectError`), and besides: the code's documented status, a JSON Content-Type and a
 * non-empty message. @returns the error body
 */
function expectErrorShape(res: ApiResponse, status: number, code: ErrorCode): ErrorBody {
  const body = expectError(res, status, code);
  expect(STATUS_OF[code]).toBe(status);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  expect(body.error.message.length).toBeGreaterThan(0);
  return body;
}

/** The `details` of a VALIDATION_ERROR: one `{path, message}` per field problem. */
const fieldIssues = z.array(z.object({ path: z.string(), message: z.string() }));

describe("errors", () => {
  let t: TestLedger;
  let acc: string;
  beforeEach(async () => {
    t = await makeLedger();
    acc = await fundedAccount(t, "cust", 10);
  });
  afterEach(async () => t.close());

  /** Balance and transaction count of the test account. */
  const state = async () => {
    const bal = await t.call(accountRoutes.balance, { query: { accountId: "cust" } });
    const txns = await t.call(transactionRoutes.list, { query: { accountId: "cust" } });
    const accounts = await t.call(accountRoutes.list);
    return {
      balance: bal.balance,
      reserved: bal.reserved,
      txns: txns.pagination.totalCount,
      accounts: accounts.accounts.length,
    };
  };
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    t.api("POST", path, { body, headers });

  it("answers malformed JSON with 400 VALIDATION_ERROR and changes nothing", async () => {
    const before = await state();
    for (const text of ['{"accountId": "cust", "amount": 5', "not json", ""]) {
      const res = await post("/v1/accounts/credits/add", text);
      const err = expectErrorShape(res, 400, "VALIDATION_ERROR");
      expect(err.error.details).toEqual([expect.objectContaining({ path: "body" })]);
    }
    expect(await state()).toEqual(before);
  });

  it("answers a non-JSON body with 415 UNSUPPORTED_MEDIA_TYPE and changes nothing", async () => {
    const before = await state();
    const body = JSON.stringify({ accountId: "cust", amount: 5 });
    for (const type of ["text/plain", "application/x-www-form-urlencoded"]) {
      const res = await post("/v1/accounts/credits/add", body, { "Content-Type": type });
      expectErrorShape(res, 415, "UNSUPPORTED_MEDIA_TYPE");
    }
    const charset = await post("/v1/accounts/credits/add", body, {
      "Content-Type": "application/json; charset=utf-8",
    });
    expect(charset.status).toBe(200);
    expect((await state()).balance).toBe(before.balance + 5);
  });

  it("answers a body over 64 KiB with 413 PAYLOAD_TOO_LARGE, in-process and over HTTP", async () => {
    const before = await state();
    const big = { externalId: "big", name: "n", metadata: { pad: "x".repeat(70 * 1024) } };
    expectErrorShape(await post("/v1/accounts/create", big), 413, "PAYLOAD_TOO_LARGE");
    const base = await t.listen();
    const res = await fetch(`${base}/v1/accounts/create`, {
      method: "POST",
      headers: { "X-API-Key": t.key, "Content-Type": "application/json" },
      body: JSON.stringify(big),
    });
    expect(res.status).toBe(413);
    const parsed: unknown = await res.json();
    expect(parsed).toEqual({
      success: false,
      error: { code: "PAYLOAD_TOO_LARGE", message: expect.any(String) },
    });
    // just under the limit is not a 413 (metadata over 8 KiB is a 400 instead)
    const under = { externalId: "under", metadata: { pad: "x".repeat(60 * 1024) } };
    const underRes = await post("/v1/accounts/create", under);
    expectErrorShape(underRes, 400, "VALIDATION_ERROR");
    expect(await state()).toEqual(before);
  });

  it("uses the one error envelope for every kind of error", async () => {
    const cases: [Promise<ApiResponse>, number, ErrorCode][] = [
      [
        post("/v1/accounts/credits/add", { accountId: "cust", amount: -1 }),
        400,
        "VALIDATION_ERROR",
      ],
      [t.api("GET", "/v1/accounts", { key: null }), 401, "UNAUTHORIZED"],
      [
        post("/v1/accounts/credits/deduct", { accountId: "cust", amount: 11 }),
        402,
        "INSUFFICIENT_CREDITS",
      ],
      [t.api("GET", "/v1/accounts/get?accountId=ghost"), 404, "ACCOUNT_NOT_FOUND"],
      [t.api("GET", "/v1/ghost"), 404, "NOT_FOUND"],
      [post("/v1/accounts/create", { externalId: "cust" }), 409, "DUPLICATE_EXTERNAL_ID"],
      [
        post("/v1/accounts/create", "{}", { "Content-Type": "text/plain" }),
        415,
        "UNSUPPORTED_MEDIA_TYPE",
      ],
    ];
    for (const [pending, status, code] of cases) expectErrorShape(await pending, status, code);
  });

  it("gives VALIDATION_ERROR details as a list of {path, message}", async () => {
    const res = await post("/v1/accounts/credits/add", { amount: "x", description: 5 });
    const err = expectErrorShape(res, 400, "VALIDATION_ERROR");
    expect(Array.isArray(err.error.details)).toBe(true);
    const details = fieldIssues.parse(err.error.details);
    expect(details.map((d) => d.path).sort()).toEqual([
      "body.accountId",
      "body.amount",
      "body.description",
    ]);
    for (const d of details) expect(typeof d.message).toBe("string");
  });

  /** The message and `details` of a 400 VALIDATION_ERROR answer. */
  const invalid = (res: ApiResponse) => {
    const err = expectErrorShape(res, 400, "VALIDATION_ERROR");
    return { message: err.error.message, details: fieldIssues.parse(err.error.details) };
  };

  it("names a duplicate key, with its path, and changes nothing", async () => {
    const before = await state();
    const top = await post(
      "/v1/accounts/credits/add",
      '{"accountId":"cust","amount":5,"amount":6}',
    );
    expect(invalid(top)).toEqual({
      message: 'Malformed JSON: duplicate key "amount"',
      details: [{ path: "body.amount", message: 'duplicate key "amount"' }],
    });
    // Strings holding brackets, commas and escaped quotes before the duplicate, inside an array.
    const nested = [
      '{"externalId":"dup","name":"a {[,\\"]} b",',
      '"metadata":{"list":[1, {"x":"],"},\n {"a\\"b":1, "a\\u0022b" :2}]}}',
    ].join("");
    expect(invalid(await post("/v1/accounts/create", nested))).toEqual({
      message: 'Malformed JSON: duplicate key "a\\"b" in body.metadata.list.2',
      details: [{ path: 'body.metadata.list.2.a"b', message: 'duplicate key "a\\"b"' }],
    });
    const op =
      '{"path":"/v1/accounts/credits/add","body":{"accountId":"cust","amount":1,"amount":2}}';
    expect(invalid(await post("/v1/batch", `{"operations":[${op}]}`))).toEqual({
      message: 'Malformed JSON: duplicate key "amount" in body.operations.0.body',
      details: [{ path: "body.operations.0.body.amount", message: 'duplicate key "amount"' }],
    });
    // Any other malformed text keeps the general message.
    const broken = await post("/v1/accounts/credits/add", '{"accountId":"cust",}');
    expect(invalid(broken)).toEqual({
      message: "Malformed JSON in request body",
      details: [{ path: "body", message: "malformed JSON" }],
    });
    expect(await state()).toEqual(before);
  });

  it("says a query parameter or body field must be a number or an integer", async () => {
    const before = await state();
    const list = (query: string) => t.api("GET", `/v1/transactions?accountId=cust&${query}`);
    expect(invalid(await list("limit=abc"))).toEqual({
      message: "Invalid query.limit: must be a number",
      details: [{ path: "query.limit", message: "must be a number" }],
    });
    expect(invalid(await list("limit=1.5")).details).toEqual([
      { path: "query.limit", message: "must be an integer" },
    ]);
    expect(invalid(await list("offset=1e400")).details).toEqual([
      { path: "query.offset", message: "must be a finite number" },
    ]);
    const usage = { accountId: "cust", modelId: "gpt-4o", outputTokens: 10 };
    const record = (inputTokens: unknown) =>
      post("/v1/usage/record", { ...usage, inputTokens, cachedTokens: 0 });
    expect(invalid(await record(1.5))).toEqual({
      message: "Invalid body.inputTokens: must be an integer",
      details: [{ path: "body.inputTokens", message: "must be an integer" }],
    });
    expect(invalid(await record("9")).details).toEqual([
      { path: "body.inputTokens", message: "must be a number" },
    ]);
    // A literal no double holds exactly is a number, but not one this field can take.
    const long = `{"accountId":"cust","modelId":"gpt-4o","inputTokens":1.00000000000000001,"outputTokens":1}`;
    expect(invalid(await post("/v1/usage/record", long)).details).toEqual([
      { path: "body.inputTokens", message: "has too many digits, or is too large, for this field" },
    ]);
    // A batch operation is answered as its route alone answers.
    const batch = await post("/v1/batch", {
      operations: [{ path: "/v1/usage/record", body: { ...usage, inputTokens: 1.5 } }],
    });
    expect(batch.status).toBe(200);
    const [result] = z
      .object({ results: z.array(z.object({ status: z.number(), body: z.unknown() })) })
      .parse(batch.body).results;
    expect(result?.status).toBe(400);
    expect(result?.body).toEqual({
      success: false,
      error: {
        code: "VALIDATION_ERROR",
        message: "Invalid body.inputTokens: must be an integer",
        details: [{ path: "body.inputTokens", message: "must be an integer" }],
      },
    });
    expect(await state()).toEqual(before);
  });

  it("words the other wrong types, a missing field and an option outside its list", async () => {
    const res = await post("/v1/accounts/credits/add", { amount: "x", description: 5 });
    expect(invalid(res).details).toEqual([
      { path: "body.accountId", message: "required field missing" },
      { path: "body.amount", message: "must be a number" },
      { path: "body.description", message: "must be a string" },
    ]);
    const type = await t.api("GET", "/v1/transactions?accountId=cust&type=both");
    expect(invalid(type).details).toEqual([
      { path: "query.type", message: 'must be one of "credit", "debit"' },
    ]);
    // The batch envelope, validated without the route's strict-input shapes.
    expect(invalid(await post("/v1/batch", { atomic: "yes" })).details).toEqual([
      { path: "body.atomic", message: "must be true or false" },
      { path: "body.operations", message: "required field missing" },
    ]);
  });

  it("changes nothing on a failed request (402, 400, 404)", async () => {
    await t.call(reservationRoutes.create, { body: { accountId: acc, amount: 4 } });
    const before = await state();
    expect(before).toEqual({ balance: 10, reserved: 4, txns: 1, accounts: 1 });
    const failures: [RouteConfig, object, number, ErrorCode][] = [
      [ledgerRoutes.deduct, { accountId: acc, amount: 7 }, 402, "INSUFFICIENT_CREDITS"],
      [
        transactionRoutes.create,
        { accountId: acc, amount: 7, type: "debit" },
        402,
        "INSUFFICIENT_CREDITS",
      ],
      [reservationRoutes.create, { accountId: acc, amount: 6.5 }, 402, "INSUFFICIENT_CREDITS"],
      [ledgerRoutes.add, { accountId: acc, amount: 1.0000001 }, 400, "VALIDATION_ERROR"],
      [ledgerRoutes.add, { accountId: acc, amount: 5, metadata: "nope" }, 400, "VALIDATION_ERROR"],
      [ledgerRoutes.add, { accountId: "ghost", amount: 5 }, 404, "ACCOUNT_NOT_FOUND"],
      [accountRoutes.create, { externalId: "new", email: "bad" }, 400, "VALIDATION_ERROR"],
    ];
    for (const [route, body, status, code] of failures) await t.fail(route, { body }, status, code);
    expect(await state()).toEqual(before);
    expect(await t.verify()).toEqual([]);
  });

  describe("500 INTERNAL_ERROR", () => {
    const secretSql = () => `SELECT * FROM "accounts" WHERE api_key = '${t.key}'`;

    /** The real deps, but reads of the accounts table fail with an error naming SQL and the key. */
    function brokenApp(logged: unknown[]) {
      const failing: KyselyPlugin = {
        transformQuery(args) {
          if (JSON.stringify(args.node).includes('"name":"accounts"')) {
            const err = new Error(`SQLITE_IOERR: disk I/O error in ${secretSql()}`);
            throw err;
          }
          return args.node;
        },
        transformResult: async (args) => args.result,
      };
      const deps = t.ledger.deps;
      const logger: Logger = { info() {}, warn() {}, error: (obj) => logged.push(obj) };
      // Queries built per call go through the plugin; prepared (precompiled) ones through
      // executeQuery, which is wrapped to fail the same way.
      const withPlugin = deps.db.read.withPlugin(failing);
      const read = new Proxy(withPlugin, {
        get(target, prop, receiver) {
          if (prop !== "executeQuery") return Reflect.get(target, prop, receiver);
          return (query: CompiledQuery) => {
            if (query.sql.includes('"accounts"')) {
              throw new Error(`SQLITE_IOERR: disk I/O error in ${secretSql()}`);
            }
            return target.executeQuery(query);
          };
        },
      });
      return createApp({ ...deps, logger, db: { ...deps.db, read } });
    }

    it("hides the cause: no stack, SQL or key in the body", async () => {
      const logged: unknown[] = [];
      const app = brokenApp(logged);
      for (const path of ["/v1/accounts", "/v1/accounts/get?accountId=cust"]) {
        const res = await app.request(path, { headers: { "X-API-Key": t.key } });
        const text = await res.text();
        const body: unknown = JSON.parse(text);
        const parsed = { status: res.status, body, headers: res.headers };
        const err = expectErrorShape(parsed, 500, "INTERNAL_ERROR");
        expect(err.error).toEqual({ code: "INTERNAL_ERROR", message: expect.any(String) });
        for (const leak of [t.key, "SELECT", "accounts", "SQLITE", "Error:", "    at ", ".ts:"]) {
          expect(text).not.toContain(leak);
        }
      }
      expect(logged).toHaveLength(2);
      // the real app, over the same database, still works
      await t.call(accountRoutes.list);
    });

    it("is still a 401 for a missing key (auth does not touch the broken table)", async () => {
      const app = brokenApp([]);
      const res = await app.request("/v1/accounts");
      expect(res.status).toBe(401);
      expectError({ status: res.status, body: await res.json() }, 401, "UNAUTHORIZED");
    });
  });
});
