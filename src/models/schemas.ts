/**
 * zod schemas of the model catalog and the cost estimate (docs/api.md#usage-and-models), and the
 * mapper of a stored model to the API's Model object.
 */
import { z } from "@hono/zod-openapi";
import type { ModelRow } from "../db/schema.ts";
import { ex, exampleHaikuModel, exampleModel } from "../http/examples.ts";
import { idString, tokenCount } from "../http/schemas.ts";
import { type ExactDecimal, fromMicros } from "../money.ts";
import type { WireOf } from "../wire.ts";

export const modelSchema = z
  .object({
    modelId: z.string().openapi({ example: ex.modelId }),
    provider: z.string().openapi({ example: "anthropic" }),
    displayName: z.string().openapi({ example: "Claude Sonnet 4.5" }),
    modelType: z.string().openapi({ example: "multimodal" }),
    tier: z.string().openapi({ example: "balanced" }),
    pricing: z.object({
      text: z.object({
        inputPerMillion: z.number().openapi({ description: "USD", example: 3 }),
        outputPerMillion: z.number().openapi({ description: "USD", example: 15 }),
        cachedInputPerMillion: z.number().optional().openapi({ description: "USD", example: 0.3 }),
      }),
      contextWindow: z.number().openapi({ example: 200000 }),
    }),
    source: z.string().openapi({ example: "litellm:claude-sonnet-4-5" }),
    pricesAsOf: z.string().openapi({ example: "2026-07-24" }),
  })
  .openapi("Model", { example: exampleModel });

/** The API's Model object (docs/api.md#endpoints). */
export function modelJson(row: ModelRow): WireOf<typeof modelSchema> {
  const text: {
    inputPerMillion: ExactDecimal;
    outputPerMillion: ExactDecimal;
    cachedInputPerMillion?: ExactDecimal;
  } = {
    inputPerMillion: fromMicros(row.input_micros_per_m),
    outputPerMillion: fromMicros(row.output_micros_per_m),
  };
  if (row.cached_micros_per_m !== null) {
    text.cachedInputPerMillion = fromMicros(row.cached_micros_per_m);
  }
  return {
    modelId: row.model_id,
    provider: row.provider,
    displayName: row.display_name,
    modelType: row.model_type,
    tier: row.tier,
    pricing: { text, contextWindow: row.context_window },
    source: row.source,
    pricesAsOf: row.prices_as_of,
  };
}

export const modelsQuery = z.object({
  modelId: idString.optional().openapi({ description: "One model", example: ex.modelId }),
  provider: idString.optional().openapi({ example: "anthropic" }),
  tier: idString.optional().openapi({ example: "balanced" }),
});

export const modelsResponse = z
  .union([
    z.object({ success: z.literal(true), models: z.array(modelSchema) }),
    z.object({ success: z.literal(true), model: modelSchema }),
  ])
  .openapi({ example: { success: true as const, models: [exampleHaikuModel, exampleModel] } });

/** Token counts of a call; `cachedTokens` (default 0) is part of `inputTokens` (docs/api.md#recording-usage). */
export const tokenCountsShape = {
  inputTokens: tokenCount.openapi({ example: 9500 }),
  outputTokens: tokenCount.openapi({ example: 3100 }),
  cachedTokens: tokenCount
    .optional()
    .openapi({ description: "Part of inputTokens; default 0", example: 2000 }),
};

/** Refinement: cachedTokens ≤ inputTokens. */
export function cachedWithinInput(v: { inputTokens: number; cachedTokens?: number | undefined }) {
  return (v.cachedTokens ?? 0) <= v.inputTokens;
}

/** `cachedWithinInput`'s error: its message and the field it names. */
export const CACHED_WITHIN_INPUT = {
  message: "cachedTokens must not exceed inputTokens",
  path: ["cachedTokens"],
};

/** The example of a call's model and token counts (the calculate body, a confirm's usage). */
export const exampleCall = {
  modelId: ex.modelId,
  inputTokens: 9500,
  outputTokens: 3100,
  cachedTokens: 2000,
};

export const calculateBody = z
  .object({ modelId: idString.openapi({ example: ex.modelId }), ...tokenCountsShape })
  .refine(cachedWithinInput, CACHED_WITHIN_INPUT)
  .openapi("CalculateCostRequest", { example: exampleCall });

export const calculateResponse = z
  .object({
    success: z.literal(true),
    modelId: z.string(),
    modelName: z.string(),
    estimatedCostUsd: z.number(),
    estimatedCostCredits: z.number().nullable().openapi({
      description:
        "The cost in credits at the project's creditsPerUsd, rounded up to the micro-credit (what a confirm with this usage debits); null when the project has no credit price",
      example: 6.96,
    }),
    pricing: z.object({
      inputPerMillion: z.number(),
      outputPerMillion: z.number(),
      cachedInputPerMillion: z.number(),
    }),
  })
  .openapi({
    example: {
      success: true as const,
      modelId: ex.modelId,
      modelName: "Claude Sonnet 4.5",
      estimatedCostUsd: 0.0696,
      estimatedCostCredits: 6.96,
      pricing: { inputPerMillion: 3, outputPerMillion: 15, cachedInputPerMillion: 0.3 },
    },
  });
