import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { accountRoutes } from "../src/accounts/routes.ts";
import type { ErrorCode } from "../src/errors.ts";
import { modelRoutes } from "../src/models/routes.ts";
import { transactionRoutes } from "../src/transactions/routes.ts";
import { usageRoutes } from "../src/usage/routes.ts";
import { fundedAccount, makeLedger, type TestLedger } from "./harness.ts";

type Query = Record<string, string | number | boolean>;

describe("models", () => {
  let t: TestLedger;
  beforeAll(async () => {
    t = await makeLedger();
  });
  afterAll(async () => t.close());

  const models = async (query: Query = {}) => {
    const body = await t.call(modelRoutes.list, { query });
    expect(body.success).toBe(true);
    if (!("models" in body)) throw new Error(`no model list: ${JSON.stringify(body)}`);
    return body.models;
  };
  /** One model by `modelId`: the `{success, model}` form of the answer. */
  const model = async (modelId: string) => {
    const body = await t.call(modelRoutes.list, { query: { modelId } });
    expect(body.success).toBe(true);
    expect(body).not.toHaveProperty("models");
    if (!("model" in body)) throw new Error(`no model: ${JSON.stringify(body)}`);
    return body.model;
  };
  const calculate = (body: Record<string, unknown>) => t.call(modelRoutes.calculate, { body });
  const calculateFails = (body: Record<string, unknown>, status: number, code: ErrorCode) =>
    t.fail(modelRoutes.calculate, { body }, status, code);

  it("lists at least 30 models, each with its fields and text pricing", async () => {
    const all = await models();
    expect(all.length).toBeGreaterThanOrEqual(30);
    for (const m of all) {
      expect(typeof m.modelId).toBe("string");
      expect(m.provider.length).toBeGreaterThan(0);
      expect(m.displayName.length).toBeGreaterThan(0);
      expect(typeof m.modelType).toBe("string");
      expect(typeof m.tier).toBe("string");
      expect(m.pricing.text.inputPerMillion).toBeGreaterThanOrEqual(0);
      expect(m.pricing.text.outputPerMillion).toBeGreaterThanOrEqual(0);
      expect(Number.isInteger(m.pricing.contextWindow)).toBe(true);
      expect(m.pricing.contextWindow).toBeGreaterThan(0);
    }
    expect(new Set(all.map((m) => m.modelId)).size).toBe(all.length);
  });

  it("filters by provider and tier", async () => {
    const anthropic = await models({ provider: "anthropic" });
    expect(anthropic.length).toBeGreaterThan(0);
    expect(anthropic.every((m) => m.provider === "anthropic")).toBe(true);
    expect(anthropic.map((m) => m.modelId)).toContain("claude-sonnet-4-5");
    const flagship = await models({ tier: "flagship" });
    expect(flagship.length).toBeGreaterThan(0);
    expect(flagship.every((m) => m.tier === "flagship")).toBe(true);
    expect(flagship.map((m) => m.modelId)).toContain("mistral-large-latest");
    const both = await models({ provider: "mistral", tier: "flagship" });
    expect(both.map((m) => m.modelId)).toEqual(["mistral-large-latest"]);
    expect(await models({ provider: "no-such-provider" })).toEqual([]);
    const all = await models();
    expect(all.length).toBeGreaterThan(anthropic.length);
  });

  it("returns one model by modelId, or 404 MODEL_NOT_FOUND", async () => {
    expect(await model("gpt-4o")).toMatchObject({
      modelId: "gpt-4o",
      provider: "openai",
      displayName: expect.any(String),
      pricing: {
        text: { inputPerMillion: 2.5, outputPerMillion: 10, cachedInputPerMillion: 1.25 },
        contextWindow: expect.any(Number),
      },
    });
    const mistral = await model("mistral-large-latest");
    expect(mistral.pricing.text).toEqual({
      inputPerMillion: 0.5,
      outputPerMillion: 1.5,
    });
    const query = { modelId: "no-such-model" };
    await t.fail(modelRoutes.list, { query }, 404, "MODEL_NOT_FOUND");
  });

  it("calculates exact costs", async () => {
    const cases: Array<[Record<string, unknown>, number]> = [
      // 800 × 2.5 + 200 × 1.25 + 500 × 10 = 7,250 µUSD
      [{ modelId: "gpt-4o", inputTokens: 1000, outputTokens: 500, cachedTokens: 200 }, 0.00725],
      // 6,000 × 3 + 4,000 × 0.3 + 2,000 × 15 = 49,200 µUSD
      [
        {
          modelId: "claude-sonnet-4-5",
          inputTokens: 10000,
          outputTokens: 2000,
          cachedTokens: 4000,
        },
        0.0492,
      ],
      // no cached price: 1,000 × 0.5 (cached at the input price) + 100 × 1.5 = 650 µUSD
      [
        {
          modelId: "mistral-large-latest",
          inputTokens: 1000,
          outputTokens: 100,
          cachedTokens: 400,
        },
        0.00065,
      ],
      [{ modelId: "mistral-large-latest", inputTokens: 1000, outputTokens: 100 }, 0.00065],
      // one token at 0.05 USD/M and one at 0.08 USD/M: 0.13 µUSD
      [{ modelId: "llama-3.1-8b-instant", inputTokens: 1, outputTokens: 1 }, 0.00000013],
      [{ modelId: "gpt-4.1-nano", inputTokens: 1, outputTokens: 0 }, 0.0000001],
      [{ modelId: "gpt-4o", inputTokens: 0, outputTokens: 0 }, 0],
      // 1e9 × 15 + 1e9 × 75 µUSD-per-million = 90,000 USD
      [{ modelId: "claude-opus-4-1", inputTokens: 1e9, outputTokens: 1e9 }, 90000],
    ];
    for (const [body, cost] of cases) {
      expect((await calculate(body)).estimatedCostUsd, JSON.stringify(body)).toBe(cost);
    }
    const res = await calculate({
      modelId: "mistral-large-latest",
      inputTokens: 1,
      outputTokens: 1,
    });
    expect(res).toMatchObject({
      success: true,
      modelId: "mistral-large-latest",
      modelName: expect.any(String),
      pricing: { inputPerMillion: 0.5, outputPerMillion: 1.5, cachedInputPerMillion: 0.5 },
    });
  });

  it("rejects invalid token counts and unknown models", async () => {
    const bad: Array<Record<string, unknown>> = [
      { modelId: "gpt-4o", inputTokens: 100, outputTokens: 0, cachedTokens: 101 },
      { modelId: "gpt-4o", inputTokens: -1, outputTokens: 0 },
      { modelId: "gpt-4o", inputTokens: 10, outputTokens: -5 },
      { modelId: "gpt-4o", inputTokens: 1.5, outputTokens: 0 },
      { modelId: "gpt-4o", inputTokens: 10, outputTokens: 2.25 },
      { modelId: "gpt-4o", inputTokens: 10, outputTokens: 0, cachedTokens: -1 },
      { modelId: "gpt-4o", outputTokens: 0 },
      { inputTokens: 1, outputTokens: 1 },
    ];
    for (const body of bad) await calculateFails(body, 400, "VALIDATION_ERROR");
    const unknown = { modelId: "nope", inputTokens: 1, outputTokens: 1 };
    await calculateFails(unknown, 404, "MODEL_NOT_FOUND");
  });
});

describe("usage", () => {
  let t: TestLedger;
  beforeEach(async () => {
    t = await makeLedger({ fakeClock: "2026-03-01T10:00:00Z" });
  });
  afterEach(async () => t.close());

  const record = (body: Record<string, unknown>) => t.call(usageRoutes.record, { body });
  const recordFails = (
    body: Record<string, unknown>,
    status: number,
    code: ErrorCode,
    key?: string,
  ) => t.fail(usageRoutes.record, { body, key }, status, code);
  const usage = async (query: Query = {}) => {
    const body = await t.call(usageRoutes.list, { query });
    expect(body.success).toBe(true);
    return body;
  };
  /** The records of a list (no `summary`). */
  const usageRecords = async (query: Query = {}) => {
    const body = await usage(query);
    if (!("usageRecords" in body)) throw new Error(`no records: ${JSON.stringify(body)}`);
    return body.usageRecords;
  };
  /** The `summary=true` form of the list. */
  const summary = async (query: Query = {}) => {
    const body = await usage({ ...query, summary: true });
    if (!("summary" in body)) throw new Error(`no summary: ${JSON.stringify(body)}`);
    return body.summary;
  };

  it("records customer usage with its cost and does not move credits", async () => {
    const accountId = await fundedAccount(t, "u1", 100);
    const res = await record({
      accountId: "u1",
      modelId: "gpt-4o",
      inputTokens: 1000,
      outputTokens: 500,
      cachedTokens: 200,
    });
    expect(res).toEqual({
      success: true,
      usageRecord: expect.objectContaining({
        id: expect.any(String),
        accountId,
        modelId: "gpt-4o",
        estimatedCostUsd: 0.00725,
        creditsCharged: null,
      }),
    });
    const balance = await t.call(accountRoutes.balance, { query: { externalId: "u1" } });
    expect(balance).toMatchObject({ balance: 100, reserved: 0, available: 100 });
    const txs = await t.call(transactionRoutes.list, { query: { accountId: "u1" } });
    expect(txs.pagination.totalCount).toBe(1);
    expect(await t.verify()).toEqual([]);
  });

  it("requires accountId for customer usage only, and checks model and transaction", async () => {
    await fundedAccount(t, "u1", 10);
    const noAccount = { modelId: "gpt-4o", inputTokens: 1, outputTokens: 1 };
    await recordFails(noAccount, 400, "VALIDATION_ERROR");
    const explicit = { context: "customer", modelId: "gpt-4o", inputTokens: 1, outputTokens: 1 };
    await recordFails(explicit, 400, "VALIDATION_ERROR");
    const system = await record({
      context: "system",
      modelId: "gpt-4o",
      inputTokens: 4,
      outputTokens: 0,
    });
    expect(system.usageRecord).toMatchObject({ modelId: "gpt-4o", estimatedCostUsd: 0.00001 });
    expect(system.usageRecord.accountId ?? null).toBeNull();

    const model = { accountId: "u1", modelId: "nope", inputTokens: 1, outputTokens: 1 };
    await recordFails(model, 404, "MODEL_NOT_FOUND");
    const account = { accountId: "ghost", modelId: "gpt-4o", inputTokens: 1, outputTokens: 1 };
    await recordFails(account, 404, "ACCOUNT_NOT_FOUND");
    const base = { accountId: "u1", modelId: "gpt-4o", inputTokens: 1, outputTokens: 1 };
    await recordFails({ ...base, transactionId: "txn_nope" }, 404, "TRANSACTION_NOT_FOUND");
    await recordFails({ ...base, cachedTokens: 2 }, 400, "VALIDATION_ERROR");

    const [first] = (await t.call(transactionRoutes.list, { query: { accountId: "u1" } })).items;
    const tx = first?.id;
    expect(tx).toEqual(expect.any(String));
    await record({ ...base, transactionId: tx });
    // Another project cannot link to this project's transaction.
    const other = await t.newProject("other");
    await recordFails(
      { context: "system", ...base, accountId: undefined, transactionId: tx },
      404,
      "TRANSACTION_NOT_FOUND",
      other.key,
    );
    expect(await usageRecords()).toHaveLength(2);
  });

  it("lists newest first with filters, and summarises exactly", async () => {
    const a = await fundedAccount(t, "a");
    const b = await fundedAccount(t, "b");
    const ids: string[] = [];
    const inputs: Array<Record<string, unknown>> = [
      {
        accountId: "a",
        modelId: "gpt-4o",
        inputTokens: 1000,
        outputTokens: 500,
        cachedTokens: 200,
      },
      {
        accountId: "b",
        modelId: "claude-sonnet-4-5",
        inputTokens: 10000,
        outputTokens: 2000,
        cachedTokens: 4000,
      },
      { context: "system", modelId: "gpt-4o", inputTokens: 2000, outputTokens: 0 },
      {
        accountId: a,
        modelId: "mistral-large-latest",
        inputTokens: 1000,
        outputTokens: 100,
        cachedTokens: 400,
      },
    ];
    for (const body of inputs) {
      ids.push((await record(body)).usageRecord.id);
      t.advance(1000);
    }
    const all = await usageRecords();
    expect(all.map((r) => r.id)).toEqual([...ids].reverse());
    expect(all[3]).toMatchObject({
      context: "customer",
      accountId: a,
      inputTokens: 1000,
      outputTokens: 500,
      estimatedCostUsd: 0.00725,
    });
    const ofA = await usageRecords({ accountId: "a" });
    expect(ofA.map((r) => r.id)).toEqual([ids[3], ids[0]]);
    const ofB = await usageRecords({ accountId: b });
    expect(ofB.map((r) => r.id)).toEqual([ids[1]]);
    const gpt = await usageRecords({ modelId: "gpt-4o" });
    expect(gpt.map((r) => r.id)).toEqual([ids[2], ids[0]]);
    const sys = await usageRecords({ context: "system" });
    expect(sys.map((r) => r.id)).toEqual([ids[2]]);

    // 0.00725 + 0.0492 + 0.005 + 0.00065 = 0.0621
    expect(await summary()).toEqual({
      totalCostUsd: 0.0621,
      totalInputTokens: 14000,
      totalOutputTokens: 2600,
      creditsCharged: 0,
      creditsReversed: 0,
      byContext: { customer: 0.0571, system: 0.005 },
      byModel: {
        "gpt-4o": { costUsd: 0.01225, count: 2 },
        "claude-sonnet-4-5": { costUsd: 0.0492, count: 1 },
        "mistral-large-latest": { costUsd: 0.00065, count: 1 },
      },
    });
    expect(await summary({ context: "system" })).toEqual({
      totalCostUsd: 0.005,
      totalInputTokens: 2000,
      totalOutputTokens: 0,
      creditsCharged: 0,
      creditsReversed: 0,
      byContext: { customer: 0, system: 0.005 },
      byModel: { "gpt-4o": { costUsd: 0.005, count: 1 } },
    });
    expect(await summary({ context: "customer", modelId: "gpt-4o" })).toMatchObject({
      totalCostUsd: 0.00725,
      byContext: { customer: 0.00725, system: 0 },
    });
    const ghost = { accountId: "ghost" };
    await t.fail(usageRoutes.list, { query: ghost }, 404, "ACCOUNT_NOT_FOUND");
    const robot = { context: "robot" };
    await t.fail(usageRoutes.list, { query: robot }, 400, "VALIDATION_ERROR");
  });

  it("summarises nothing as zeros with both contexts", async () => {
    expect(await summary()).toEqual({
      totalCostUsd: 0,
      totalInputTokens: 0,
      totalOutputTokens: 0,
      creditsCharged: 0,
      creditsReversed: 0,
      byContext: { customer: 0, system: 0 },
      byModel: {},
    });
  });

  it("sums 1,000 records of 0.0000001 USD to exactly 0.0001", async () => {
    const body = { context: "system", modelId: "gpt-4.1-nano", inputTokens: 1, outputTokens: 0 };
    for (let i = 0; i < 10; i++) {
      const batch = await Promise.all(Array.from({ length: 100 }, () => record(body)));
      for (const res of batch) expect(res.usageRecord.estimatedCostUsd).toBe(0.0000001);
    }
    const total = await summary();
    expect(total.totalCostUsd).toBe(0.0001);
    expect(total.byContext).toEqual({ customer: 0, system: 0.0001 });
    expect(total.byModel).toEqual({ "gpt-4.1-nano": { costUsd: 0.0001, count: 1000 } });
    expect(total.totalInputTokens).toBe(1000);
  });

  it("keeps the price a record was costed at when the model's price changes", async () => {
    await fundedAccount(t, "u1");
    const body = { accountId: "u1", modelId: "gpt-4o", inputTokens: 1000, outputTokens: 100 };
    const before = await record(body);
    // 1,000 × 2.5 + 100 × 10 = 3,500 µUSD
    expect(before.usageRecord.estimatedCostUsd).toBe(0.0035);
    await t.ledger.queue.run((trx) =>
      trx
        .updateTable("models")
        .set({ input_micros_per_m: 5_000_000 })
        .where("model_id", "=", "gpt-4o")
        .execute(),
    );
    t.advance(1000);
    const after = await record(body);
    // 1,000 × 5 + 100 × 10 = 6,000 µUSD
    expect(after.usageRecord.estimatedCostUsd).toBe(0.006);
    const records = await usageRecords({ accountId: "u1" });
    expect(records.map((r) => r.estimatedCostUsd)).toEqual([0.006, 0.0035]);
    expect((await summary()).totalCostUsd).toBe(0.0095);
    const calc = await t.call(modelRoutes.calculate, { body: { ...body, accountId: undefined } });
    expect(calc.estimatedCostUsd).toBe(0.006);
  });
});
