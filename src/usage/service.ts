/**
 * LLM usage records and their exact USD cost (docs/api.md#endpoints, docs/api.md#usage-and-models). Recording usage does not
 * move credits. A record keeps the prices it was costed at, so a later price change never
 * rewrites history. The summary and its groups are in src/usage/summary.ts.
 */
import type { Kysely, Transaction } from "kysely";
import { findAccount } from "../accounts/lookup.ts";
import { createdWithin, ofProjectOrAccount } from "../db/ledger-rows.ts";
import { newestFirstPage } from "../db/paging.ts";
import { projectRow } from "../db/project-row.ts";
import type { DB, UsageContext, UsageRecordRow } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { iso } from "../http/dates.ts";
import type { WireOf } from "../http/respond.ts";
import { newId } from "../ids.ts";
import { stringifyJson } from "../json.ts";
import { findModel, priceOf } from "../models/service.ts";
import { costPicoUsd, picoUsdToDecimal } from "../money.ts";
import type { usageRecordSchema } from "./schemas.ts";

const PICO_PER_MICRO = 1_000_000n;

/** A record's cost in pico-USD. */
function costOf(row: Pick<UsageRecordRow, "cost_micro_usd" | "cost_pico_rem">): bigint {
  return BigInt(row.cost_micro_usd) * PICO_PER_MICRO + BigInt(row.cost_pico_rem);
}

/** The API's Usage record object (docs/api.md#endpoints). */
export function usageRecordJson(row: UsageRecordRow): WireOf<typeof usageRecordSchema> {
  return {
    id: row.id,
    context: row.context,
    accountId: row.account_id,
    modelId: row.model_id,
    usageType: row.usage_type,
    inputTokens: row.input_tokens,
    outputTokens: row.output_tokens,
    cachedTokens: row.cached_tokens,
    transactionId: row.transaction_id,
    estimatedCostUsd: picoUsdToDecimal(costOf(row)),
    createdAt: iso(row.created_at_ms),
  };
}

export interface RecordUsageInput {
  context: UsageContext;
  accountRef?: string | undefined;
  modelId: string;
  usageType: string;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  transactionId?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
}

/**
 * Records one call's usage with its cost at the model's current prices.
 * @throws ApiError VALIDATION_ERROR (customer usage without accountId), ACCOUNT_NOT_FOUND,
 *   MODEL_NOT_FOUND, TRANSACTION_NOT_FOUND
 */
export async function recordUsage(
  trx: Transaction<DB>,
  projectId: string,
  input: RecordUsageInput,
  nowMs: number,
): Promise<UsageRecordRow> {
  if (input.context === "customer" && input.accountRef === undefined) {
    throw new ApiError("VALIDATION_ERROR", "accountId is required for customer usage", [
      { path: "body.accountId", message: "required when context is customer" },
    ]);
  }
  const account = input.accountRef ? await findAccount(trx, projectId, input.accountRef) : null;
  const model = await findModel(trx, input.modelId);
  if (input.transactionId !== undefined) {
    const tx = await projectRow(trx.selectFrom("transactions"), projectId, input.transactionId)
      .select("id")
      .executeTakeFirst();
    if (!tx) {
      throw new ApiError("TRANSACTION_NOT_FOUND", `Transaction ${input.transactionId} not found`);
    }
  }
  const price = priceOf(model);
  const pico = costPicoUsd(input, price);
  const row = {
    id: newId("use"),
    project_id: projectId,
    account_id: account?.id ?? null,
    context: input.context,
    model_id: model.model_id,
    usage_type: input.usageType,
    input_tokens: input.inputTokens,
    output_tokens: input.outputTokens,
    cached_tokens: input.cachedTokens,
    transaction_id: input.transactionId ?? null,
    input_micros_per_m: price.inputMicrosPerM,
    output_micros_per_m: price.outputMicrosPerM,
    cached_micros_per_m: price.cachedMicrosPerM,
    cost_micro_usd: Number(pico / PICO_PER_MICRO),
    cost_pico_rem: Number(pico % PICO_PER_MICRO),
    metadata: input.metadata === undefined ? null : stringifyJson(input.metadata),
    created_at_ms: nowMs,
  };
  const { seq } = await trx
    .insertInto("usage_records")
    .values(row)
    .returning("seq")
    .executeTakeFirstOrThrow();
  return { ...row, seq };
}

export interface UsageFilter {
  accountId?: string | undefined;
  modelId?: string | undefined;
  context?: UsageContext | undefined;
  startMs?: number | undefined;
  endMs?: number | undefined;
}

/** The project's usage records that `f` selects (the list's and the summary's filters). */
export function filteredUsage(db: Kysely<DB>, projectId: string, f: UsageFilter) {
  let q = ofProjectOrAccount(db.selectFrom("usage_records"), projectId, f.accountId);
  if (f.modelId !== undefined) q = q.where("model_id", "=", f.modelId);
  if (f.context !== undefined) q = q.where("context", "=", f.context);
  return createdWithin(q, f);
}

/** A page of usage records, newest first, with the total count. */
export async function listUsage(
  db: Kysely<DB>,
  projectId: string,
  f: UsageFilter & { limit: number; offset: number },
) {
  return newestFirstPage(filteredUsage(db, projectId, f), f);
}
