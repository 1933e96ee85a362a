/**
 * Accounts (docs/api.md#accounts): create, list, get and the balance view, called through the
 * typed client (test/harness.ts's `t.client`); bodies its types refuse (a missing `externalId`,
 * metadata that is not an object) go raw through `t.fail`.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { accountRoutes } from "../src/accounts/routes.ts";
import type { components } from "../src/client/index.ts";
import type { ErrorBody } from "../src/errors.ts";
import { expectFailure, expectOk, fundedAccount, makeLedger, type TestLedger } from "./harness.ts";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/;

/** The `details` of a VALIDATION_ERROR: one `{path, message}` per field problem. */
const fieldIssues = z.array(z.object({ path: z.string(), message: z.string() }));

describe("accounts", () => {
  let t: TestLedger;
  beforeEach(async () => {
    t = await makeLedger();
  });
  afterEach(async () => t.close());

  type CreateBody = components["schemas"]["CreateAccountRequest"];
  const postCreate = (body: CreateBody) => t.client.POST("/v1/accounts/create", { body });
  const create = async (body: CreateBody) => expectOk(await postCreate(body));
  const list = async (query: { limit?: number; offset?: number } = {}) =>
    expectOk(await t.client.GET("/v1/accounts", { params: { query } }));
  const externalIds = async () => (await list()).accounts.map((a) => a.externalId);

  /** Asserts that an answer is a 400 VALIDATION_ERROR whose details name `path`. */
  function expectValidation(err: ErrorBody, path: string) {
    expect(fieldIssues.parse(err.error.details).map((d) => d.path)).toContain(path);
  }
  /** Asserts that the client's call answered 400 VALIDATION_ERROR naming `path`. */
  const invalid = (outcome: { error?: unknown; response: Response }, path: string) =>
    expectValidation(expectFailure(outcome, 400, "VALIDATION_ERROR"), path);

  describe("create", () => {
    it("creates an account with every field", async () => {
      const body = await create({
        externalId: "user_1",
        name: "Ada Lovelace",
        email: "ada@example.com",
        metadata: { tier: "gold", nested: { a: [1, 2] } },
      });
      expect(body.success).toBe(true);
      const a = body.account;
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
      const got = expectOk(
        await t.client.GET("/v1/accounts/get", { params: { query: { accountId: a.id } } }),
      );
      expect(got).toEqual(a);
    });

    it("defaults name and email to empty strings and metadata to null", async () => {
      const body = await create({ externalId: "only_ext" });
      expect(body.success).toBe(true);
      expect(body.account).toMatchObject({
        externalId: "only_ext",
        name: "",
        email: "",
        metadata: null,
        balance: 0,
      });
    });

    it("rejects a duplicate externalId with 409 and keeps one account", async () => {
      await create({ externalId: "dup" });
      expectFailure(
        await postCreate({ externalId: "dup", name: "other" }),
        409,
        "DUPLICATE_EXTERNAL_ID",
      );
      const listed = await list();
      expect(listed.accounts).toHaveLength(1);
      expect(listed.accounts[0]?.name).toBe("");
    });

    it("allows the same externalId in another project", async () => {
      await create({ externalId: "shared" });
      const b = await t.newProject("other");
      const { account } = expectOk(
        await t.clientFor(b.key).POST("/v1/accounts/create", { body: { externalId: "shared" } }),
      );
      expect(account.developerId).toBe(b.projectId);
    });

    it.each([
      ["an invalid email", { externalId: "x", email: "not-an-email" }, "body.email"],
      ["an empty externalId", { externalId: "" }, "body.externalId"],
      ["an externalId over 255 chars", { externalId: "e".repeat(256) }, "body.externalId"],
      ["a name over 255 chars", { externalId: "x", name: "n".repeat(256) }, "body.name"],
    ])("rejects %s with 400 naming the field", async (_label, body: CreateBody, path) => {
      invalid(await postCreate(body), path);
      expect((await list()).accounts).toEqual([]);
    });

    // Bodies the client's types refuse, sent raw.
    it.each([
      ["a missing externalId", { name: "no ext" }, "body.externalId"],
      ["metadata that is not an object", { externalId: "x", metadata: [1] }, "body.metadata"],
    ])("rejects %s with 400 naming the field", async (_label, body, path) => {
      expectValidation(await t.fail(accountRoutes.create, { body }, 400, "VALIDATION_ERROR"), path);
      expect((await list()).accounts).toEqual([]);
    });

    it("accepts an externalId of exactly 255 chars", async () => {
      const { account } = await create({ externalId: "e".repeat(255) });
      expect(account.externalId).toBe("e".repeat(255));
    });

    it("enforces the metadata limits: 50 keys, 5 levels, 8 KiB", async () => {
      const keys = (n: number) =>
        Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));
      const nest = (levels: number): Record<string, unknown> =>
        levels === 1 ? { n: 1 } : { n: nest(levels - 1) };
      const rejects = async (body: CreateBody) => invalid(await postCreate(body), "body.metadata");
      await create({ externalId: "k50", metadata: keys(50) });
      await rejects({ externalId: "k51", metadata: keys(51) });
      await create({ externalId: "d5", metadata: nest(5) });
      await rejects({ externalId: "d6", metadata: nest(6) });
      await create({ externalId: "s8", metadata: { s: "x".repeat(8000) } });
      await rejects({ externalId: "s9", metadata: { s: "x".repeat(8 * 1024) } });
      expect(await externalIds()).toEqual(["k50", "d5", "s8"]);
    });
  });

  describe("list", () => {
    it("lists every account without success field or pagination", async () => {
      await create({ externalId: "a" });
      await create({ externalId: "b" });
      const body = await list();
      expect(Object.keys(body)).toEqual(["accounts"]);
      expect(body.accounts.map((a) => a.externalId)).toEqual(["a", "b"]);
      expect(body.accounts[0]).toMatchObject({ balance: 0, developerId: t.projectId });
    });

    it("bounds the list at 50 by default and then reports pagination", async () => {
      for (let i = 0; i < 52; i++) await create({ externalId: `bulk-${i}` });
      const body = await list();
      expect(body.accounts).toHaveLength(50);
      expect(body.pagination).toEqual({ limit: 50, offset: 0, totalCount: 52, hasMore: true });
      const rest = await list({ offset: 50 });
      expect(rest.accounts.map((a) => a.externalId)).toEqual(["bulk-50", "bulk-51"]);
      expectFailure(
        await t.client.GET("/v1/accounts", { params: { query: { limit: 501 } } }),
        400,
        "VALIDATION_ERROR",
      );
    });

    it("paginates with limit/offset and reports pagination", async () => {
      for (const id of ["a", "b", "c"]) await create({ externalId: id });
      const first = await list({ limit: 2 });
      expect(first).not.toHaveProperty("success");
      expect(first.accounts).toHaveLength(2);
      expect(first.pagination).toEqual({ limit: 2, offset: 0, totalCount: 3, hasMore: true });
      const last = await list({ limit: 2, offset: 2 });
      expect(last.accounts.map((a) => a.externalId)).toEqual(["c"]);
      expect(last.pagination).toEqual({ limit: 2, offset: 2, totalCount: 3, hasMore: false });
      const offsetOnly = await list({ offset: 1 });
      expect(offsetOnly.pagination).toEqual({
        limit: 50,
        offset: 1,
        totalCount: 3,
        hasMore: false,
      });
      expect(offsetOnly.accounts).toHaveLength(2);
    });

    it("rejects limit 0, limit 501 and a negative offset", async () => {
      const page = (query: { limit?: number; offset?: number }) =>
        t.client.GET("/v1/accounts", { params: { query } });
      invalid(await page({ limit: 0 }), "query.limit");
      invalid(await page({ limit: 501 }), "query.limit");
      invalid(await page({ offset: -1 }), "query.offset");
    });
  });

  describe("get", () => {
    let id: string;
    beforeEach(async () => {
      id = (await create({ externalId: "cust_9", name: "Nine" })).account.id;
    });

    it("finds the account by internal id, by externalId in accountId, and by externalId=", async () => {
      const queries: Record<string, string>[] = [
        { accountId: id },
        { accountId: "cust_9" },
        { externalId: "cust_9" },
      ];
      for (const query of queries) {
        const body = expectOk(await t.client.GET("/v1/accounts/get", { params: { query } }));
        expect(body).not.toHaveProperty("success");
        expect(body).toMatchObject({ id, externalId: "cust_9", name: "Nine", balance: 0 });
      }
    });

    it("answers 404 ACCOUNT_NOT_FOUND for an unknown id or externalId", async () => {
      const get = (query: { accountId?: string; externalId?: string }) =>
        t.client.GET("/v1/accounts/get", { params: { query } });
      expectFailure(await get({ accountId: "nope" }), 404, "ACCOUNT_NOT_FOUND");
      expectFailure(await get({ externalId: "nope" }), 404, "ACCOUNT_NOT_FOUND");
      // an internal id is not an externalId
      expectFailure(await get({ externalId: id }), 404, "ACCOUNT_NOT_FOUND");
    });

    it("answers 400 when neither accountId nor externalId is given", async () => {
      invalid(await t.client.GET("/v1/accounts/get"), "query.accountId");
    });

    it("reflects the balance after credits are added", async () => {
      expectOk(
        await t.client.POST("/v1/accounts/credits/add", { body: { accountId: id, amount: 12.5 } }),
      );
      const got = expectOk(
        await t.client.GET("/v1/accounts/get", { params: { query: { accountId: id } } }),
      );
      expect(got.balance).toBe(12.5);
    });
  });

  describe("balance view", () => {
    it("returns accountId, externalId, balance, reserved, available by either id", async () => {
      const id = await fundedAccount(t, "bal_1", 100);
      expectOk(
        await t.client.POST("/v1/reservations/create", { body: { accountId: id, amount: 30 } }),
      );
      const expected = {
        accountId: id,
        externalId: "bal_1",
        balance: 100,
        reserved: 30,
        available: 70,
        fundedBy: id,
      };
      const queries: Record<string, string>[] = [
        { accountId: id },
        { accountId: "bal_1" },
        { externalId: "bal_1" },
      ];
      for (const query of queries) {
        const view = expectOk(await t.client.GET("/v1/accounts/balance", { params: { query } }));
        expect(view).toEqual(expected);
      }
    });

    it("is all zeros for a new account", async () => {
      const id = await fundedAccount(t, "zero");
      const body = expectOk(
        await t.client.GET("/v1/accounts/balance", { params: { query: { externalId: "zero" } } }),
      );
      expect(body).toEqual({
        accountId: id,
        externalId: "zero",
        balance: 0,
        reserved: 0,
        available: 0,
        fundedBy: id,
      });
    });

    it("answers 400 without a parameter and 404 for an unknown account", async () => {
      const balance = (query: { accountId?: string; externalId?: string } = {}) =>
        t.client.GET("/v1/accounts/balance", { params: { query } });
      invalid(await balance(), "query.accountId");
      expectFailure(await balance({ externalId: "ghost" }), 404, "ACCOUNT_NOT_FOUND");
      expectFailure(await balance({ accountId: "ghost" }), 404, "ACCOUNT_NOT_FOUND");
    });
  });
});
