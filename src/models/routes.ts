/** Routes of spec §4.7: list or get models, and calculate a cost without recording it. */
import { createRoute, z } from "@hono/zod-openapi";
import type { App, AppDeps } from "../http/context.ts";
import { ex, exampleHaikuModel, exampleModel } from "../http/examples.ts";
import { runWrite } from "../http/idempotency.ts";
import { errorResponses, idString, jsonBody, okJson, tokenCount } from "../http/schemas.ts";
import { costPicoUsd, fromMicros, picoUsdToDecimal } from "../money.ts";
import { findModel, listModels, modelJson, priceOf } from "./service.ts";

const tags = ["Models"];

const modelSchema = z
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

const modelsQuery = z.object({
  modelId: idString.optional().openapi({ description: "One model", example: ex.modelId }),
  provider: idString.optional().openapi({ example: "anthropic" }),
  tier: idString.optional().openapi({ example: "balanced" }),
});

const modelsResponse = z
  .union([
    z.object({ success: z.literal(true), models: z.array(modelSchema) }),
    z.object({ success: z.literal(true), model: modelSchema }),
  ])
  .openapi({ example: { success: true, models: [exampleHaikuModel, exampleModel] } });

/** Token counts of a call; `cachedTokens` (default 0) is part of `inputTokens` (contract §9). */
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

const calculateBody = z
  .object({ modelId: idString.openapi({ example: ex.modelId }), ...tokenCountsShape })
  .refine(cachedWithinInput, {
    message: "cachedTokens must not exceed inputTokens",
    path: ["cachedTokens"],
  })
  .openapi("CalculateCostRequest", {
    example: { modelId: ex.modelId, inputTokens: 9500, outputTokens: 3100, cachedTokens: 2000 },
  });

const calculateResponse = z
  .object({
    success: z.literal(true),
    modelId: z.string(),
    modelName: z.string(),
    estimatedCostUsd: z.number(),
    pricing: z.object({
      inputPerMillion: z.number(),
      outputPerMillion: z.number(),
      cachedInputPerMillion: z.number(),
    }),
  })
  .openapi({
    example: {
      success: true,
      modelId: ex.modelId,
      modelName: "Claude Sonnet 4.5",
      estimatedCostUsd: 0.0696,
      pricing: { inputPerMillion: 3, outputPerMillion: 15, cachedInputPerMillion: 0.3 },
    },
  });

const listRoute = createRoute({
  method: "get",
  path: "/v1/models",
  tags,
  summary: "List models with pricing, or get one with ?modelId=",
  request: { query: modelsQuery },
  responses: {
    ...okJson(modelsResponse, "Models (or one model)"),
    ...errorResponses("MODEL_NOT_FOUND"),
  },
});

const calculateRoute = createRoute({
  method: "post",
  path: "/v1/models/calculate",
  tags,
  summary: "Estimate a call's cost in USD without recording usage",
  request: { body: jsonBody(calculateBody) },
  responses: {
    ...okJson(calculateResponse, "The estimate"),
    ...errorResponses("MODEL_NOT_FOUND", "IDEMPOTENCY_KEY_REUSED"),
  },
});

export function registerModelRoutes(app: App, deps: AppDeps): void {
  app.openapi(listRoute, async (c) => {
    const q = c.req.valid("query");
    if (q.modelId !== undefined) {
      const model = modelJson(await findModel(deps.db.read, q.modelId));
      return c.json({ success: true as const, model }, 200);
    }
    const rows = await listModels(deps.db.read, q);
    return c.json({ success: true as const, models: rows.map(modelJson) }, 200);
  });

  app.openapi(calculateRoute, async (c) => {
    const body = c.req.valid("json");
    const estimate = async (db: Parameters<typeof findModel>[0]) => {
      const row = await findModel(db, body.modelId);
      const price = priceOf(row);
      const tokens = { ...body, cachedTokens: body.cachedTokens ?? 0 };
      return {
        success: true as const,
        modelId: row.model_id,
        modelName: row.display_name,
        estimatedCostUsd: picoUsdToDecimal(costPicoUsd(tokens, price)),
        pricing: {
          inputPerMillion: fromMicros(price.inputMicrosPerM),
          outputPerMillion: fromMicros(price.outputMicrosPerM),
          cachedInputPerMillion: fromMicros(price.cachedMicrosPerM ?? price.inputMicrosPerM),
        },
      };
    };
    // A pure read, unless the caller asked for an idempotent replay (contract §4).
    if (c.req.header("Idempotency-Key") === undefined) {
      return c.json(await estimate(deps.db.read), 200);
    }
    return runWrite(c, deps.queue, async (trx) => ({
      status: 200,
      body: await estimate(trx),
    })) as never;
  });
}
