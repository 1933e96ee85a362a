/** Routes of docs/api.md#endpoints: list or get models, and calculate a cost without recording it. */
import type { RouteHandler } from "@hono/zod-openapi";
import type { ModelRow } from "../db/schema.ts";
import type { App, AppDeps, AppEnv } from "../http/context.ts";
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

type Routes = typeof modelRoutes;

/** `GET /v1/models`: one model (`modelId`) or the catalogue's models. */
export function listModelsHandler(deps: AppDeps): RouteHandler<Routes["list"], AppEnv> {
  const route = modelRoutes.list;
  return async (c) => {
    const q = c.req.valid("query");
    if (q.modelId !== undefined) {
      const model = modelJson(await findModel(deps.db.read, q.modelId));
      return ok(c, route, { success: true, model });
    }
    const rows = await listModels(deps.db.read, q);
    return ok(c, route, { success: true, models: rows.map(modelJson) });
  };
}

/**
 * `POST /v1/models/calculate`: a cost and its credits, recorded nowhere; a pure read, unless the
 * caller asked for an idempotent replay (docs/api.md#idempotency).
 */
export function calculateCostHandler(deps: AppDeps): RouteHandler<Routes["calculate"], AppEnv> {
  const route = modelRoutes.calculate;
  return async (c) => {
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
    if (c.req.header("Idempotency-Key") === undefined) {
      return ok(c, route, await estimate(deps.db.read));
    }
    return runWrite(c, deps.queue, route, async (trx, _nowMs, reply) => reply(await estimate(trx)));
  };
}

/** Registers the model routes' handlers on `app`. */
export function registerModelRoutes(app: App, deps: AppDeps): void {
  app.openapi(modelRoutes.list, listModelsHandler(deps));
  app.openapi(modelRoutes.calculate, calculateCostHandler(deps));
}
