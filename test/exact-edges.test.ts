/**
 * Edge inputs, over real HTTP: what a caller sends is what the ledger keeps, or the request is a
 * 400/415/431 that changes nothing (docs/api.md#amounts-and-money, #errors, #accounts, #dates).
 * Requests the typed client can make go through it (with the runtime's fetch); the rest (text
 * and bytes written by hand, other charsets, oversized headers) go raw through `http`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { type LedgerClient, LosslessNumber } from "../src/client/index.ts";
import { type ErrorBody, UNKNOWN_FIELD } from "../src/errors.ts";
import { expectError } from "./contract.ts";
import { expectFailure, expectOk, fundedAccount, makeLedger, type TestLedger } from "./harness.ts";

let t: TestLedger;
let base: string;
/** The typed client over real HTTP (answers checked against their routes). */
let client: LedgerClient;

interface HttpResult {
  status: number;
  text: string;
  /** The parsed JSON (or the text): read it through `expectError`, or as text. */
  body: unknown;
}

/** One request over real HTTP. A string or byte body is sent as it is. */
async function http(
  method: string,
  path: string,
  options: { body?: unknown; headers?: Record<string, string> } = {},
): Promise<HttpResult> {
  const headers: Record<string, string> = {
    "X-API-Key": t.key,
    ...(options.body === undefined ? {} : { "Content-Type": "application/json" }),
    ...options.headers,
  };
  const body =
    options.body === undefined
      ? undefined
      : typeof options.body === "string" || options.body instanceof Uint8Array
        ? options.body
        : JSON.stringify(options.body);
  const res = await fetch(`${base}${path}`, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {}
  return { status: res.status, text, body: parsed };
}

/** The `details` of a VALIDATION_ERROR: one `{path, message}` per field problem. */
const fieldIssues = z.array(z.object({ path: z.string(), message: z.string() }));
/** The path of the first field problem of a VALIDATION_ERROR. */
const firstIssuePath = (err: ErrorBody) => fieldIssues.parse(err.error.details)[0]?.path;

/** The account's ledger, newest first, as the API lists it. */
async function ledgerOf(accountId: string) {
  const query = { accountId, limit: 500 };
  return expectOk(await client.GET("/v1/transactions", { params: { query } })).items;
}

/** `depth` nested objects around `leaf`, as JSON text (built without recursion). */
function nestedObjects(depth: number, leaf = "1"): string {
  return `${'{"a":'.repeat(depth)}${leaf}${"}".repeat(depth)}`;
}

beforeAll(async () => {
  t = await makeLedger();
  base = await t.listen();
  client = t.clientFor(t.key, base);
});
afterAll(async () => {
  await t.close();
});

describe("1. the usage list and summary honour externalId", () => {
  it("filters by externalId and answers 404 for an unknown one", async () => {
    await fundedAccount(t, "usage-a");
    await fundedAccount(t, "usage-b");
    for (const accountId of ["usage-a", "usage-b", "usage-b"]) {
      expectOk(
        await client.POST("/v1/usage/record", {
          body: { accountId, modelId: "gpt-4o", inputTokens: 1000, outputTokens: 100 },
        }),
      );
    }
    const usage = (query: { externalId: string; summary?: "true" }) =>
      client.GET("/v1/usage", { params: { query } });
    const list = expectOk(await usage({ externalId: "usage-a" }));
    if (!("usageRecords" in list)) throw new Error(`no records: ${JSON.stringify(list)}`);
    expect(list.usageRecords).toHaveLength(1);
    const summary = expectOk(await usage({ externalId: "usage-b", summary: "true" }));
    if (!("summary" in summary)) throw new Error(`no summary: ${JSON.stringify(summary)}`);
    expect(summary.summary.totalInputTokens).toBe(2000);
    expect(summary.summary.byModel["gpt-4o"]?.count).toBe(2);
    expectFailure(await usage({ externalId: "nobody" }), 404, "ACCOUNT_NOT_FOUND");
    expectFailure(await usage({ externalId: "nobody", summary: "true" }), 404, "ACCOUNT_NOT_FOUND");
  });
});

describe("2. dates are parsed strictly, on every route that takes them", () => {
  const refused = [
    "2000-01-01 00:00 GMT",
    "2000-01-01 00:00 UTC",
    "2000-01-01 00:00 PST",
    "2026-02-30",
    "2025-02-29",
    "2026-13-01",
    "2026-01-01T24:00",
    "2026-01-01T10:00:00+25:00",
    "2026-1-1",
    "Jan 1 2026",
  ];
  type Dates = { startDate?: string; endDate?: string };
  /** The routes that take dates: the transaction list, the usage list and its summary. */
  const routes: [string, (query: Dates) => Promise<{ error?: unknown; response: Response }>][] = [
    ["/v1/transactions", (query) => client.GET("/v1/transactions", { params: { query } })],
    ["/v1/usage", (query) => client.GET("/v1/usage", { params: { query } })],
    [
      "/v1/usage?summary=true",
      (query) => client.GET("/v1/usage", { params: { query: { ...query, summary: "true" } } }),
    ],
  ];

  it("refuses other forms and days not in the calendar with a 400", async () => {
    for (const [, get] of routes) {
      for (const date of refused) {
        for (const field of ["startDate", "endDate"] as const) {
          const err = expectFailure(await get({ [field]: date }), 400, "VALIDATION_ERROR");
          expect(firstIssuePath(err)).toBe(`query.${field}`);
        }
      }
    }
  });

  it("accepts dates, date-times with Z, an offset or none, and leap days", async () => {
    const accepted = [
      "2024-02-29",
      "2026-01-01T00:00",
      "2026-01-01T00:00:00Z",
      "2026-01-01T00:00:00.123+02:00",
      "2026-01-01T10:00:00-05:30",
    ];
    for (const [route, get] of routes) {
      for (const date of accepted) {
        const res = await get({ startDate: date });
        expect(res.response.status, `${route} ${date}: ${JSON.stringify(res.error)}`).toBe(200);
      }
    }
  });

  it("reads a date-time with an offset as the instant it names", async () => {
    const id = await fundedAccount(t, "dates-offset", 5);
    const [entry] = await ledgerOf(id);
    expect(entry).toBeDefined();
    const created = Date.parse(entry?.createdAt ?? "");
    // The same instant written in +02:00: the entry is inside [start, end] at both ends.
    const plus2 = new Date(created + 2 * 3_600_000).toISOString().replace("Z", "+02:00");
    const query = { accountId: id, startDate: plus2, endDate: plus2 };
    const res = expectOk(await client.GET("/v1/transactions", { params: { query } }));
    expect(res.items).toHaveLength(1);
  });
});

describe("3. amounts are written as exact decimal literals", () => {
  it("reads 8600000000.000001 back after eight adds of 1e9 and one of 600000000.000001", async () => {
    const id = await fundedAccount(t, "big-balance");
    for (let i = 0; i < 8; i++) {
      const res = await http("POST", "/v1/accounts/credits/add", {
        body: { accountId: id, amount: 1e9 },
      });
      expect(res.status).toBe(200);
    }
    const last = await http("POST", "/v1/accounts/credits/add", {
      body: `{"accountId":"${id}","amount":600000000.000001}`,
    });
    expect(last.status).toBe(200);
    expect(last.text).toContain('"balance":8600000000.000001');
    expect(last.text).toContain('"added":600000000.000001');
    const balance = await http("GET", `/v1/accounts/balance?accountId=${id}`);
    expect(balance.text).toContain('"balance":8600000000.000001');
    expect(balance.text).toContain('"available":8600000000.000001');
    const account = await http("GET", `/v1/accounts/get?accountId=${id}`);
    expect(account.text).toContain('"balance":8600000000.000001');
    const list = await http("GET", `/v1/transactions?accountId=${id}&limit=1`);
    expect(list.text).toContain('"balanceAfter":8600000000.000001');
    // The exact literal survives an idempotent replay too.
    const key = { "Idempotency-Key": "exact-replay" };
    const deduct = `{"accountId":"${id}","amount":0.000001}`;
    const first = await http("POST", "/v1/accounts/credits/deduct", { body: deduct, headers: key });
    const replay = await http("POST", "/v1/accounts/credits/deduct", {
      body: deduct,
      headers: key,
    });
    expect(first.text).toContain('"balance":8600000000');
    expect(replay.text).toBe(first.text);
  });
});

describe("4. amounts are read from the JSON text", () => {
  for (const literal of ["0.30000000000000001", "1.0000000000000000000001", "1e-7", "1e400"]) {
    it(`refuses ${literal} on add and deduct, changing nothing`, async () => {
      const id = await fundedAccount(t, `literal-${literal}`, 10);
      // The client writes a LosslessNumber as its literal, digit for digit.
      const body = { accountId: id, amount: new LosslessNumber(literal) };
      for (const res of [
        await client.POST("/v1/accounts/credits/add", { body }),
        await client.POST("/v1/accounts/credits/deduct", { body }),
      ]) {
        const err = expectFailure(res, 400, "VALIDATION_ERROR");
        expect(firstIssuePath(err)).toBe("body.amount");
      }
      const query = { accountId: id };
      const balance = expectOk(await client.GET("/v1/accounts/balance", { params: { query } }));
      expect(balance.balance).toBe(10);
      expect(await ledgerOf(id)).toHaveLength(1);
    });
  }

  it("accepts literals whose extra digits are zeros, and exponents", async () => {
    const id = await fundedAccount(t, "literal-zeros");
    const add = await http("POST", "/v1/accounts/credits/add", {
      body: `{"accountId":"${id}","amount":1.5000000000000000000}`,
    });
    expect(add.status).toBe(200);
    expect(add.text).toContain('"added":1.5');
    const deduct = await http("POST", "/v1/accounts/credits/deduct", {
      body: `{"accountId":"${id}","amount":25e-2}`,
    });
    expect(deduct.status).toBe(200);
    expect(deduct.text).toContain('"balance":1.25');
  });
});

describe("5. strings and metadata keys round-trip exactly, or are refused", () => {
  it("refuses U+0000 in externalId, name and description", async () => {
    const nul = "\u0000";
    expectFailure(
      await client.POST("/v1/accounts/create", { body: { externalId: `a${nul}b` } }),
      400,
      "VALIDATION_ERROR",
    );
    expectFailure(
      await client.POST("/v1/accounts/create", { body: { externalId: "nul-name", name: nul } }),
      400,
      "VALIDATION_ERROR",
    );
    const id = await fundedAccount(t, "nul-description", 1);
    expectFailure(
      await client.POST("/v1/accounts/credits/deduct", {
        body: { accountId: id, amount: 1, description: `x${nul}y` },
      }),
      400,
      "VALIDATION_ERROR",
    );
    const get = (query: { externalId: string }) =>
      client.GET("/v1/accounts/get", { params: { query } });
    expectFailure(await get({ externalId: `a${nul}b` }), 400, "VALIDATION_ERROR");
    expect(await ledgerOf(id)).toHaveLength(1);
  });

  it("refuses lone surrogates and bytes that are not UTF-8, so ids never collide", async () => {
    expectError(
      await http("POST", "/v1/accounts/create", { body: '{"externalId":"x\\ud800"}' }),
      400,
      "VALIDATION_ERROR",
    );
    expectError(
      await http("POST", "/v1/accounts/create", { body: '{"externalId":"x\\udc00"}' }),
      400,
      "VALIDATION_ERROR",
    );
    // A CESU-8 encoded surrogate, which a lenient decoder turns into U+FFFD.
    const bytes = new Uint8Array([
      ...new TextEncoder().encode('{"externalId":"x'),
      0xed,
      0xa0,
      0x80,
      ...new TextEncoder().encode('"}'),
    ]);
    expectError(
      await http("POST", "/v1/accounts/create", { body: bytes }),
      400,
      "VALIDATION_ERROR",
    );
    // A well-formed pair and other characters round-trip.
    const emoji = "x\u{1F600}\uFFFD\u00e9";
    expectOk(await client.POST("/v1/accounts/create", { body: { externalId: emoji } }));
    const query = { externalId: emoji };
    const read = expectOk(await client.GET("/v1/accounts/get", { params: { query } }));
    expect(read.externalId).toBe(emoji);
  });

  it("round-trips __proto__ and constructor metadata keys as plain data", async () => {
    const text =
      '{"externalId":"proto-keys","metadata":{"__proto__":{"x":1},"constructor":"c","n":0.30000000000000001}}';
    const created = await http("POST", "/v1/accounts/create", { body: text });
    expect(created.status, created.text).toBe(200);
    expect(created.text).toContain('"metadata":{"__proto__":{"x":1},"constructor":"c"');
    const read = await http("GET", "/v1/accounts/get?externalId=proto-keys");
    expect(read.text).toContain('"__proto__":{"x":1}');
    // A metadata number a double cannot hold is kept as it was written.
    expect(read.text).toContain('"n":0.30000000000000001');
    // Only the id is read: the route-schema check (responseProblems) cannot see a `__proto__`
    // key in zod's parsed copy, so it would report that metadata key as undeclared.
    const id = z.object({ account: z.object({ id: z.string() }) }).parse(created.body).account.id;
    await http("POST", "/v1/accounts/credits/add", {
      body: `{"accountId":"${id}","amount":1,"metadata":{"__proto__":"p"}}`,
    });
    const list = await http("GET", `/v1/transactions?accountId=${id}`);
    expect(list.text).toContain('"metadata":{"__proto__":"p"}');
  });
});

describe("6. deep nesting is a 400, never a 500", () => {
  const deep = nestedObjects(10_000);

  it("refuses metadata nested 10,000 deep on every write route that takes metadata", async () => {
    const id = await fundedAccount(t, "deep-target", 100);
    const bodies: [string, string][] = [
      ["/v1/accounts/credits/add", `{"accountId":"${id}","amount":1,"metadata":${deep}}`],
      ["/v1/accounts/credits/deduct", `{"accountId":"${id}","amount":1,"metadata":${deep}}`],
      ["/v1/accounts/create", `{"externalId":"deep-new","metadata":${deep}}`],
      ["/v1/reservations/create", `{"accountId":"${id}","amount":1,"metadata":${deep}}`],
      [
        "/v1/transactions/create",
        `{"accountId":"${id}","amount":1,"type":"credit","metadata":${deep}}`,
      ],
      [
        "/v1/usage/record",
        `{"accountId":"${id}","modelId":"gpt-4o","inputTokens":1,"outputTokens":1,"metadata":${deep}}`,
      ],
    ];
    for (const [path, body] of bodies) {
      const res = await http("POST", path, { body });
      expectError(res, 400, "VALIDATION_ERROR");
      const keyed = await http("POST", path, { body, headers: { "Idempotency-Key": path } });
      expectError(keyed, 400, "VALIDATION_ERROR");
    }
    expect(await ledgerOf(id)).toHaveLength(1);
  });

  it("refuses a 4,000-deep array in an ignored field, with an Idempotency-Key", async () => {
    const id = await fundedAccount(t, "deep-ignored", 5);
    const body = `{"accountId":"${id}","amount":1,"ignored":${"[".repeat(4000)}${"]".repeat(4000)}}`;
    const res = await http("POST", "/v1/accounts/credits/deduct", {
      body,
      headers: { "Idempotency-Key": "deep-array" },
    });
    expectError(res, 400, "VALIDATION_ERROR");
    expect(await ledgerOf(id)).toHaveLength(1);
  });

  it("reads a body nested 32 levels, and refuses 33 for its depth", async () => {
    const id = await fundedAccount(t, "depth-32", 5);
    // The body object is level 1, so the extra field may hold 31 levels. No field a route
    // defines nests that deep, and an undefined one is a 400 for itself (docs/api.md#strict-input):
    // at 32 levels the body is read and the field is named as unknown, at 33 the depth is refused.
    const at32 = `{"accountId":"${id}","amount":1,"ignored":${nestedObjects(31)}}`;
    const at33 = `{"accountId":"${id}","amount":1,"ignored":${nestedObjects(32)}}`;
    const read = expectError(
      await http("POST", "/v1/accounts/credits/deduct", { body: at32 }),
      400,
      "VALIDATION_ERROR",
    );
    expect(read.error.details).toEqual([{ path: "body.ignored", message: UNKNOWN_FIELD }]);
    const deep = expectError(
      await http("POST", "/v1/accounts/credits/deduct", { body: at33 }),
      400,
      "VALIDATION_ERROR",
    );
    expect(deep.error.message).toContain("nested more than 32 levels");
    expect(await ledgerOf(id)).toHaveLength(1);
  });
});

describe("7. one string never names two accounts", () => {
  it("refuses an externalId with the form of an internal account id", async () => {
    const id = await fundedAccount(t, "real-owner", 3);
    for (const externalId of [id, id.toLowerCase(), "acc_01ARZ3NDEKTSV4RRFFQ69G5FAV"]) {
      const res = await client.POST("/v1/accounts/create", { body: { externalId } });
      const err = expectFailure(res, 400, "VALIDATION_ERROR");
      expect(firstIssuePath(err)).toBe("body.externalId");
    }
    const query = { externalId: id };
    const byExternal = await client.GET("/v1/accounts/get", { params: { query } });
    expectFailure(byExternal, 404, "ACCOUNT_NOT_FOUND");
  });
});

describe("8. URLs or headers too large get the JSON error", () => {
  it("answers a 20,000-character query string with 431 HEADERS_TOO_LARGE", async () => {
    const res = await http("GET", `/v1/accounts?x=${"a".repeat(20_000)}`);
    expectError(res, 431, "HEADERS_TOO_LARGE");
    const header = await http("GET", "/v1/accounts", { headers: { "X-Big": "b".repeat(20_000) } });
    expectError(header, 431, "HEADERS_TOO_LARGE");
    // The server still answers afterwards.
    expect((await http("GET", "/v1/accounts")).status).toBe(200);
  });
});

describe("9. a body must be UTF-8", () => {
  it("refuses another charset with a 415, and accepts utf-8", async () => {
    const id = await fundedAccount(t, "charset", 5);
    const body = { accountId: id, amount: 1 };
    for (const charset of ["utf-16", "UTF-16LE", "iso-8859-1", '"latin1"']) {
      const res = await http("POST", "/v1/accounts/credits/deduct", {
        body,
        headers: { "Content-Type": `application/json; charset=${charset}` },
      });
      expectError(res, 415, "UNSUPPORTED_MEDIA_TYPE");
    }
    for (const charset of ["utf-8", "UTF-8", '"utf-8"', "utf8"]) {
      const res = await http("POST", "/v1/accounts/credits/deduct", {
        body,
        headers: { "Content-Type": `application/json; charset=${charset}` },
      });
      expect(res.status, res.text).toBe(200);
    }
    expect(await ledgerOf(id)).toHaveLength(5);
  });
});

describe("10. accountId and externalId must agree", () => {
  it("answers 400 on every route that takes both, when they name two accounts", async () => {
    const a = await fundedAccount(t, "agree-a", 1);
    await fundedAccount(t, "agree-b", 1);
    type Both = { accountId: string; externalId: string };
    type Get = (query: Both) => Promise<{ error?: unknown; response: Response }>;
    const routes: [string, Get][] = [
      ["/v1/accounts/get", (query) => client.GET("/v1/accounts/get", { params: { query } })],
      [
        "/v1/accounts/balance",
        (query) => client.GET("/v1/accounts/balance", { params: { query } }),
      ],
      ["/v1/transactions", (query) => client.GET("/v1/transactions", { params: { query } })],
      ["/v1/reservations", (query) => client.GET("/v1/reservations", { params: { query } })],
      ["/v1/accounts/plans", (query) => client.GET("/v1/accounts/plans", { params: { query } })],
      ["/v1/usage", (query) => client.GET("/v1/usage", { params: { query } })],
    ];
    for (const [route, get] of routes) {
      const clash = await get({ accountId: a, externalId: "agree-b" });
      expectFailure(clash, 400, "VALIDATION_ERROR");
      const same = await get({ accountId: a, externalId: "agree-a" });
      expect(same.response.status, `${route}: ${JSON.stringify(same.error)}`).toBe(200);
      const byExternal = await get({ accountId: "agree-a", externalId: "agree-a" });
      expect(byExternal.response.status).toBe(200);
    }
  });
});

it("ends with every ledger invariant holding", async () => {
  expect(await t.verify()).toEqual([]);
});
