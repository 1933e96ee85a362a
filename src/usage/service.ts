/**
 * LLM usage records and their exact USD cost (docs/api.md#endpoints, docs/api.md#usage-and-models). Recording usage does not
 * move credits. A record keeps the prices it was costed at, so a later price change never
 * rewrites history. The summary and its groups are in src/usage/summary.ts.
 */
import { type Kysely, sql, type Transaction } from "kysely";
import { findAccount } from "../accounts/lookup.ts";
import { resolveAccount } from "../accounts/service.ts";
import { dateRangeMs } from "../dates.ts";
import { unindexedOnSqlite } from "../db/index-hints.ts";
import { createdWithin } from "../db/ledger-rows.ts";
import { newestFirstPage } from "../db/paging.ts";
import { argValues, prepared } from "../db/prepared.ts";
import { projectRow } from "../db/project-row.ts";
import type { DB, UsageContext, UsageRecordRow } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { newId } from "../ids.ts";
import { stringifyJson } from "../json.ts";
import { reversedSums } from "../ledger/reversal.ts";
import { findModel, type ModelPriceRow, priceOf } from "../models/service.ts";
import { costPicoUsd } from "../money.ts";
import { PICO_PER_MICRO, type UsageRecordView } from "./schemas.ts";

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
): Promise<NewUsageRecord> {
  if (input.context === "customer" && input.accountRef === undefined) {
    throw new ApiError("VALIDATION_ERROR", "accountId is required for customer usage", [
      { path: "body.accountId", message: "required when context is customer" },
    ]);
  }
  // Both read at once (on PostgreSQL, sent together); the account's error comes first. Usage
  // moves no credits, so the account is named, not locked.
  const [named, priced] = await Promise.allSettled([
    input.accountRef ? findAccount(trx, projectId, input.accountRef, { lock: false }) : null,
    findModel(trx, input.modelId),
  ]);
  if (named.status === "rejected") throw named.reason;
  if (priced.status === "rejected") throw priced.reason;
  const account = named.value;
  const model = priced.value;
  if (input.transactionId !== undefined) {
    const tx = await projectRow(trx.selectFrom("transactions"), projectId, input.transactionId)
      .select("id")
      .executeTakeFirst();
    if (!tx) {
      throw new ApiError("TRANSACTION_NOT_FOUND", `Transaction ${input.transactionId} not found`);
    }
  }
  return insertUsage(trx, usageRow(projectId, input, model, account?.id ?? null, nowMs));
}

/** What a usage record is charged: its debit (null for a cost of 0) and the micro-credits. */
export interface UsageCharge {
  transactionId: string | null;
  creditsChargedMicros: number;
}

/**
 * The usage record of `input` costed at `model`'s current prices (docs/api.md#usage-and-models),
 * before its insert: `charge` says what it was charged in credits, if it was.
 */
export function usageRow(
  projectId: string,
  input: Omit<RecordUsageInput, "accountRef">,
  model: ModelPriceRow,
  accountId: string | null,
  nowMs: number,
  charge?: UsageCharge & { id: string },
): NewUsageRecord {
  const price = priceOf(model);
  const pico = costPicoUsd(input, price);
  return {
    id: charge?.id ?? newId("use"),
    project_id: projectId,
    account_id: accountId,
    context: input.context,
    model_id: model.model_id,
    usage_type: input.usageType,
    input_tokens: input.inputTokens,
    output_tokens: input.outputTokens,
    cached_tokens: input.cachedTokens,
    transaction_id: charge ? charge.transactionId : (input.transactionId ?? null),
    input_micros_per_m: price.inputMicrosPerM,
    output_micros_per_m: price.outputMicrosPerM,
    cached_micros_per_m: price.cachedMicrosPerM,
    cost_micro_usd: Number(pico / PICO_PER_MICRO),
    cost_pico_rem: Number(pico % PICO_PER_MICRO),
    metadata: input.metadata === undefined ? null : stringifyJson(input.metadata),
    created_at_ms: nowMs,
    credits_charged_micros: charge?.creditsChargedMicros ?? null,
  };
}

/** A usage record as inserted: every column but `seq`, which nothing above the table reads. */
export type NewUsageRecord = Omit<UsageRecordRow, "seq">;

/**
 * Inserts a usage record built by `usageRow`. The insert returns nothing: a statement without
 * rows to read is the cheaper call on the synchronous SQLite driver, and it is on the hot path
 * of every charge.
 */
export async function insertUsage(
  trx: Transaction<DB>,
  row: NewUsageRecord,
): Promise<NewUsageRecord> {
  await trx.executeQuery(insertUsageQuery(trx, row));
  return row;
}

/** Every column of a usage record but `seq`, in the order the insert lists them. */
const USAGE_COLUMNS = [
  "id",
  "project_id",
  "account_id",
  "context",
  "model_id",
  "usage_type",
  "input_tokens",
  "output_tokens",
  "cached_tokens",
  "transaction_id",
  "input_micros_per_m",
  "output_micros_per_m",
  "cached_micros_per_m",
  "cost_micro_usd",
  "cost_pico_rem",
  "metadata",
  "created_at_ms",
  "credits_charged_micros",
] as const satisfies readonly (keyof UsageRecordRow)[];

const insertUsageQuery = prepared<NewUsageRecord, unknown>((db, arg) =>
  db.insertInto("usage_records").values(argValues(arg, USAGE_COLUMNS)),
);

/** Which of the project's usage records a list, a summary or an export selects. */
export interface UsageFilter {
  /** One account's (its internal id), or every record's when undefined. */
  accountId?: string | undefined;
  modelId?: string | undefined;
  context?: UsageContext | undefined;
  /** Created at or after, epoch ms. */
  startMs?: number | undefined;
  /** Created at or before, epoch ms. */
  endMs?: number | undefined;
}

/** The filter parameters of the usage list, summary and export, as validated. */
export interface UsageQuery {
  accountId?: string | undefined;
  externalId?: string | undefined;
  modelId?: string | undefined;
  context?: UsageContext | undefined;
  startDate?: string | undefined;
  endDate?: string | undefined;
}

/**
 * The filter a validated usage query selects by: its account resolved within the project, its
 * dates as inclusive epoch-ms bounds.
 * @throws ApiError as `resolveAccount` (ACCOUNT_NOT_FOUND, VALIDATION_ERROR)
 */
export async function usageFilterOf(
  db: Kysely<DB>,
  projectId: string,
  q: UsageQuery,
): Promise<UsageFilter> {
  const { startMs, endMs } = dateRangeMs(q.startDate, q.endDate);
  const named = q.accountId !== undefined || q.externalId !== undefined;
  const account = named ? await resolveAccount(db, projectId, q) : undefined;
  return { accountId: account?.id, modelId: q.modelId, context: q.context, startMs, endMs };
}

/**
 * The project's usage records that `f` selects (the list's, the summary's and the export's
 * filters). One account's are named by project and account, the leading columns of the index
 * `usage_project_account` (sql/0012_usage_charge_indexes.sql).
 * @param options.byTransaction the records are looked up by `transaction_id` (the summary's
 *   reversal parts, src/usage/summary.ts): on SQLite the project and account are written
 *   `+project_id`, `+account_id`, which no index serves, so that its planner finds each record
 *   by `usage_transaction` instead of walking the project's or the account's records for each
 */
export function filteredUsage(
  db: Kysely<DB>,
  projectId: string,
  f: UsageFilter,
  options: { byTransaction?: boolean } = {},
) {
  const column = (name: "project_id" | "account_id") =>
    options.byTransaction === true ? unindexedOnSqlite(db, name) : sql.ref(name);
  let q = db.selectFrom("usage_records").where(column("project_id"), "=", projectId);
  if (f.accountId !== undefined) q = q.where(column("account_id"), "=", f.accountId);
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

/**
 * `rows` with what the reversals of each charged record's debit add up to (`reversed_micros`,
 * docs/api.md#reversals), read for the whole page in one grouped query on the partial index
 * `transactions_reversal_of`. A record without a charge, or charged 0 (no debit), asks nothing.
 * @param maxTransactionSeq only reversals with `seq` at most this (an export's bound: none
 *   committed after it began); undefined: every reversal committed
 */
export async function withReversals<R extends UsageRecordView>(
  db: Kysely<DB>,
  rows: readonly R[],
  maxTransactionSeq?: number | undefined,
): Promise<R[]> {
  const ids = [
    ...new Set(
      rows.flatMap((r) =>
        r.credits_charged_micros !== null && r.transaction_id !== null ? [r.transaction_id] : [],
      ),
    ),
  ];
  if (ids.length === 0) return [...rows];
  const of = await reversedSums(db, ids, maxTransactionSeq);
  return rows.map((r) =>
    r.credits_charged_micros === null || r.transaction_id === null
      ? r
      : { ...r, reversed_micros: of.get(r.transaction_id) ?? 0 },
  );
}
