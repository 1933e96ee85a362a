import type { RouteConfig } from "@hono/zod-openapi";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { accountRoutes } from "../src/accounts/routes.ts";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import { reservationRoutes } from "../src/reservations/routes.ts";
import { type CallInput, fundedAccount, makeLedger, type TestLedger } from "./harness.ts";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/;

/** The `details` of a VALIDATION_ERROR: one `{path, message}` per field problem. */
const fieldIssues = z.array(z.object({ path: z.string(), message: z.string() }));

describe("accounts", () => {
  let t: TestLedger;
  beforeEach(async () => {
    t = await makeLedger();
  });
  afterEach(async () => t.close());

  const create = (body: unknown) => t.call(accountRoutes.create, { body });
  const externalIds = async () =>
    (await t.call(accountRoutes.list)).accounts.map((a) => a.externalId);

  /** Asserts that `route` answers `input` with a 400 VALIDATION_ERROR whose details name `path`. */
  async function expectValidation(route: RouteConfig, input: CallInput, path: string) {
    const err = await t.fail(route, input, 400, "VALIDATION_ERROR");
    expect(fieldIssues.parse(err.error.details).map((d) => d.path)).toContain(path);
  }

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
      const got = await t.call(accountRoutes.get, { query: { accountId: a.id } });
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
      await t.fail(
        accountRoutes.create,
        { body: { externalId: "dup", name: "other" } },
        409,
        "DUPLICATE_EXTERNAL_ID",
      );
      const list = await t.call(accountRoutes.list);
      expect(list.accounts).toHaveLength(1);
      expect(list.accounts[0]?.name).toBe("");
    });

    it("allows the same externalId in another project", async () => {
      await create({ externalId: "shared" });
      const b = await t.newProject("other");
      const { account } = await t.call(accountRoutes.create, {
        body: { externalId: "shared" },
        key: b.key,
      });
      expect(account.developerId).toBe(b.projectId);
    });

    it.each([
      ["an invalid email", { externalId: "x", email: "not-an-email" }, "body.email"],
      ["a missing externalId", { name: "no ext" }, "body.externalId"],
      ["an empty externalId", { externalId: "" }, "body.externalId"],
      ["an externalId over 255 chars", { externalId: "e".repeat(256) }, "body.externalId"],
      ["a name over 255 chars", { externalId: "x", name: "n".repeat(256) }, "body.name"],
      ["metadata that is not an object", { externalId: "x", metadata: [1] }, "body.metadata"],
    ])("rejects %s with 400 naming the field", async (_label, body, path) => {
      await expectValidation(accountRoutes.create, { body }, path);
      expect((await t.call(accountRoutes.list)).accounts).toEqual([]);
    });

    it("accepts an externalId of exactly 255 chars", async () => {
      const { account } = await create({ externalId: "e".repeat(255) });
      expect(account.externalId).toBe("e".repeat(255));
    });

    it("enforces the metadata limits: 50 keys, 5 levels, 8 KiB", async () => {
      const keys = (n: number) =>
        Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));
      const nest = (levels: number): unknown => (levels === 0 ? 1 : { n: nest(levels - 1) });
      const rejects = (body: unknown) =>
        expectValidation(accountRoutes.create, { body }, "body.metadata");
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
      const body = await t.call(accountRoutes.list);
      expect(Object.keys(body)).toEqual(["accounts"]);
      expect(body.accounts.map((a) => a.externalId)).toEqual(["a", "b"]);
      expect(body.accounts[0]).toMatchObject({ balance: 0, developerId: t.projectId });
    });

    it("bounds the list at 50 by default and then reports pagination", async () => {
      for (let i = 0; i < 52; i++) await create({ externalId: `bulk-${i}` });
      const body = await t.call(accountRoutes.list);
      expect(body.accounts).toHaveLength(50);
      expect(body.pagination).toEqual({ limit: 50, offset: 0, totalCount: 52, hasMore: true });
      const rest = await t.call(accountRoutes.list, { query: { offset: 50 } });
      expect(rest.accounts.map((a) => a.externalId)).toEqual(["bulk-50", "bulk-51"]);
      await t.fail(accountRoutes.list, { query: { limit: 501 } }, 400, "VALIDATION_ERROR");
    });

    it("paginates with limit/offset and reports pagination", async () => {
      for (const id of ["a", "b", "c"]) await create({ externalId: id });
      const first = await t.call(accountRoutes.list, { query: { limit: 2 } });
      expect(first).not.toHaveProperty("success");
      expect(first.accounts).toHaveLength(2);
      expect(first.pagination).toEqual({ limit: 2, offset: 0, totalCount: 3, hasMore: true });
      const last = await t.call(accountRoutes.list, { query: { limit: 2, offset: 2 } });
      expect(last.accounts.map((a) => a.externalId)).toEqual(["c"]);
      expect(last.pagination).toEqual({ limit: 2, offset: 2, totalCount: 3, hasMore: false });
      const offsetOnly = await t.call(accountRoutes.list, { query: { offset: 1 } });
      expect(offsetOnly.pagination).toEqual({
        limit: 50,
        offset: 1,
        totalCount: 3,
        hasMore: false,
      });
      expect(offsetOnly.accounts).toHaveLength(2);
    });

    it("rejects limit 0, limit 501 and a negative offset", async () => {
      await expectValidation(accountRoutes.list, { query: { limit: 0 } }, "query.limit");
      await expectValidation(accountRoutes.list, { query: { limit: 501 } }, "query.limit");
      await expectValidation(accountRoutes.list, { query: { offset: -1 } }, "query.offset");
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
        const body = await t.call(accountRoutes.get, { query });
        expect(body).not.toHaveProperty("success");
        expect(body).toMatchObject({ id, externalId: "cust_9", name: "Nine", balance: 0 });
      }
    });

    it("answers 404 ACCOUNT_NOT_FOUND for an unknown id or externalId", async () => {
      const get = accountRoutes.get;
      await t.fail(get, { query: { accountId: "nope" } }, 404, "ACCOUNT_NOT_FOUND");
      await t.fail(get, { query: { externalId: "nope" } }, 404, "ACCOUNT_NOT_FOUND");
      // an internal id is not an externalId
      await t.fail(get, { query: { externalId: id } }, 404, "ACCOUNT_NOT_FOUND");
    });

    it("answers 400 when neither accountId nor externalId is given", async () => {
      await expectValidation(accountRoutes.get, {}, "query.accountId");
    });

    it("reflects the balance after credits are added", async () => {
      await t.call(ledgerRoutes.add, { body: { accountId: id, amount: 12.5 } });
      expect((await t.call(accountRoutes.get, { query: { accountId: id } })).balance).toBe(12.5);
    });
  });

  describe("balance view", () => {
    it("returns accountId, externalId, balance, reserved, available by either id", async () => {
      const id = await fundedAccount(t, "bal_1", 100);
      await t.call(reservationRoutes.create, { body: { accountId: id, amount: 30 } });
      const expected = {
        accountId: id,
        externalId: "bal_1",
        balance: 100,
        reserved: 30,
        available: 70,
      };
      const queries: Record<string, string>[] = [
        { accountId: id },
        { accountId: "bal_1" },
        { externalId: "bal_1" },
      ];
      for (const query of queries) {
        expect(await t.call(accountRoutes.balance, { query })).toEqual(expected);
      }
    });

    it("is all zeros for a new account", async () => {
      const id = await fundedAccount(t, "zero");
      const body = await t.call(accountRoutes.balance, { query: { externalId: "zero" } });
      expect(body).toEqual({
        accountId: id,
        externalId: "zero",
        balance: 0,
        reserved: 0,
        available: 0,
      });
    });

    it("answers 400 without a parameter and 404 for an unknown account", async () => {
      const balance = accountRoutes.balance;
      await expectValidation(balance, {}, "query.accountId");
      await t.fail(balance, { query: { externalId: "ghost" } }, 404, "ACCOUNT_NOT_FOUND");
      await t.fail(balance, { query: { accountId: "ghost" } }, 404, "ACCOUNT_NOT_FOUND");
    });
  });
});
