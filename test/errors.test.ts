import type { CompiledQuery, KyselyPlugin } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createApp } from "../src/app.ts";
import type { Logger } from "../src/http/context.ts";
import { type ApiResponse, fundedAccount, makeLedger, type TestLedger } from "./harness.ts";

const STATUS_OF: Record<string, number> = {
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

/** Asserts the exact error envelope {success:false, error:{code, message, details?}}. */
function expectErrorShape(res: ApiResponse, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(STATUS_OF[code]).toBe(status);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  expect(Object.keys(res.body).sort()).toEqual(["error", "success"]);
  expect(res.body.success).toBe(false);
  const keys = Object.keys(res.body.error);
  expect(keys).toEqual(expect.arrayContaining(["code", "message"]));
  expect(keys.every((k) => ["code", "message", "details"].includes(k))).toBe(true);
  expect(res.body.error.code).toBe(code);
  expect(typeof res.body.error.message).toBe("string");
  expect(res.body.error.message.length).toBeGreaterThan(0);
}

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
    const bal = await t.api("GET", "/v1/accounts/balance?accountId=cust");
    const txns = await t.api("GET", "/v1/transactions?accountId=cust");
    const accounts = await t.api("GET", "/v1/accounts");
    return {
      balance: bal.body.balance,
      reserved: bal.body.reserved,
      txns: txns.body.pagination.totalCount,
      accounts: accounts.body.accounts.length,
    };
  };
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    t.api("POST", path, { body, headers });

  it("answers malformed JSON with 400 VALIDATION_ERROR and changes nothing", async () => {
    const before = await state();
    for (const text of ['{"accountId": "cust", "amount": 5', "not json", ""]) {
      const res = await post("/v1/accounts/credits/add", text);
      expectErrorShape(res, 400, "VALIDATION_ERROR");
      expect(res.body.error.details).toEqual([expect.objectContaining({ path: "body" })]);
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
    const parsed = await res.json();
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
    const cases: [Promise<ApiResponse>, number, string][] = [
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
    expectErrorShape(res, 400, "VALIDATION_ERROR");
    const details = res.body.error.details as { path: string; message: string }[];
    expect(details.map((d) => d.path).sort()).toEqual([
      "body.accountId",
      "body.amount",
      "body.description",
    ]);
    for (const d of details) expect(typeof d.message).toBe("string");
  });

  it("changes nothing on a failed request (402, 400, 404)", async () => {
    await t.api("POST", "/v1/reservations/create", { body: { accountId: acc, amount: 4 } });
    const before = await state();
    expect(before).toEqual({ balance: 10, reserved: 4, txns: 1, accounts: 1 });
    const failures = [
      post("/v1/accounts/credits/deduct", { accountId: acc, amount: 7 }),
      post("/v1/transactions/create", { accountId: acc, amount: 7, type: "debit" }),
      post("/v1/reservations/create", { accountId: acc, amount: 6.5 }),
      post("/v1/accounts/credits/add", { accountId: acc, amount: 1.0000001 }),
      post("/v1/accounts/credits/add", { accountId: acc, amount: 5, metadata: "nope" }),
      post("/v1/accounts/credits/add", { accountId: "ghost", amount: 5 }),
      post("/v1/accounts/create", { externalId: "new", email: "bad" }),
    ];
    const statuses = [];
    for (const f of failures) statuses.push((await f).status);
    expect(statuses).toEqual([402, 402, 402, 400, 400, 404, 400]);
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
        const parsed = { status: res.status, body: JSON.parse(text), headers: res.headers };
        expectErrorShape(parsed, 500, "INTERNAL_ERROR");
        expect(parsed.body.error).toEqual({ code: "INTERNAL_ERROR", message: expect.any(String) });
        for (const leak of [t.key, "SELECT", "accounts", "SQLITE", "Error:", "    at ", ".ts:"]) {
          expect(text).not.toContain(leak);
        }
      }
      expect(logged).toHaveLength(2);
      // the real app, over the same database, still works
      expect((await t.api("GET", "/v1/accounts")).status).toBe(200);
    });

    it("is still a 401 for a missing key (auth does not touch the broken table)", async () => {
      const app = brokenApp([]);
      const res = await app.request("/v1/accounts");
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ success: false, error: { code: "UNAUTHORIZED" } });
    });
  });
});
