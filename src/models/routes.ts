/** Routes of docs/api.md#endpoints: list or get models, and calculate a cost without recording it. */
import type { ModelRow } from "../db/schema.ts";
import type { App, AppDeps } from "../http/context.ts";
import { runWrite } from "../http/idempotency.ts";
import { ok, type RouteBody } from "../http/respond.ts";
import { resourceRoutes } from "../http/routes.ts";
import { costPicoUsd, fromMicros, picoUsdToDecimal, type TokenCounts } from "../money.ts";
import {
  calculateBody,
  calculateResponse,
  modelJson,
  modelsQuery,
  modelsResponse,
} from "./schemas.ts";
import { findModel, listModels, priceOf } from "./service.ts";

/** The model routes. */
export const modelRoutes = resourceRoutes("Models", (route) => ({
  list: route.get("/v1/models", "List models with pricing, or get one with ?modelId=", {
    query: modelsQuery,
    ok: modelsResponse,
    errors: ["MODEL_NOT_FOUND"],
  }),
  calculate: route.post(
    "/v1/models/calculate",
    "Estimate a call's cost in USD without recording usage",
    { body: calculateBody, ok: calculateResponse, errors: ["MODEL_NOT_FOUND"] },
  ),
}));

/** The body of a cost estimate for `tokens` at the model's current prices. */
function estimateBody(row: ModelRow, tokens: TokenCounts): RouteBody<typeof modelRoutes.calculate> {
  const price = priceOf(row);
  return {
    success: true,
    modelId: row.model_id,
    modelName: row.display_name,
    estimatedCostUsd: picoUsdToDecimal(costPicoUsd(tokens, price)),
    pricing: {
      inputPerMillion: fromMicros(price.inputMicrosPerM),
      outputPerMillion: fromMicros(price.outputMicrosPerM),
      cachedInputPerMillion: fromMicros(price.cachedMicrosPerM ?? price.inputMicrosPerM),
    },
  };
}

export function registerModelRoutes(app: App, deps: AppDeps): void {
  const r = modelRoutes;
  app.openapi(r.list, async (c) => {
    const q = c.req.valid("query");
    if (q.modelId !== undefined) {
      const model = modelJson(await findModel(deps.db.read, q.modelId));
      return ok(c, r.list, { success: true, model });
    }
    const rows = await listModels(deps.db.read, q);
    return ok(c, r.list, { success: true, models: rows.map(modelJson) });
  });

  app.openapi(r.calculate, async (c) => {
    const body = c.req.valid("json");
    const tokens = { ...body, cachedTokens: body.cachedTokens ?? 0 };
    const estimate = async (db: Parameters<typeof findModel>[0]) =>
      estimateBody(await findModel(db, body.modelId), tokens);
    // A pure read, unless the caller asked for an idempotent replay (docs/api.md#idempotency).
    if (c.req.header("Idempotency-Key") === undefined) {
      return ok(c, r.calculate, await estimate(deps.db.read));
    }
    return runWrite(c, deps.queue, r.calculate, async (trx, _nowMs, reply) =>
      reply(await estimate(trx)),
    );
  });
}
