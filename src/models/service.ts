/**
 * The global model catalog (docs/api.md#endpoints, docs/api.md#usage-and-models): prices in micro-USD per million tokens,
 * loaded from `data/models.json` (the service's format) or LiteLLM's price map.
 */
import { readFile } from "node:fs/promises";
import type { Kysely, Transaction } from "kysely";
import { prepared } from "../db/prepared.ts";
import type { DB, ModelRow } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { type PriceMicros, validatedMicros } from "../money.ts";
import { type CatalogModel, catalogFileSchema } from "./catalog-format.ts";
import { convertLitellm, isLitellmMap } from "./litellm.ts";

/** The shipped catalog, relative to the repository root. */
export const DEFAULT_CATALOG_URL = new URL(
  import.meta.url.includes("/dist/") ? "../../../data/models.json" : "../../data/models.json",
  import.meta.url,
);

/** The columns of a model that price a call. */
export type ModelPriceRow = Pick<
  ModelRow,
  "model_id" | "input_micros_per_m" | "output_micros_per_m" | "cached_micros_per_m"
>;

/** A model's prices as integers. */
export function priceOf(row: ModelPriceRow): PriceMicros {
  return {
    inputMicrosPerM: row.input_micros_per_m,
    outputMicrosPerM: row.output_micros_per_m,
    cachedMicrosPerM: row.cached_micros_per_m,
  };
}

/**
 * Reads a pricing file: the service's own format (`{source, pricesAsOf, models: [...]}`) or
 * LiteLLM's `model_prices_and_context_window.json` (chat models only, converted exactly).
 * @param provider keep only this (normalised) provider
 * @throws Error when the file is neither format or fails validation
 */
export async function readPricingFile(path: string | URL, provider?: string) {
  const json: unknown = JSON.parse(await readFile(path, "utf8"));
  if (isLitellmMap(json)) {
    const { models, skipped } = convertLitellm(json as Record<string, unknown>, { provider });
    return { models, skipped: skipped.length, format: "litellm" as const };
  }
  const parsed = catalogFileSchema.safeParse(json);
  if (!parsed.success) {
    throw new Error(`Not a pricing file: ${parsed.error.issues[0]?.message ?? "invalid"}`);
  }
  const models = parsed.data.models.filter((m) => !provider || m.provider === provider);
  return { models, skipped: parsed.data.models.length - models.length, format: "catalog" as const };
}

/**
 * Inserts or updates catalog models (a price change affects only usage recorded afterwards:
 * every usage record keeps the prices it was costed at).
 * @returns how many models were written
 */
export async function upsertModels(trx: Transaction<DB>, models: CatalogModel[], nowMs: number) {
  for (const m of models) {
    const row = {
      model_id: m.modelId,
      provider: m.provider,
      display_name: m.displayName,
      model_type: m.modelType,
      tier: m.tier,
      input_micros_per_m: validatedMicros(m.pricing.text.inputPerMillion),
      output_micros_per_m: validatedMicros(m.pricing.text.outputPerMillion),
      cached_micros_per_m:
        m.pricing.text.cachedInputPerMillion === undefined
          ? null
          : validatedMicros(m.pricing.text.cachedInputPerMillion),
      context_window: m.pricing.contextWindow,
      source: m.source,
      prices_as_of: m.pricesAsOf,
      updated_at_ms: nowMs,
    };
    await trx
      .insertInto("models")
      .values(row)
      .onConflict((oc) => oc.column("model_id").doUpdateSet(row))
      .execute();
  }
  return models.length;
}

/** Number of models in the catalog. */
export async function countModels(db: Kysely<DB> | Transaction<DB>): Promise<number> {
  const { n } = await db
    .selectFrom("models")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .executeTakeFirstOrThrow();
  return Number(n);
}

/** Catalog models, by provider then id; optional provider and tier filters. */
export function listModels(db: Kysely<DB>, filter: { provider?: string; tier?: string }) {
  let query = db.selectFrom("models").selectAll();
  if (filter.provider) query = query.where("provider", "=", filter.provider);
  if (filter.tier) query = query.where("tier", "=", filter.tier);
  return query.orderBy("provider").orderBy("model_id").execute();
}

/** @throws ApiError MODEL_NOT_FOUND */
export async function findModel(db: Kysely<DB> | Transaction<DB>, modelId: string) {
  const row = (await db.executeQuery(modelById(db, { modelId }))).rows[0];
  if (!row) throw new ApiError("MODEL_NOT_FOUND", `Model ${modelId} not found`);
  return row;
}

const modelById = prepared<{ modelId: string }, ModelRow>((db, arg) =>
  db.selectFrom("models").selectAll().where("model_id", "=", arg("modelId")),
);
