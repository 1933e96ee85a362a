import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { fundedAccount, makeLedger, type TestLedger } from "./harness.ts";

interface Model {
  modelId: string;
  provider: string;
  displayName: string;
  modelType: string;
  tier: string;
  pricing: {
    text: { inputPerMillion: number; outputPerMillion: number; cachedInputPerMillion?: number };
    contextWindow: number;
  };
}

describe("models", () => {
  let t: TestLedger;
  beforeAll(async () => {
    t = await makeLedger();
  });
  afterAll(async () => t.close());

  const models = async (query = "") => {
    const res = await t.api("GET", `/v1/models${query}`);
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    return res.body.models as Model[];
  };
  const calculate = (body: Record<string, unknown>) =>
    t.api("POST", "/v1/models/calculate", { body });

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
    const anthropic = await models("?provider=anthropic");
    expect(anthropic.length).toBeGreaterThan(0);
    expect(anthropic.every((m) => m.provider === "anthropic")).toBe(true);
    expect(anthropic.map((m) => m.modelId)).toContain("claude-sonnet-4-5");
    const flagship = await models("?tier=flagship");
    expect(flagship.length).toBeGreaterThan(0);
    expect(flagship.every((m) => m.tier === "flagship")).toBe(true);
    expect(flagship.map((m) => m.modelId)).toContain("mistral-large-latest");
    const both = await models("?provider=mistral&tier=flagship");
    expect(both.map((m) => m.modelId)).toEqual(["mistral-large-latest"]);
    expect(await models("?provider=no-such-provider")).toEqual([]);
    const all = await models();
    expect(all.length).toBeGreaterThan(anthropic.length);
  });

  it("returns one model by modelId, or 404 MODEL_NOT_FOUND", async () => {
    const res = await t.api("GET", "/v1/models?modelId=gpt-4o");
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    expect(res.body.models).toBeUndefined();
    expect(res.body.model).toMatchObject({
      modelId: "gpt-4o",
      provider: "openai",
      displayName: expect.any(String),
      pricing: {
        text: { inputPerMillion: 2.5, outputPerMillion: 10, cachedInputPerMillion: 1.25 },
        contextWindow: expect.any(Number),
      },
    });
    const mistral = await t.api("GET", "/v1/models?modelId=mistral-large-latest");
    expect(mistral.body.model.pricing.text).toEqual({
      inputPerMillion: 0.5,
      outputPerMillion: 1.5,
    });
    const missing = await t.api("GET", "/v1/models?modelId=no-such-model");
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ success: false, error: { code: "MODEL_NOT_FOUND" } });
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
      const res = await calculate(body);
      expect(res.status, JSON.stringify(body)).toBe(200);
      expect(res.body.estimatedCostUsd, JSON.stringify(body)).toBe(cost);
    }
    const res = await calculate({
      modelId: "mistral-large-latest",
      inputTokens: 1,
      outputTokens: 1,
    });
    expect(res.body).toMatchObject({
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
    for (const body of bad) {
      const res = await calculate(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe("VALIDATION_ERROR");
    }
    const unknown = await calculate({ modelId: "nope", inputTokens: 1, outputTokens: 1 });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe("MODEL_NOT_FOUND");
  });
});

describe("usage", () => {
  let t: TestLedger;
  beforeEach(async () => {
    t = await makeLedger({ fakeClock: "2026-03-01T10:00:00Z" });
  });
  afterEach(async () => t.close());

  const record = (body: Record<string, unknown>, key?: string) =>
    t.api("POST", "/v1/usage/record", key === undefined ? { body } : { body, key });
  const usage = async (query = "") => {
    const res = await t.api("GET", `/v1/usage${query}`);
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    return res.body;
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
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      usageRecord: expect.objectContaining({
        id: expect.any(String),
        accountId,
        modelId: "gpt-4o",
        estimatedCostUsd: 0.00725,
      }),
    });
    const balance = await t.api("GET", "/v1/accounts/balance?externalId=u1");
    expect(balance.body).toMatchObject({ balance: 100, reserved: 0, available: 100 });
    const txs = await t.api("GET", "/v1/transactions?accountId=u1");
    expect(txs.body.pagination.totalCount).toBe(1);
    expect(await t.verify()).toEqual([]);
  });

  it("requires accountId for customer usage only, and checks model and transaction", async () => {
    await fundedAccount(t, "u1", 10);
    const noAccount = await record({ modelId: "gpt-4o", inputTokens: 1, outputTokens: 1 });
    expect(noAccount.status).toBe(400);
    expect(noAccount.body.error.code).toBe("VALIDATION_ERROR");
    const explicit = await record({
      context: "customer",
      modelId: "gpt-4o",
      inputTokens: 1,
      outputTokens: 1,
    });
    expect(explicit.status).toBe(400);
    const system = await record({
      context: "system",
      modelId: "gpt-4o",
      inputTokens: 4,
      outputTokens: 0,
    });
    expect(system.status).toBe(200);
    expect(system.body.usageRecord).toMatchObject({ modelId: "gpt-4o", estimatedCostUsd: 0.00001 });
    expect(system.body.usageRecord.accountId ?? null).toBeNull();

    const model = await record({
      accountId: "u1",
      modelId: "nope",
      inputTokens: 1,
      outputTokens: 1,
    });
    expect(model.status).toBe(404);
    expect(model.body.error.code).toBe("MODEL_NOT_FOUND");
    const account = await record({
      accountId: "ghost",
      modelId: "gpt-4o",
      inputTokens: 1,
      outputTokens: 1,
    });
    expect(account.status).toBe(404);
    expect(account.body.error.code).toBe("ACCOUNT_NOT_FOUND");
    const base = { accountId: "u1", modelId: "gpt-4o", inputTokens: 1, outputTokens: 1 };
    const txUnknown = await record({ ...base, transactionId: "txn_nope" });
    expect(txUnknown.status).toBe(404);
    expect(txUnknown.body.error.code).toBe("TRANSACTION_NOT_FOUND");
    const cached = await record({ ...base, cachedTokens: 2 });
    expect(cached.status).toBe(400);

    const tx = (await t.api("GET", "/v1/transactions?accountId=u1")).body.items[0].id;
    const linked = await record({ ...base, transactionId: tx });
    expect(linked.status).toBe(200);
    // Another project cannot link to this project's transaction.
    const other = await t.newProject("other");
    const foreign = await record(
      { context: "system", ...base, accountId: undefined, transactionId: tx },
      other.key,
    );
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe("TRANSACTION_NOT_FOUND");
    expect((await usage()).usageRecords).toHaveLength(2);
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
      const res = await record(body);
      expect(res.status).toBe(200);
      ids.push(res.body.usageRecord.id);
      t.advance(1000);
    }
    const all = (await usage()).usageRecords;
    expect(all.map((r: { id: string }) => r.id)).toEqual([...ids].reverse());
    expect(all[3]).toMatchObject({
      context: "customer",
      accountId: a,
      inputTokens: 1000,
      outputTokens: 500,
      estimatedCostUsd: 0.00725,
    });
    const ofA = (await usage("?accountId=a")).usageRecords;
    expect(ofA.map((r: { id: string }) => r.id)).toEqual([ids[3], ids[0]]);
    const ofB = (await usage(`?accountId=${b}`)).usageRecords;
    expect(ofB.map((r: { id: string }) => r.id)).toEqual([ids[1]]);
    const gpt = (await usage("?modelId=gpt-4o")).usageRecords;
    expect(gpt.map((r: { id: string }) => r.id)).toEqual([ids[2], ids[0]]);
    const sys = (await usage("?context=system")).usageRecords;
    expect(sys.map((r: { id: string }) => r.id)).toEqual([ids[2]]);

    // 0.00725 + 0.0492 + 0.005 + 0.00065 = 0.0621
    expect((await usage("?summary=true")).summary).toEqual({
      totalCostUsd: 0.0621,
      totalInputTokens: 14000,
      totalOutputTokens: 2600,
      byContext: { customer: 0.0571, system: 0.005 },
      byModel: {
        "gpt-4o": { costUsd: 0.01225, count: 2 },
        "claude-sonnet-4-5": { costUsd: 0.0492, count: 1 },
        "mistral-large-latest": { costUsd: 0.00065, count: 1 },
      },
    });
    expect((await usage("?summary=true&context=system")).summary).toEqual({
      totalCostUsd: 0.005,
      totalInputTokens: 2000,
      totalOutputTokens: 0,
      byContext: { customer: 0, system: 0.005 },
      byModel: { "gpt-4o": { costUsd: 0.005, count: 1 } },
    });
    expect((await usage("?summary=true&context=customer&modelId=gpt-4o")).summary).toMatchObject({
      totalCostUsd: 0.00725,
      byContext: { customer: 0.00725, system: 0 },
    });
    const unknown = await t.api("GET", "/v1/usage?accountId=ghost");
    expect(unknown.status).toBe(404);
    expect((await t.api("GET", "/v1/usage?context=robot")).status).toBe(400);
  });

  it("summarises nothing as zeros with both contexts", async () => {
    expect((await usage("?summary=true")).summary).toEqual({
      totalCostUsd: 0,
      totalInputTokens: 0,
      totalOutputTokens: 0,
      byContext: { customer: 0, system: 0 },
      byModel: {},
    });
  });

  it("sums 1,000 records of 0.0000001 USD to exactly 0.0001", async () => {
    const body = { context: "system", modelId: "gpt-4.1-nano", inputTokens: 1, outputTokens: 0 };
    for (let i = 0; i < 10; i++) {
      const batch = await Promise.all(Array.from({ length: 100 }, () => record(body)));
      for (const res of batch) {
        expect(res.status).toBe(200);
        expect(res.body.usageRecord.estimatedCostUsd).toBe(0.0000001);
      }
    }
    const summary = (await usage("?summary=true")).summary;
    expect(summary.totalCostUsd).toBe(0.0001);
    expect(summary.byContext).toEqual({ customer: 0, system: 0.0001 });
    expect(summary.byModel).toEqual({ "gpt-4.1-nano": { costUsd: 0.0001, count: 1000 } });
    expect(summary.totalInputTokens).toBe(1000);
  });

  it("keeps the price a record was costed at when the model's price changes", async () => {
    await fundedAccount(t, "u1");
    const body = { accountId: "u1", modelId: "gpt-4o", inputTokens: 1000, outputTokens: 100 };
    const before = await record(body);
    // 1,000 × 2.5 + 100 × 10 = 3,500 µUSD
    expect(before.body.usageRecord.estimatedCostUsd).toBe(0.0035);
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
    expect(after.body.usageRecord.estimatedCostUsd).toBe(0.006);
    const records = (await usage("?accountId=u1")).usageRecords;
    expect(records.map((r: { estimatedCostUsd: number }) => r.estimatedCostUsd)).toEqual([
      0.006, 0.0035,
    ]);
    expect((await usage("?summary=true")).summary.totalCostUsd).toBe(0.0095);
    const calc = await t.api("POST", "/v1/models/calculate", {
      body: { ...body, accountId: undefined },
    });
    expect(calc.body.estimatedCostUsd).toBe(0.006);
  });
});
