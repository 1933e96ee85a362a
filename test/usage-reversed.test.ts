/**
 * Reversed usage charges (docs/api.md#reversals, contract section 23): a usage record charged
 * with `deduct: true` whose debit is reversed (`POST /v1/transactions/reverse`) shows
 * `creditsReversed`, the exact sum of those reversals (0 when none, null for a record without a
 * charge), in the record's answer, the list and the export; usage summaries and their groups
 * add `creditsReversed` beside `creditsCharged`, counted in the record's group (its day, model,
 * account, context), never a reversal of another debit. On both engines.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import { projectRoutes } from "../src/projects/routes.ts";
import { transactionRoutes } from "../src/transactions/routes.ts";
import { usageRoutes } from "../src/usage/routes.ts";
import { fundedAccount, makeLedger, type TestLedger } from "./harness.ts";

const DAY1 = Date.parse("2026-05-01T10:00:00.000Z");
const DAY2 = Date.parse("2026-05-02T10:00:00.000Z");

/** gpt-4o: 2.5 USD per million input tokens, 10 per million output. */
const GPT = { modelId: "gpt-4o", inputTokens: 1000, outputTokens: 100 };
/** claude-sonnet-4-5: 3 USD per million input tokens, 15 per million output. */
const CLAUDE = { modelId: "claude-sonnet-4-5", inputTokens: 1000, outputTokens: 100 };

/** A CSV without quoted fields (none here) as objects keyed by its header row. */
function csvRows(text: string): { header: string[]; rows: Record<string, string>[] } {
  const [head, ...lines] = text.split("\r\n").filter((l) => l !== "");
  const header = (head ?? "").split(",");
  return {
    header,
    rows: lines.map((line) => {
      const cells = line.split(",");
      expect(cells).toHaveLength(header.length);
      return Object.fromEntries(header.map((name, k) => [name, cells[k] ?? ""]));
    }),
  };
}

describe("reversed usage charges", () => {
  let t: TestLedger;
  /** Charged on DAY1 (a, gpt-4o, 0.35 credits), reversed 0.1 + 0.000001 on DAY2. */
  let chargedA: { id: string; transactionId: string };
  /** Charged on DAY2 (b, claude, 0.45 credits), reversed 0.2. */
  let chargedB: { id: string; transactionId: string };
  /** Charged on DAY2 (a, gpt-4o, 0.35 credits), never reversed. */
  let untouched: string;
  /** Recorded without a charge (a, gpt-4o, DAY2). */
  let uncharged: string;
  let fresh: { creditsCharged: number | null; creditsReversed: number | null };
  let freshUncharged: { creditsReversed: number | null };

  const record = (body: Record<string, unknown>) => t.call(usageRoutes.record, { body });
  const reverse = (transactionId: string, amount: number) =>
    t.call(transactionRoutes.reverse, { body: { transactionId, amount } });
  const summary = async (query: Record<string, string | boolean> = {}) => {
    const res = await t.call(usageRoutes.list, { query: { summary: true, ...query } });
    if (!("summary" in res)) throw new Error("a summary was expected");
    return res.summary;
  };
  const rawText = async (path: string) => {
    const res = await t.app.request(path, { headers: { "X-API-Key": t.key } });
    expect(res.status).toBe(200);
    return res.text();
  };

  beforeAll(async () => {
    t = await makeLedger({ fakeClock: new Date(DAY1).toISOString() });
    await t.call(projectRoutes.update, { body: { creditsPerUsd: 100 } });
    await fundedAccount(t, "rev-a", 100);
    await fundedAccount(t, "rev-b", 100);
    const a = await record({ accountId: "rev-a", deduct: true, ...GPT });
    fresh = a.usageRecord;
    chargedA = { id: a.usageRecord.id, transactionId: String(a.transactionId) };
    t.setNow(DAY2);
    const b = await record({ accountId: "rev-b", deduct: true, ...CLAUDE });
    chargedB = { id: b.usageRecord.id, transactionId: String(b.transactionId) };
    untouched = (await record({ accountId: "rev-a", deduct: true, ...GPT })).usageRecord.id;
    const plain = await record({ accountId: "rev-a", ...GPT });
    uncharged = plain.usageRecord.id;
    freshUncharged = plain.usageRecord;
    await reverse(chargedA.transactionId, 0.1);
    await reverse(chargedA.transactionId, 0.000001);
    await reverse(chargedB.transactionId, 0.2);
    // A reversal of a debit that is no usage charge counts nowhere in usage.
    const deducted = await t.call(ledgerRoutes.deduct, { body: { accountId: "rev-a", amount: 3 } });
    await reverse(deducted.transactionId, 1);
  });
  afterAll(async () => t.close());

  it("shows 0 on a fresh charge and null on a record without one", () => {
    expect(fresh).toMatchObject({ creditsCharged: 0.35, creditsReversed: 0 });
    expect(freshUncharged.creditsReversed).toBeNull();
  });

  it("shows each record's reversals, summed, in the list", async () => {
    const listed = await t.call(usageRoutes.list, { query: { limit: 10 } });
    if (!("usageRecords" in listed)) throw new Error("a list was expected");
    const of = Object.fromEntries(
      listed.usageRecords.map((r) => [r.id, [r.creditsCharged, r.creditsReversed]]),
    );
    expect(of).toEqual({
      [chargedA.id]: [0.35, 0.100001],
      [chargedB.id]: [0.45, 0.2],
      [untouched]: [0.35, 0],
      [uncharged]: [null, null],
    });
    const one = await t.call(usageRoutes.list, { query: { externalId: "rev-b" } });
    if (!("usageRecords" in one)) throw new Error("a list was expected");
    expect(one.usageRecords.map((r) => r.creditsReversed)).toEqual([0.2]);
    expect(await t.verify()).toEqual([]);
  });

  it("sums creditsReversed beside creditsCharged in summaries and every kind of group", async () => {
    const total = await summary();
    expect(total).toMatchObject({ creditsCharged: 1.15, creditsReversed: 0.300001 });
    const byModel = await summary({ groupBy: "model" });
    expect(byModel.groups?.map((g) => [g.key, g.creditsCharged, g.creditsReversed])).toEqual([
      ["gpt-4o", 0.7, 0.100001],
      ["claude-sonnet-4-5", 0.45, 0.2],
    ]);
    expect(byModel.creditsReversed).toBe(0.300001);
    // A reversal counts in its record's day (DAY1), not in the day it was booked.
    const byDay = await summary({ groupBy: "day" });
    expect(byDay.groups?.map((g) => [g.key, g.creditsCharged, g.creditsReversed])).toEqual([
      ["2026-05-01", 0.35, 0.100001],
      ["2026-05-02", 0.8, 0.2],
    ]);
    const byAccount = await summary({ groupBy: "account" });
    expect(
      byAccount.groups?.map((g) => [g.externalId, g.creditsCharged, g.creditsReversed]),
    ).toEqual([
      ["rev-a", 0.7, 0.100001],
      ["rev-b", 0.45, 0.2],
    ]);
    const byContext = await summary({ groupBy: "context" });
    expect(byContext.groups?.map((g) => [g.key, g.creditsReversed])).toEqual([
      ["customer", 0.300001],
    ]);
  });

  it("applies the summary's filters to the reversals", async () => {
    expect(await summary({ externalId: "rev-b" })).toMatchObject({
      creditsCharged: 0.45,
      creditsReversed: 0.2,
    });
    expect(await summary({ externalId: "rev-a", groupBy: "day" })).toMatchObject({
      creditsCharged: 0.7,
      creditsReversed: 0.100001,
    });
    expect(await summary({ modelId: "gpt-4o", startDate: "2026-05-02" })).toMatchObject({
      creditsCharged: 0.35,
      creditsReversed: 0,
    });
    expect(await summary({ context: "system", groupBy: "model" })).toMatchObject({
      creditsReversed: 0,
      groups: [],
    });
    // Another project sees none of them.
    const other = await t.newProject("other");
    const res = await t.call(usageRoutes.list, { query: { summary: true }, key: other.key });
    expect("summary" in res && res.summary.creditsReversed).toBe(0);
  });

  it("ends the export's columns with creditsCharged, creditsReversed; NDJSON items carry it", async () => {
    const { header, rows } = csvRows(await rawText("/v1/usage/export"));
    expect(header.slice(-2)).toEqual(["creditsCharged", "creditsReversed"]);
    expect(rows.map((r) => [r.id, r.creditsCharged, r.creditsReversed])).toEqual([
      [chargedA.id, "0.35", "0.100001"],
      [chargedB.id, "0.45", "0.2"],
      [untouched, "0.35", "0"],
      [uncharged, "", ""],
    ]);
    const lines = (await rawText("/v1/usage/export?format=ndjson&externalId=rev-a"))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { id: string; creditsReversed: number | null });
    expect(lines.map((l) => [l.id, l.creditsReversed])).toEqual([
      [chargedA.id, 0.100001],
      [untouched, 0],
      [uncharged, null],
    ]);
  });

  it("documents creditsReversed in the OpenAPI document", async () => {
    const res = await t.app.request("/openapi.json");
    const doc = (await res.json()) as {
      components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
    };
    for (const name of ["UsageRecord", "UsageGroup", "UsageSummary"]) {
      expect(doc.components.schemas[name]?.properties, name).toHaveProperty("creditsReversed");
    }
  });
});
