import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ApiResponse, fundedAccount, makeLedger, type TestLedger } from "./harness.ts";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/;

/** Asserts an error response: status, code, and the exact error envelope. */
function expectError(res: ApiResponse, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.body.success).toBe(false);
  expect(res.body.error.code).toBe(code);
  expect(typeof res.body.error.message).toBe("string");
  expect(Object.keys(res.body).sort()).toEqual(["error", "success"]);
}

/** Asserts a 400 VALIDATION_ERROR whose details name `path`. */
function expectValidation(res: ApiResponse, path: string) {
  expectError(res, 400, "VALIDATION_ERROR");
  const paths = (res.body.error.details as { path: string }[]).map((d) => d.path);
  expect(paths).toContain(path);
}

describe("accounts", () => {
  let t: TestLedger;
  beforeEach(async () => {
    t = await makeLedger();
  });
  afterEach(async () => t.close());

  const create = (body: unknown) => t.api("POST", "/v1/accounts/create", { body });

  describe("create", () => {
    it("creates an account with every field", async () => {
      const res = await create({
        externalId: "user_1",
        name: "Ada Lovelace",
        email: "ada@example.com",
        metadata: { tier: "gold", nested: { a: [1, 2] } },
      });
      expect(res.status).toBe(200);
      expect(res.body.success).toBe(true);
      const a = res.body.account;
      expect(a).toMatchObject({
        developerId: t.projectId,
        externalId: "user_1",
        name: "Ada Lovelace",
        email: "ada@example.com",
        balance: 0,
        metadata: { tier: "gold", nested: { a: [1, 2] } },
      });
      expect(typeof a.id).toBe("string");
      expect(a.id).not.toBe("user_1");
      expect(a.createdAt).toMatch(ISO);
      expect(a.updatedAt).toMatch(ISO);
      const got = await t.api("GET", `/v1/accounts/get?accountId=${a.id}`);
      expect(got.body).toEqual(a);
    });

    it("defaults name and email to empty strings and metadata to null", async () => {
      const res = await create({ externalId: "only_ext" });
      expect(res.status).toBe(200);
      expect(res.body.success).toBe(true);
      expect(res.body.account).toMatchObject({
        externalId: "only_ext",
        name: "",
        email: "",
        metadata: null,
        balance: 0,
      });
    });

    it("rejects a duplicate externalId with 409 and keeps one account", async () => {
      expect((await create({ externalId: "dup" })).status).toBe(200);
      expectError(await create({ externalId: "dup", name: "other" }), 409, "DUPLICATE_EXTERNAL_ID");
      const list = await t.api("GET", "/v1/accounts");
      expect(list.body.accounts).toHaveLength(1);
      expect(list.body.accounts[0].name).toBe("");
    });

    it("allows the same externalId in another project", async () => {
      await create({ externalId: "shared" });
      const b = await t.newProject("other");
      const res = await t.api("POST", "/v1/accounts/create", {
        body: { externalId: "shared" },
        key: b.key,
      });
      expect(res.status).toBe(200);
      expect(res.body.account.developerId).toBe(b.projectId);
    });

    it.each([
      ["an invalid email", { externalId: "x", email: "not-an-email" }, "body.email"],
      ["a missing externalId", { name: "no ext" }, "body.externalId"],
      ["an empty externalId", { externalId: "" }, "body.externalId"],
      ["an externalId over 255 chars", { externalId: "e".repeat(256) }, "body.externalId"],
      ["a name over 255 chars", { externalId: "x", name: "n".repeat(256) }, "body.name"],
      ["metadata that is not an object", { externalId: "x", metadata: [1] }, "body.metadata"],
    ])("rejects %s with 400 naming the field", async (_label, body, path) => {
      expectValidation(await create(body), path);
      expect((await t.api("GET", "/v1/accounts")).body.accounts).toEqual([]);
    });

    it("accepts an externalId of exactly 255 chars", async () => {
      const res = await create({ externalId: "e".repeat(255) });
      expect(res.status).toBe(200);
    });

    it("enforces the metadata limits: 50 keys, 5 levels, 8 KiB", async () => {
      const keys = (n: number) =>
        Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));
      const nest = (levels: number): unknown => (levels === 0 ? 1 : { n: nest(levels - 1) });
      expect((await create({ externalId: "k50", metadata: keys(50) })).status).toBe(200);
      expectValidation(await create({ externalId: "k51", metadata: keys(51) }), "body.metadata");
      expect((await create({ externalId: "d5", metadata: nest(5) })).status).toBe(200);
      expectValidation(await create({ externalId: "d6", metadata: nest(6) }), "body.metadata");
      expect((await create({ externalId: "s8", metadata: { s: "x".repeat(8000) } })).status).toBe(
        200,
      );
      expectValidation(
        await create({ externalId: "s9", metadata: { s: "x".repeat(8 * 1024) } }),
        "body.metadata",
      );
      const ids = (await t.api("GET", "/v1/accounts")).body.accounts.map(
        (a: { externalId: string }) => a.externalId,
      );
      expect(ids).toEqual(["k50", "d5", "s8"]);
    });
  });

  describe("list", () => {
    it("lists every account without success field or pagination", async () => {
      await create({ externalId: "a" });
      await create({ externalId: "b" });
      const res = await t.api("GET", "/v1/accounts");
      expect(res.status).toBe(200);
      expect(Object.keys(res.body)).toEqual(["accounts"]);
      expect(res.body.accounts.map((a: { externalId: string }) => a.externalId)).toEqual([
        "a",
        "b",
      ]);
      expect(res.body.accounts[0]).toMatchObject({ balance: 0, developerId: t.projectId });
    });

    it("bounds the list at 50 by default and then reports pagination", async () => {
      for (let i = 0; i < 52; i++) await create({ externalId: `bulk-${i}` });
      const res = await t.api("GET", "/v1/accounts");
      expect(res.status).toBe(200);
      expect(res.body.accounts).toHaveLength(50);
      expect(res.body.pagination).toEqual({ limit: 50, offset: 0, totalCount: 52, hasMore: true });
      const rest = await t.api("GET", "/v1/accounts?offset=50");
      expect(rest.body.accounts.map((a: { externalId: string }) => a.externalId)).toEqual([
        "bulk-50",
        "bulk-51",
      ]);
      expect((await t.api("GET", "/v1/accounts?limit=501")).status).toBe(400);
    });

    it("paginates with limit/offset and reports pagination", async () => {
      for (const id of ["a", "b", "c"]) await create({ externalId: id });
      const first = await t.api("GET", "/v1/accounts?limit=2");
      expect(first.status).toBe(200);
      expect(first.body.success).toBeUndefined();
      expect(first.body.accounts).toHaveLength(2);
      expect(first.body.pagination).toEqual({ limit: 2, offset: 0, totalCount: 3, hasMore: true });
      const last = await t.api("GET", "/v1/accounts?limit=2&offset=2");
      expect(last.body.accounts.map((a: { externalId: string }) => a.externalId)).toEqual(["c"]);
      expect(last.body.pagination).toEqual({ limit: 2, offset: 2, totalCount: 3, hasMore: false });
      const offsetOnly = await t.api("GET", "/v1/accounts?offset=1");
      expect(offsetOnly.body.pagination).toEqual({
        limit: 50,
        offset: 1,
        totalCount: 3,
        hasMore: false,
      });
      expect(offsetOnly.body.accounts).toHaveLength(2);
    });

    it("rejects limit 0, limit 501 and a negative offset", async () => {
      expectValidation(await t.api("GET", "/v1/accounts?limit=0"), "query.limit");
      expectValidation(await t.api("GET", "/v1/accounts?limit=501"), "query.limit");
      expectValidation(await t.api("GET", "/v1/accounts?offset=-1"), "query.offset");
    });
  });

  describe("get", () => {
    let id: string;
    beforeEach(async () => {
      id = (await create({ externalId: "cust_9", name: "Nine" })).body.account.id;
    });

    it("finds the account by internal id, by externalId in accountId, and by externalId=", async () => {
      for (const q of [`accountId=${id}`, "accountId=cust_9", "externalId=cust_9"]) {
        const res = await t.api("GET", `/v1/accounts/get?${q}`);
        expect(res.status).toBe(200);
        expect(res.body.success).toBeUndefined();
        expect(res.body).toMatchObject({ id, externalId: "cust_9", name: "Nine", balance: 0 });
      }
    });

    it("answers 404 ACCOUNT_NOT_FOUND for an unknown id or externalId", async () => {
      expectError(await t.api("GET", "/v1/accounts/get?accountId=nope"), 404, "ACCOUNT_NOT_FOUND");
      expectError(await t.api("GET", "/v1/accounts/get?externalId=nope"), 404, "ACCOUNT_NOT_FOUND");
      // an internal id is not an externalId
      expectError(
        await t.api("GET", `/v1/accounts/get?externalId=${id}`),
        404,
        "ACCOUNT_NOT_FOUND",
      );
    });

    it("answers 400 when neither accountId nor externalId is given", async () => {
      expectValidation(await t.api("GET", "/v1/accounts/get"), "query.accountId");
    });

    it("reflects the balance after credits are added", async () => {
      await t.api("POST", "/v1/accounts/credits/add", { body: { accountId: id, amount: 12.5 } });
      expect((await t.api("GET", `/v1/accounts/get?accountId=${id}`)).body.balance).toBe(12.5);
    });
  });

  describe("balance view", () => {
    it("returns accountId, externalId, balance, reserved, available by either id", async () => {
      const id = await fundedAccount(t, "bal_1", 100);
      const r = await t.api("POST", "/v1/reservations/create", {
        body: { accountId: id, amount: 30 },
      });
      expect(r.status).toBe(200);
      const expected = {
        accountId: id,
        externalId: "bal_1",
        balance: 100,
        reserved: 30,
        available: 70,
      };
      for (const q of [`accountId=${id}`, "accountId=bal_1", "externalId=bal_1"]) {
        const res = await t.api("GET", `/v1/accounts/balance?${q}`);
        expect(res.status).toBe(200);
        expect(res.body).toEqual(expected);
      }
    });

    it("is all zeros for a new account", async () => {
      const id = await fundedAccount(t, "zero");
      const res = await t.api("GET", "/v1/accounts/balance?externalId=zero");
      expect(res.body).toEqual({
        accountId: id,
        externalId: "zero",
        balance: 0,
        reserved: 0,
        available: 0,
      });
    });

    it("answers 400 without a parameter and 404 for an unknown account", async () => {
      expectValidation(await t.api("GET", "/v1/accounts/balance"), "query.accountId");
      expectError(
        await t.api("GET", "/v1/accounts/balance?externalId=ghost"),
        404,
        "ACCOUNT_NOT_FOUND",
      );
      expectError(
        await t.api("GET", "/v1/accounts/balance?accountId=ghost"),
        404,
        "ACCOUNT_NOT_FOUND",
      );
    });
  });
});
