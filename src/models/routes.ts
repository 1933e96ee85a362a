/** Routes of docs/api.md#endpoints: list or get models, and calculate a cost without recording it. */
import type { ModelRow } from "../db/schema.ts";
import type { App, AppDeps } from "../http/context.ts";
import { runWrite } from "../http/idempotency.ts";
import { ok, type RouteBody } from "../http/respond.ts";
import { resourceRoutes } from "../http/routes.ts";
import {
  bigMicrosToDecimal,
  costPicoUsd,
  creditCostMicros,
  fromMicros,
  picoUsdToDecimal,
  type TokenCounts,
} from "../money.ts";
import { readProject } from "../projects/service.ts";
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
    operationId: "listModels",
    description:
      "Lists the global model catalog with prices in USD per million tokens, filtered by " +
      "`provider` and `tier`; with `modelId` it answers that one model (404 when unknown).",
    query: modelsQuery,
    ok: modelsResponse,
    errors: ["MODEL_NOT_FOUND"],
  }),
  calculate: route.post(
    "/v1/models/calculate",
    "Estimate a call's cost in USD and in credits without recording usage",
    {
      operationId: "calculateCost",
      description:
        "Answers what a call with these token counts would cost at the model's current " +
        "prices, exactly, and records nothing; `estimatedCostCredits` is that cost in credits " +
        "at the project's `creditsPerUsd` (rounded up to the micro-credit, null without a " +
        "credit price): reserve it, then confirm with the call's `usage`.",
      body: calculateBody,
      ok: calculateResponse,
      errors: ["MODEL_NOT_FOUND"],
    },
  ),
}));

/**
 * The body of a cost estimate for `tokens` at the model's current prices, and in credits at the
 * project's credit price (`creditsPerUsdMicros`; null: none, docs/api.md#charging-usage-in-credits).
 */
function estimateBody(
  row: ModelRow,
  tokens: TokenCounts,
  creditsPerUsdMicros: number | null,
): RouteBody<typeof modelRoutes.calculate> {
  const price = priceOf(row);
  const pico = costPicoUsd(tokens, price);
  return {
    success: true,
    modelId: row.model_id,
    modelName: row.display_name,
    estimatedCostUsd: picoUsdToDecimal(pico),
    estimatedCostCredits:
      creditsPerUsdMicros === null
        ? null
        : bigMicrosToDecimal(creditCostMicros(pico, creditsPerUsdMicros)),
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
    const projectId = c.get("projectId");
    const estimate = async (db: Parameters<typeof findModel>[0]) => {
      const [model, project] = await Promise.all([
        findModel(db, body.modelId),
        readProject(db, projectId),
      ]);
      return estimateBody(model, tokens, project.credits_per_usd_micros);
    };
    // A pure read, unless the caller asked for an idempotent replay (docs/api.md#idempotency).
    if (c.req.header("Idempotency-Key") === undefined) {
      return ok(c, r.calculate, await estimate(deps.db.read));
    }
    return runWrite(c, deps.queue, r.calculate, async (trx, _nowMs, reply) =>
      reply(await estimate(trx)),
    );
  });
}
