/**
 * `GET /v1/usage?summary=true&groupBy=…` (docs/api.md#usage-over-time): groups per UTC day,
 * model, account and context over the summary's filters, their order, the 1,000-group limit,
 * exact sums past 2^53 and 2^63, and the OpenAPI document.
 */
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { UsageRecordsTable } from "../src/db/schema.ts";
import { newId } from "../src/ids.ts";
import { usageRoutes } from "../src/usage/routes.ts";
import { fundedAccount, makeLedger, type TestLedger } from "./harness.ts";

type Query = Record<string, string | number | boolean>;

const DAY_MS = 86_400_000;
const T0 = Date.parse("2026-03-01T10:00:00.000Z");

/** A usage row as the service stores it, for inserting many cheaply. */
function usageRow(
  projectId: string,
  createdAtMs: number,
  fields: Partial<UsageRecordsTable> = {},
): Omit<UsageRecordsTable, "seq"> {
  return {
    id: newId("use"),
    project_id: projectId,
    account_id: null,
    context: "system",
    model_id: "gpt-4o",
    usage_type: "text",
    input_tokens: 4,
    output_tokens: 0,
    cached_tokens: 0,
    transaction_id: null,
    input_micros_per_m: 2_500_000,
    output_micros_per_m: 10_000_000,
    cached_micros_per_m: 1_250_000,
    cost_micro_usd: 10,
    cost_pico_rem: 0,
    metadata: null,
    created_at_ms: createdAtMs,
    credits_charged_micros: null,
    ...fields,
  };
}

describe("usage summary groups", () => {
  let t: TestLedger;
  let a: string;
  let b: string;

  const summary = async (query: Query = {}, key = t.key) => {
    const body = await t.call(usageRoutes.list, { query: { ...query, summary: true }, key });
    if (!("summary" in body)) throw new Error(`no summary: ${JSON.stringify(body)}`);
    return body.summary;
  };
  const groups = async (groupBy: string, query: Query = {}) => {
    const s = await summary({ ...query, groupBy });
    if (!s.groups) throw new Error(`no groups: ${JSON.stringify(s)}`);
    return s.groups;
  };
  const record = (body: Record<string, unknown>) => t.call(usageRoutes.record, { body });
  /** The raw text of a GET, so that literals beyond a double's digits can be read. */
  const rawText = async (path: string, key: string) => {
    const res = await t.app.request(path, { headers: { "X-API-Key": key } });
    expect(res.status).toBe(200);
    return res.text();
  };

  beforeAll(async () => {
    t = await makeLedger({ fakeClock: new Date(T0).toISOString() });
    a = await fundedAccount(t, "acct-a");
    b = await fundedAccount(t, "acct-b");
    const gpt = { modelId: "gpt-4o", inputTokens: 1000, outputTokens: 500, cachedTokens: 200 };
    // 2026-03-01: 0.00725 (a, gpt-4o) and 0.005 (system, gpt-4o).
    await record({ accountId: "acct-a", ...gpt });
    await record({ context: "system", modelId: "gpt-4o", inputTokens: 2000, outputTokens: 0 });
    // 2026-03-02, its last millisecond: 0.0492 (b, claude-sonnet-4-5).
    t.setNow(Date.parse("2026-03-02T23:59:59.999Z"));
    await record({
      accountId: "acct-b",
      modelId: "claude-sonnet-4-5",
      inputTokens: 10000,
      outputTokens: 2000,
      cachedTokens: 4000,
    });
    // 2026-03-04, its first millisecond: 0.0045 (a, claude) and 0.00725 (a, gpt-4o).
    t.setNow(Date.parse("2026-03-04T00:00:00.000Z"));
    const claude = { modelId: "claude-sonnet-4-5", inputTokens: 1000, outputTokens: 100 };
    await record({ accountId: "acct-a", ...claude });
    await record({ accountId: "acct-a", ...gpt });
  });
  afterAll(async () => t.close());

  it("groups by UTC day, ascending, beside the unchanged summary", async () => {
    const s = await summary({ groupBy: "day" });
    expect(s).toEqual({
      totalCostUsd: 0.0732,
      totalInputTokens: 15000,
      totalOutputTokens: 3100,
      creditsCharged: 0,
      creditsReversed: 0,
      byContext: { customer: 0.0682, system: 0.005 },
      byModel: {
        "gpt-4o": { costUsd: 0.0195, count: 3 },
        "claude-sonnet-4-5": { costUsd: 0.0537, count: 2 },
      },
      groups: [
        {
          key: "2026-03-01",
          requestCount: 2,
          inputTokens: 3000,
          cachedTokens: 200,
          outputTokens: 500,
          costUsd: 0.01225,
          creditsCharged: 0,
          creditsReversed: 0,
        },
        {
          key: "2026-03-02",
          requestCount: 1,
          inputTokens: 10000,
          cachedTokens: 4000,
          outputTokens: 2000,
          costUsd: 0.0492,
          creditsCharged: 0,
          creditsReversed: 0,
        },
        {
          key: "2026-03-04",
          requestCount: 2,
          inputTokens: 2000,
          cachedTokens: 200,
          outputTokens: 600,
          costUsd: 0.01175,
          creditsCharged: 0,
          creditsReversed: 0,
        },
      ],
    });
    // Without groupBy the summary has no groups.
    expect(await summary()).not.toHaveProperty("groups");
  });

  it("groups by model and by context, by cost descending", async () => {
    expect(await groups("model")).toEqual([
      {
        key: "claude-sonnet-4-5",
        requestCount: 2,
        inputTokens: 11000,
        cachedTokens: 4000,
        outputTokens: 2100,
        costUsd: 0.0537,
        creditsCharged: 0,
        creditsReversed: 0,
      },
      {
        key: "gpt-4o",
        requestCount: 3,
        inputTokens: 4000,
        cachedTokens: 400,
        outputTokens: 1000,
        costUsd: 0.0195,
        creditsCharged: 0,
        creditsReversed: 0,
      },
    ]);
    expect(await groups("context")).toEqual([
      {
        key: "customer",
        requestCount: 4,
        inputTokens: 13000,
        cachedTokens: 4400,
        outputTokens: 3100,
        costUsd: 0.0682,
        creditsCharged: 0,
        creditsReversed: 0,
      },
      {
        key: "system",
        requestCount: 1,
        inputTokens: 2000,
        cachedTokens: 0,
        outputTokens: 0,
        costUsd: 0.005,
        creditsCharged: 0,
        creditsReversed: 0,
      },
    ]);
  });

  it("groups by account with its externalId, system usage under a null key", async () => {
    expect(await groups("account")).toEqual([
      {
        key: b,
        externalId: "acct-b",
        requestCount: 1,
        inputTokens: 10000,
        cachedTokens: 4000,
        outputTokens: 2000,
        costUsd: 0.0492,
        creditsCharged: 0,
        creditsReversed: 0,
      },
      {
        key: a,
        externalId: "acct-a",
        requestCount: 3,
        inputTokens: 3000,
        cachedTokens: 400,
        outputTokens: 1100,
        costUsd: 0.019,
        creditsCharged: 0,
        creditsReversed: 0,
      },
      {
        key: null,
        externalId: null,
        requestCount: 1,
        inputTokens: 2000,
        cachedTokens: 0,
        outputTokens: 0,
        costUsd: 0.005,
        creditsCharged: 0,
        creditsReversed: 0,
      },
    ]);
  });

  it("applies the summary's filters, combined, to the groups", async () => {
    const aGpt = await summary({ accountId: "acct-a", modelId: "gpt-4o", groupBy: "day" });
    expect(aGpt.totalCostUsd).toBe(0.0145);
    expect(aGpt.groups?.map((g) => [g.key, g.costUsd, g.requestCount])).toEqual([
      ["2026-03-01", 0.00725, 1],
      ["2026-03-04", 0.00725, 1],
    ]);
    // externalId= names the account too; dates bound by createdAt (a date-only end: whole day).
    const late = await groups("model", {
      externalId: "acct-a",
      startDate: "2026-03-02",
      endDate: "2026-03-04",
    });
    expect(late.map((g) => [g.key, g.costUsd])).toEqual([
      ["gpt-4o", 0.00725],
      ["claude-sonnet-4-5", 0.0045],
    ]);
    const day2 = await groups("account", {
      startDate: "2026-03-02T00:00:00Z",
      endDate: "2026-03-02",
    });
    expect(day2.map((g) => [g.externalId, g.costUsd])).toEqual([["acct-b", 0.0492]]);
    const system = await groups("account", { context: "system" });
    expect(system.map((g) => [g.key, g.externalId, g.costUsd])).toEqual([[null, null, 0.005]]);
    expect(await groups("day", { modelId: "no-such-model" })).toEqual([]);
    // Another project's key sees none of these records.
    const other = await t.newProject("other");
    const s = await summary({ groupBy: "account" }, other.key);
    expect(s.groups).toEqual([]);
    expect(s.totalCostUsd).toBe(0);
  });

  it("orders equal costs by key, a null key last", async () => {
    const day = Date.parse("2026-04-01T12:00:00.000Z");
    t.setNow(day);
    const c = await fundedAccount(t, "acct-c");
    const d = await fundedAccount(t, "acct-d");
    const same = { modelId: "gpt-4o", inputTokens: 4, outputTokens: 0 };
    for (const body of [
      { accountId: d, ...same },
      { context: "system", ...same },
      { accountId: c, ...same },
    ]) {
      await record(body);
    }
    const tied = await groups("account", { startDate: "2026-04-01", endDate: "2026-04-01" });
    expect(tied.map((g) => g.key)).toEqual([[c, d].sort()[0], [c, d].sort()[1], null]);
    expect(tied.every((g) => g.costUsd === 0.00001)).toBe(true);
  });

  it("refuses an unknown groupBy, and groupBy without summary=true", async () => {
    const unknown = { summary: true, groupBy: "week" };
    const err = await t.fail(usageRoutes.list, { query: unknown }, 400, "VALIDATION_ERROR");
    expect(JSON.stringify(err.error.details)).toContain("groupBy");
    await t.fail(usageRoutes.list, { query: { groupBy: "day" } }, 400, "VALIDATION_ERROR");
    const off = { summary: false, groupBy: "day" };
    await t.fail(usageRoutes.list, { query: off }, 400, "VALIDATION_ERROR");
  });

  it("gives at most 1,000 groups, and asks to narrow the query beyond", async () => {
    const p = await t.newProject("many-days");
    const start = Date.parse("2020-01-01T06:00:00.000Z");
    const rows = Array.from({ length: 1001 }, (_, i) => usageRow(p.projectId, start + i * DAY_MS));
    await t.ledger.queue.run(async (trx) => {
      for (let i = 0; i < rows.length; i += 200) {
        await trx
          .insertInto("usage_records")
          .values(rows.slice(i, i + 200))
          .execute();
      }
    });
    const all = { summary: true, groupBy: "day" };
    const err = await t.fail(usageRoutes.list, { query: all, key: p.key }, 400, "VALIDATION_ERROR");
    expect(err.error.message).toMatch(/more than 1000 groups: narrow the dates or filters/);
    // The first 1,000 days are exactly 1,000 groups: allowed.
    const lastOf1000 = new Date(start + 999 * DAY_MS).toISOString().slice(0, 10);
    const s = await summary({ groupBy: "day", endDate: lastOf1000 }, p.key);
    expect(s.groups).toHaveLength(1000);
    expect(s.groups?.[0]?.key).toBe("2020-01-01");
    expect(s.groups?.[999]?.key).toBe(lastOf1000);
    expect(s.totalCostUsd).toBe(0.01);

    // The same with 1,001 models (the catalog is not consulted for grouping).
    const q = await t.newProject("many-models");
    const models = Array.from({ length: 1001 }, (_, i) =>
      usageRow(q.projectId, start, { model_id: `model-${String(i).padStart(4, "0")}` }),
    );
    await t.ledger.queue.run(async (trx) => {
      for (let i = 0; i < models.length; i += 200) {
        await trx
          .insertInto("usage_records")
          .values(models.slice(i, i + 200))
          .execute();
      }
    });
    const byModel = { summary: true, groupBy: "model" };
    await t.fail(usageRoutes.list, { query: byModel, key: q.key }, 400, "VALIDATION_ERROR");
    const one = await summary({ groupBy: "model", modelId: "model-0007" }, q.key);
    expect(one.groups?.map((g) => g.key)).toEqual(["model-0007"]);
  });

  it("sums exactly past 2^53 and where a plain 64-bit SUM would overflow", async () => {
    const p = await t.newProject("huge");
    // Three records of 4e18 + 1 micro-USD and 999,999 pico-USD each: a plain SUM of the
    // micro-USD column (1.2e19) is past 2^63, and the token sums are past 2^53.
    await t.ledger.queue.run(async (trx) => {
      for (const id of ["use_h1", "use_h2", "use_h3"]) {
        await sql`INSERT INTO usage_records (id, project_id, account_id, context, model_id,
          usage_type, input_tokens, output_tokens, cached_tokens, transaction_id,
          input_micros_per_m, output_micros_per_m, cached_micros_per_m, cost_micro_usd,
          cost_pico_rem, metadata, created_at_ms)
          VALUES (${id}, ${p.projectId}, NULL, 'system', 'gpt-4o', 'text',
          ${sql.raw("4000000000000001")}, ${sql.raw("3000000000000001")},
          ${sql.raw("1000000000000001")}, NULL, 1, 1, 1, ${sql.raw("4000000000000000001")},
          999999, NULL, ${T0})`.execute(trx);
      }
    });
    for (const groupBy of ["day", "model", "account", "context"]) {
      const text = await rawText(`/v1/usage?summary=true&groupBy=${groupBy}`, p.key);
      expect(text).toContain('"totalCostUsd":12000000000000.000005999997');
      expect(text).toContain('"totalInputTokens":12000000000000003');
      expect(text).toContain('"totalOutputTokens":9000000000000003');
      expect(text).toContain(
        '"requestCount":3,"inputTokens":12000000000000003,"cachedTokens":3000000000000003,' +
          '"outputTokens":9000000000000003,"costUsd":12000000000000.000005999997,' +
          '"creditsCharged":0,"creditsReversed":0}',
      );
    }
  });

  it("is in the OpenAPI document", async () => {
    const res = await t.app.request("/openapi.json");
    const doc = (await res.json()) as {
      paths: Record<string, { get?: { parameters?: { name: string; schema?: unknown }[] } }>;
      components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
    };
    const param = doc.paths["/v1/usage"]?.get?.parameters?.find((p) => p.name === "groupBy");
    expect(param?.schema).toMatchObject({ enum: ["day", "model", "account", "context"] });
    const group = doc.components.schemas.UsageGroup;
    expect(Object.keys(group?.properties ?? {}).sort()).toEqual([
      "cachedTokens",
      "costUsd",
      "creditsCharged",
      "creditsReversed",
      "externalId",
      "inputTokens",
      "key",
      "outputTokens",
      "requestCount",
    ]);
    expect(doc.components.schemas.UsageSummary?.properties).toHaveProperty("groups");
  });
});
