/**
 * The seams a newcomer meets first (docs/api.md#strict-input and the sections after it), over
 * real HTTP against a listening server: strict input, the transaction `type` filter, 405 with
 * `Allow`, the root redirect, Bearer authentication.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MISSING_FIELD, UNKNOWN_FIELD } from "../src/errors.ts";
import { fundedAccount, makeLedger, type TestLedger } from "./harness.ts";
import { fetchFrom, type JsonRequest, sendJson } from "./http-client.ts";

let t: TestLedger;
let base: string;

beforeAll(async () => {
  t = await makeLedger();
  base = await t.listen();
});

afterAll(async () => {
  await t.close();
});

const send = (method: string, path: string, request?: JsonRequest) =>
  sendJson(fetchFrom(base), t.key, method, path, request);

/** The error body of a 4xx answer, checked for its shape. */
function errorOf(body: unknown) {
  const parsed = body as {
    success: boolean;
    error: { code: string; message: string; details?: unknown };
  };
  expect(parsed.success).toBe(false);
  return parsed.error;
}

describe("strict input", () => {
  it("refuses an unknown body field, naming it, and changes nothing", async () => {
    const id = await fundedAccount(t, "strict-1", 10);
    const res = await send("POST", "/v1/accounts/credits/add", {
      body: { accountId: id, amount: 5, currency: "USD" },
    });
    expect(res.status).toBe(400);
    const error = errorOf(res.body);
    expect(error.code).toBe("VALIDATION_ERROR");
    expect(error.details).toEqual([{ path: "body.currency", message: UNKNOWN_FIELD }]);
    const balance = await send("GET", `/v1/accounts/balance?accountId=${id}`);
    expect((balance.body as { balance: number }).balance).toBe(10);
  });

  it("reports a misspelt required field as missing and the spelling as unknown", async () => {
    const id = await fundedAccount(t, "strict-2", 10);
    const res = await send("POST", "/v1/accounts/credits/deduct", {
      body: { accountId: id, ammount: 1 },
    });
    expect(res.status).toBe(400);
    const error = errorOf(res.body);
    expect(error.details).toEqual([
      { path: "body.amount", message: MISSING_FIELD },
      { path: "body.ammount", message: UNKNOWN_FIELD },
    ]);
    expect(error.message).toContain("body.amount");
  });

  it("refuses an unknown query parameter", async () => {
    const res = await send("GET", "/v1/accounts?limit=5&colour=blue");
    expect(res.status).toBe(400);
    expect(errorOf(res.body).details).toEqual([{ path: "query.colour", message: UNKNOWN_FIELD }]);
  });

  it("refuses an unknown query parameter on an export too", async () => {
    for (const path of ["/v1/transactions/export", "/v1/usage/export"]) {
      const res = await send("GET", `${path}?format=csv&colour=blue`);
      expect(res.status, path).toBe(400);
      expect(errorOf(res.body).details).toEqual([{ path: "query.colour", message: UNKNOWN_FIELD }]);
    }
  });

  it("reads a query's names as parsed: an encoded known name passes, an encoded unknown fails", async () => {
    // `limit` spelt `%6Cimit`: the URL's text is not the name, the parsed query is.
    const known = await send("GET", "/v1/accounts?%6Cimit=5");
    expect(known.status).toBe(200);
    expect((known.body as { pagination: { limit: number } }).pagination.limit).toBe(5);
    const unknown = await send("GET", "/v1/accounts?limit=5&col%6Fur=blue");
    expect(unknown.status).toBe(400);
    expect(errorOf(unknown.body).details).toEqual([
      { path: "query.colour", message: UNKNOWN_FIELD },
    ]);
    // A parameter without a name is no parameter of the parsed query: passed over, as before.
    const unnamed = await send("GET", "/v1/accounts?limit=5&=blue");
    expect(unnamed.status).toBe(200);
  });

  it("refuses an unknown field inside a nested object", async () => {
    const res = await send("POST", "/v1/models/calculate", {
      body: { model: "gpt-4o", inputTokens: 1, outputTokens: 1, extra: { a: 1 } },
    });
    expect(res.status).toBe(400);
    expect(errorOf(res.body).details).toContainEqual({
      path: "body.extra",
      message: UNKNOWN_FIELD,
    });
  });

  it("keeps metadata free-form", async () => {
    const id = await fundedAccount(t, "strict-3", 0);
    const metadata = { anything: { nested: true }, currency: "USD" };
    const res = await send("POST", "/v1/accounts/credits/add", {
      body: { accountId: id, amount: 1, metadata },
    });
    expect(res.status).toBe(200);
    const list = await send("GET", `/v1/transactions?accountId=${id}`);
    const items = (list.body as { items: { metadata: unknown }[] }).items;
    expect(items[0]?.metadata).toEqual(metadata);
  });

  it("still applies the nesting limit to unknown fields", async () => {
    let deep: unknown = 1;
    for (let i = 0; i < 40; i++) deep = { d: deep };
    const res = await send("POST", "/v1/accounts/create", { body: { externalId: "deep", deep } });
    expect(res.status).toBe(400);
    expect(errorOf(res.body).code).toBe("VALIDATION_ERROR");
  });
});

describe("the transaction type filter", () => {
  it("lists only credits or only debits, and refuses another type", async () => {
    const id = await fundedAccount(t, "typed", 10);
    const deduct = await send("POST", "/v1/accounts/credits/deduct", {
      body: { accountId: id, amount: 3 },
    });
    expect(deduct.status).toBe(200);
    const typesOf = async (query: string) => {
      const res = await send("GET", `/v1/transactions?accountId=${id}${query}`);
      expect(res.status).toBe(200);
      return res.body as { items: { type: string }[]; pagination: { totalCount: number } };
    };
    const debits = await typesOf("&type=debit");
    expect(debits.items.map((i) => i.type)).toEqual(["debit"]);
    expect(debits.pagination.totalCount).toBe(1);
    expect((await typesOf("&type=credit")).items.map((i) => i.type)).toEqual(["credit"]);
    expect((await typesOf("")).items.map((i) => i.type).sort()).toEqual(["credit", "debit"]);
    const bad = await send("GET", `/v1/transactions?accountId=${id}&type=refund`);
    expect(bad.status).toBe(400);
    expect(errorOf(bad.body).details).toEqual([expect.objectContaining({ path: "query.type" })]);
  });
});

describe("405 and the root redirect", () => {
  it("answers a known path with another method 405 with Allow and the JSON error body", async () => {
    const res = await fetch(`${base}/v1/accounts/create`, { headers: { "X-API-Key": t.key } });
    expect(res.status).toBe(405);
    expect(res.headers.get("Allow")).toBe("POST");
    const error = errorOf(await res.json());
    expect(error.code).toBe("METHOD_NOT_ALLOWED");
    const list = await fetch(`${base}/v1/accounts`, {
      method: "DELETE",
      headers: { "X-API-Key": t.key },
    });
    expect(list.status).toBe(405);
    expect(list.headers.get("Allow")).toBe("GET, HEAD");
    const health = await fetch(`${base}/health`, { method: "POST" });
    expect(health.status).toBe(405);
    expect(health.headers.get("Allow")).toBe("GET, HEAD");
  });

  it("keeps 404 for unknown paths, and 401 before either without a key", async () => {
    const unknown = await send("GET", "/v1/acounts");
    expect(unknown.status).toBe(404);
    expect(errorOf(unknown.body).code).toBe("NOT_FOUND");
    const noKey = await fetch(`${base}/v1/accounts/create`);
    expect(noKey.status).toBe(401);
  });

  it("redirects GET / to /console", async () => {
    const res = await fetch(`${base}/`, { redirect: "manual" });
    expect(res.status).toBe(302);
    expect(res.headers.get("Location")).toBe("/console");
  });
});

describe("Bearer authentication", () => {
  const balanceWith = (headers: Record<string, string>) =>
    fetch(`${base}/v1/accounts?limit=1`, { headers });

  it("accepts Authorization: Bearer as well as X-API-Key", async () => {
    expect((await balanceWith({ Authorization: `Bearer ${t.key}` })).status).toBe(200);
    expect((await balanceWith({ Authorization: `bearer ${t.key}` })).status).toBe(200);
    expect(
      (await balanceWith({ "X-API-Key": t.key, Authorization: `Bearer ${t.key}` })).status,
    ).toBe(200);
  });

  it("refuses two different keys, and names both headers in a 401", async () => {
    const other = await t.newProject("other-bearer");
    const both = await balanceWith({ "X-API-Key": t.key, Authorization: `Bearer ${other.key}` });
    expect(both.status).toBe(401);
    expect(errorOf(await both.json()).code).toBe("UNAUTHORIZED");
    const refused: Record<string, string>[] = [
      {},
      { Authorization: "Bearer ldg_nope" },
      { Authorization: `Basic ${t.key}` },
    ];
    for (const headers of refused) {
      const res = await balanceWith(headers);
      expect(res.status).toBe(401);
      const error = errorOf(await res.json());
      expect(error.message).toContain("X-API-Key");
      expect(error.message).toContain("Authorization: Bearer");
    }
  });
});

describe("a refused webhook target", () => {
  it("names WEBHOOK_ALLOW_PRIVATE in its message", async () => {
    const strict = await makeLedger({ env: { WEBHOOK_ALLOW_PRIVATE: "false" } });
    try {
      const strictBase = await strict.listen();
      const res = await sendJson(fetchFrom(strictBase), strict.key, "POST", "/v1/webhooks/create", {
        body: { url: "http://127.0.0.1:9/hook" },
      });
      expect(res.status).toBe(400);
      const error = errorOf(res.body);
      expect(error.message).toContain("WEBHOOK_ALLOW_PRIVATE=true");
      expect(error.message).toContain("local development");
    } finally {
      await strict.close();
    }
  });
});

describe("strict input on a POST's query string", () => {
  it("refuses a query parameter on a route that takes none, and changes nothing", async () => {
    const res = await send("POST", "/v1/accounts/create?dryRun=true", {
      body: { externalId: "query-on-post" },
    });
    expect(res.status).toBe(400);
    expect(errorOf(res.body).details).toEqual([{ path: "query.dryRun", message: UNKNOWN_FIELD }]);
    const get = await send("GET", "/v1/accounts/get?externalId=query-on-post");
    expect(get.status).toBe(404);
  });
});
