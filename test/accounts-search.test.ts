/**
 * `GET /v1/accounts?search=` (docs/api.md#account-list): accounts whose externalId or name
 * contains the text, ASCII letters in any case; `%`, `_` and `\` match themselves; the count
 * and the paging follow the filter; another project's accounts never match.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accountRoutes } from "../src/accounts/routes.ts";
import { makeLedger, type TestLedger } from "./harness.ts";

describe("account list search", () => {
  let t: TestLedger;

  const search = async (query: Record<string, string | number>, key = t.key) => {
    const body = await t.call(accountRoutes.list, { query, key });
    return { ids: body.accounts.map((a) => a.externalId), pagination: body.pagination };
  };

  beforeAll(async () => {
    t = await makeLedger();
    const accounts = [
      { externalId: "acme-1", name: "Acme Corp" },
      { externalId: "acme-2", name: "Road Runner" },
      { externalId: "globex", name: "Globex ACME branch" },
      { externalId: "initech", name: "Initech" },
      { externalId: "100%_pure", name: "Percent" },
      { externalId: "1000x", name: "Ünïcode Ärger" },
      { externalId: "back\\slash", name: "" },
    ];
    for (const body of accounts) await t.call(accountRoutes.create, { body });
    const other = await t.newProject("other");
    await t.call(accountRoutes.create, {
      body: { externalId: "acme-other", name: "Acme elsewhere" },
      key: other.key,
    });
  });
  afterAll(async () => t.close());

  it("matches externalId or name, ASCII letters in any case, oldest first", async () => {
    expect((await search({ search: "acme" })).ids).toEqual(["acme-1", "acme-2", "globex"]);
    expect((await search({ search: "ROAD" })).ids).toEqual(["acme-2"]);
    expect((await search({ search: "nitec" })).ids).toEqual(["initech"]);
    expect((await search({ search: "nobody" })).ids).toEqual([]);
  });

  it("takes %, _ and \\ literally", async () => {
    expect((await search({ search: "%" })).ids).toEqual(["100%_pure"]);
    expect((await search({ search: "0%_" })).ids).toEqual(["100%_pure"]);
    expect((await search({ search: "_" })).ids).toEqual(["100%_pure"]);
    expect((await search({ search: "\\" })).ids).toEqual(["back\\slash"]);
    expect((await search({ search: "10" })).ids).toEqual(["100%_pure", "1000x"]);
  });

  it("matches other characters exactly", async () => {
    expect((await search({ search: "Ärger" })).ids).toEqual(["1000x"]);
    expect((await search({ search: "Ünï" })).ids).toEqual(["1000x"]);
  });

  it("counts and pages what matches", async () => {
    const first = await search({ search: "acme", limit: 2 });
    expect(first.ids).toEqual(["acme-1", "acme-2"]);
    expect(first.pagination).toEqual({ limit: 2, offset: 0, totalCount: 3, hasMore: true });
    const second = await search({ search: "acme", limit: 2, offset: 2 });
    expect(second.ids).toEqual(["globex"]);
    expect(second.pagination).toEqual({ limit: 2, offset: 2, totalCount: 3, hasMore: false });
    // Without limit/offset and with every match on the page: no pagination, as without search.
    expect((await search({ search: "acme" })).pagination).toBeUndefined();
  });

  it("never matches another project's accounts, and refuses an empty search", async () => {
    expect((await search({ search: "elsewhere" })).ids).toEqual([]);
    await t.fail(accountRoutes.list, { query: { search: "" } }, 400, "VALIDATION_ERROR");
    await t.fail(
      accountRoutes.list,
      { query: { search: "x".repeat(256) } },
      400,
      "VALIDATION_ERROR",
    );
  });
});
