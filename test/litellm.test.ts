import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  catalogFileSchema,
  catalogModelSchema,
  decimalPlaces,
} from "../src/models/catalog-format.ts";
import {
  convertLitellm,
  displayNameFor,
  isLitellmMap,
  perTokenToPerMillion,
  stripProviderPrefix,
} from "../src/models/litellm.ts";

/**
 * LiteLLM's full price map (`model_prices_and_context_window.json`), named by the environment
 * variable LITELLM_PRICES_FILE; the tests that need it are skipped when it is not set.
 */
const LITELLM_FILE = process.env.LITELLM_PRICES_FILE ?? "";
const CATALOG_FILE = new URL("../data/models.json", import.meta.url);

const readJson = (file: string | URL): Record<string, unknown> =>
  JSON.parse(readFileSync(file, "utf8"));

/** Small LiteLLM-shaped fixture: prices in USD per token. */
const FIXTURE: Record<string, unknown> = {
  sample_spec: { litellm_provider: "one of …", mode: "one of: chat, embedding", max_tokens: "…" },
  "gpt-4o": {
    litellm_provider: "openai",
    mode: "chat",
    input_cost_per_token: 2.5e-6,
    output_cost_per_token: 1e-5,
    cache_read_input_token_cost: 1.25e-6,
    max_input_tokens: 128000,
    supports_vision: true,
  },
  "text-embedding-3-small": {
    litellm_provider: "openai",
    mode: "embedding",
    input_cost_per_token: 2e-8,
    output_cost_per_token: 0,
    max_input_tokens: 8191,
  },
  "xai/grok-4": {
    litellm_provider: "xai",
    mode: "chat",
    input_cost_per_token: 3e-6,
    output_cost_per_token: 1.5e-5,
    max_input_tokens: 256000,
  },
  "gemini/gemini-2.5-flash": {
    litellm_provider: "gemini",
    mode: "chat",
    input_cost_per_token: 3e-7,
    output_cost_per_token: 2.5e-6,
    max_input_tokens: 1048576,
  },
  "gemini-2.5-flash": {
    litellm_provider: "vertex_ai-language-models",
    mode: "chat",
    input_cost_per_token: 3e-7,
    output_cost_per_token: 2.5e-6,
    cache_read_input_token_cost: 3e-8,
    max_input_tokens: 1048576,
  },
  "no-price-model": { litellm_provider: "openai", mode: "chat", max_input_tokens: 1000 },
  "no-context-model": {
    litellm_provider: "openai",
    mode: "chat",
    input_cost_per_token: 1e-6,
    output_cost_per_token: 2e-6,
  },
  "legacy-max-tokens": {
    litellm_provider: "mistral",
    mode: "chat",
    input_cost_per_token: 1e-6,
    output_cost_per_token: 3e-6,
    max_tokens: 32000,
  },
};

describe("perTokenToPerMillion (USD per token → USD per million tokens)", () => {
  it.each([
    [2.5e-6, 2.5],
    [1e-5, 10],
    [3e-8, 0.03],
    [2.8e-8, 0.028],
    // The brief's 3.9999999999999997e-07 parses to the same double as 4e-7 (which × 1e6 in
    // floats gives 0.39999999999999997); 3.9999999999999993e-7 is a genuinely different double.
    [Number("3.9999999999999997e-07"), 0.4],
    [3.9999999999999993e-7, 0.4],
    [2.9999900000000002e-6, 2.99999],
    [1.5000020000000002e-5, 15.00002],
    [0, 0],
    [1.875e-8, 0.01875],
    [3.625e-9, 0.003625],
    [1.5e-5, 15],
    [0.00012, 120],
  ])("%s → %s", (perToken, perMillion) => {
    expect(perTokenToPerMillion(perToken)).toBe(perMillion);
  });

  it("rounds half-up beyond 6 decimals", () => {
    expect(perTokenToPerMillion(1.2345675e-12)).toBe(0.000001);
    expect(perTokenToPerMillion(1.4999e-12)).toBe(0.000001);
    expect(perTokenToPerMillion(4.999e-13)).toBe(0);
    expect(perTokenToPerMillion(1.0000005e-6)).toBe(1.000001);
  });

  it("rejects non-finite input", () => {
    expect(() => perTokenToPerMillion(Number.NaN)).toThrow(RangeError);
    expect(() => perTokenToPerMillion(Number.POSITIVE_INFINITY)).toThrow(RangeError);
  });
});

describe("catalog-format", () => {
  const model = {
    modelId: "gpt-4o",
    provider: "openai",
    displayName: "GPT-4o",
    modelType: "multimodal",
    tier: "balanced",
    pricing: { text: { inputPerMillion: 2.5, outputPerMillion: 10 }, contextWindow: 128000 },
    source: "litellm:gpt-4o",
    pricesAsOf: "2026-07-24",
  };
  const withInput = (inputPerMillion: number) => ({
    ...model,
    pricing: { ...model.pricing, text: { ...model.pricing.text, inputPerMillion } },
  });

  it("counts decimals from the shortest decimal string", () => {
    expect(decimalPlaces(1e-7)).toBe(7);
    expect(decimalPlaces(0.000001)).toBe(6);
    expect(decimalPlaces(2.5)).toBe(1);
    expect(decimalPlaces(1000)).toBe(0);
  });

  it("accepts a valid entry and rejects bad prices, windows and ids", () => {
    expect(catalogModelSchema.safeParse(model).success).toBe(true);
    expect(catalogModelSchema.safeParse(withInput(0.0000001)).success).toBe(false);
    expect(catalogModelSchema.safeParse(withInput(-1)).success).toBe(false);
    expect(catalogModelSchema.safeParse(withInput(1000.5)).success).toBe(false);
    expect(catalogModelSchema.safeParse(withInput(Number.POSITIVE_INFINITY)).success).toBe(false);
    const badWindow = { ...model, pricing: { ...model.pricing, contextWindow: 1.5 } };
    expect(catalogModelSchema.safeParse(badWindow).success).toBe(false);
    expect(catalogModelSchema.safeParse({ ...model, modelId: "" }).success).toBe(false);
    expect(catalogModelSchema.safeParse({ ...model, modelId: "x".repeat(256) }).success).toBe(
      false,
    );
  });

  it("rejects duplicate modelIds in a catalog file", () => {
    const file = { source: "test", pricesAsOf: "2026-07-24", models: [model, model] };
    expect(catalogFileSchema.safeParse(file).success).toBe(false);
  });
});

describe("helpers", () => {
  it("derives readable display names", () => {
    expect(displayNameFor("gpt-4o")).toBe("GPT-4o");
    expect(displayNameFor("gpt-4.1-mini")).toBe("GPT-4.1 mini");
    expect(displayNameFor("claude-sonnet-4-5")).toBe("Claude Sonnet 4.5");
    expect(displayNameFor("gemini-2.5-flash")).toBe("Gemini 2.5 Flash");
    expect(displayNameFor("o4-mini")).toBe("o4-mini");
    expect(displayNameFor("mistral-large-latest")).toBe("Mistral Large");
    expect(displayNameFor("deepseek-chat")).toBe("DeepSeek Chat");
    expect(displayNameFor("llama-3.3-70b-versatile")).toBe("Llama 3.3 70B Versatile");
  });

  it("strips only a leading segment naming the provider", () => {
    expect(stripProviderPrefix("xai/grok-4", "xai")).toBe("grok-4");
    expect(stripProviderPrefix("vertex_ai/gemini-3-pro", "vertex_ai-language-models")).toBe(
      "gemini-3-pro",
    );
    expect(stripProviderPrefix("groq/meta-llama/llama-4-scout", "groq")).toBe(
      "meta-llama/llama-4-scout",
    );
    expect(stripProviderPrefix("1024-x-1024/dall-e-3", "openai")).toBe("1024-x-1024/dall-e-3");
  });

  it("tells LiteLLM maps from catalog files", () => {
    expect(isLitellmMap(FIXTURE)).toBe(true);
    expect(isLitellmMap({ source: "x", pricesAsOf: "2026-07-24", models: [] })).toBe(false);
    expect(isLitellmMap([])).toBe(false);
    expect(isLitellmMap(null)).toBe(false);
    expect(isLitellmMap({ a: 1 })).toBe(false);
  });
});

describe("convertLitellm on a fixture", () => {
  const { models, skipped } = convertLitellm(FIXTURE);
  const byId = new Map(models.map((m) => [m.modelId, m]));
  const reasonFor = (key: string) => skipped.find((s) => s.key === key)?.reason;

  it("keeps chat entries with prices, cached price optional", () => {
    expect(byId.get("gpt-4o")).toEqual({
      modelId: "gpt-4o",
      provider: "openai",
      displayName: "GPT-4o",
      modelType: "multimodal",
      tier: "balanced",
      pricing: {
        text: { inputPerMillion: 2.5, outputPerMillion: 10, cachedInputPerMillion: 1.25 },
        contextWindow: 128000,
      },
      source: "litellm:gpt-4o",
      pricesAsOf: "2026-07-24",
    });
    const grok = byId.get("grok-4");
    expect(grok?.pricing.text).toEqual({ inputPerMillion: 3, outputPerMillion: 15 });
    expect(grok?.pricing.text).not.toHaveProperty("cachedInputPerMillion");
    expect(grok?.modelType).toBe("text");
  });

  it("strips provider prefixes and prefers the un-prefixed key on duplicates", () => {
    expect(byId.get("grok-4")?.source).toBe("litellm:xai/grok-4");
    const flash = byId.get("gemini-2.5-flash");
    expect(flash?.source).toBe("litellm:gemini-2.5-flash");
    expect(flash?.provider).toBe("google");
    expect(flash?.pricing.text.cachedInputPerMillion).toBe(0.03);
    expect(reasonFor("gemini/gemini-2.5-flash")).toMatch(/duplicate/);
    expect(models.map((m) => m.modelId)).toEqual([
      "gpt-4o",
      "grok-4",
      "gemini-2.5-flash",
      "legacy-max-tokens",
    ]);
  });

  it("falls back to max_tokens for the context window", () => {
    expect(byId.get("legacy-max-tokens")?.pricing.contextWindow).toBe(32000);
  });

  it("skips non-chat, sample_spec and incomplete entries with a reason", () => {
    expect(reasonFor("text-embedding-3-small")).toMatch(/embedding/);
    expect(reasonFor("sample_spec")).toMatch(/sample_spec/);
    expect(reasonFor("no-price-model")).toMatch(/price/);
    expect(reasonFor("no-context-model")).toMatch(/max_input_tokens/);
  });

  it("filters by normalised provider", () => {
    const google = convertLitellm(FIXTURE, { provider: "google" });
    expect(google.models.map((m) => m.modelId)).toEqual(["gemini-2.5-flash"]);
    const xai = convertLitellm(FIXTURE, { provider: "xai" });
    expect(xai.models.map((m) => m.source)).toEqual(["litellm:xai/grok-4"]);
  });

  it("takes only the listed keys, in order, with the given date", () => {
    const result = convertLitellm(FIXTURE, {
      only: ["xai/grok-4", "gpt-4o", "missing-key"],
      pricesAsOf: "2026-01-01",
    });
    expect(result.models.map((m) => m.modelId)).toEqual(["grok-4", "gpt-4o"]);
    expect(result.models.every((m) => m.pricesAsOf === "2026-01-01")).toBe(true);
    expect(result.skipped).toEqual([{ key: "missing-key", reason: "key not in map" }]);
  });
});

describe.skipIf(!existsSync(LITELLM_FILE))("convertLitellm on LiteLLM's full price map", () => {
  it("converts gpt-4o and claude-sonnet-4-5 exactly", () => {
    const map = readJson(LITELLM_FILE);
    expect(isLitellmMap(map)).toBe(true);
    const { models } = convertLitellm(map, { only: ["gpt-4o", "claude-sonnet-4-5"] });
    expect(models.map((m) => [m.modelId, m.provider, m.pricing])).toEqual([
      [
        "gpt-4o",
        "openai",
        {
          text: { inputPerMillion: 2.5, outputPerMillion: 10, cachedInputPerMillion: 1.25 },
          contextWindow: 128000,
        },
      ],
      [
        "claude-sonnet-4-5",
        "anthropic",
        {
          text: { inputPerMillion: 3, outputPerMillion: 15, cachedInputPerMillion: 0.3 },
          contextWindow: 200000,
        },
      ],
    ]);
  });

  it("converts the whole map into valid, unique models", () => {
    const { models } = convertLitellm(readJson(LITELLM_FILE));
    expect(models.length).toBeGreaterThan(500);
    expect(new Set(models.map((m) => m.modelId)).size).toBe(models.length);
    expect(() =>
      catalogFileSchema.parse({ source: "litellm", pricesAsOf: "2026-07-24", models }),
    ).not.toThrow();
  });
});

describe("shipped catalog data/models.json", () => {
  const catalog = catalogFileSchema.parse(readJson(CATALOG_FILE));

  it("is a valid catalog with ≥ 30 models from ≥ 7 providers and unique ids", () => {
    expect(catalog.pricesAsOf).toBe("2026-07-24");
    expect(catalog.source).toMatch(/LiteLLM/);
    expect(catalog.models.length).toBeGreaterThanOrEqual(30);
    expect(new Set(catalog.models.map((m) => m.provider)).size).toBeGreaterThanOrEqual(7);
    expect(new Set(catalog.models.map((m) => m.modelId)).size).toBe(catalog.models.length);
  });

  it.skipIf(!existsSync(LITELLM_FILE))(
    "matches what convertLitellm gives for each source key",
    () => {
      const map = readJson(LITELLM_FILE);
      for (const shipped of catalog.models) {
        const key = shipped.source.replace(/^litellm:/, "");
        const [converted] = convertLitellm(map, { only: [key] }).models;
        expect(converted, key).toBeDefined();
        expect(shipped.modelId, key).toBe(converted?.modelId);
        expect(shipped.pricing, key).toEqual(converted?.pricing);
        expect(shipped.modelType, key).toBe(converted?.modelType);
        expect(shipped.pricesAsOf, key).toBe(converted?.pricesAsOf);
      }
    },
  );
});
