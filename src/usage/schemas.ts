/**
 * zod schemas of usage records (docs/api.md#endpoints), shared by the usage routes and the
 * transaction list's audit data, and the mapper of a stored record to the API's Usage record.
 */
import { z } from "@hono/zod-openapi";
import { iso } from "../dates.ts";
import type { UsageRecordRow } from "../db/schema.ts";
import { ex, exampleUsageRecord } from "../http/examples.ts";
import {
  accountRefFields,
  dateRangeQuery,
  datesInOrder,
  datesInOrderError,
  exportFormat,
  idString,
  metadataSchema,
  pageQuery,
  paginationSchema,
  queryBoolean,
} from "../http/schemas.ts";
import { CACHED_WITHIN_INPUT, cachedWithinInput, tokenCountsShape } from "../models/schemas.ts";
import { fromMicros, picoUsdToDecimal } from "../money.ts";
import type { WireOf } from "../wire.ts";

/** The Usage record of the examples, charged and not reversed. */
export const usageRecordExample = { ...exampleUsageRecord, creditsReversed: 0 };

export const usageContext = z.enum(["customer", "system"]).openapi({ example: "customer" });

export const usageRecordSchema = z
  .object({
    id: z.string().openapi({ example: ex.usageId }),
    context: usageContext,
    accountId: z.string().nullable().openapi({ example: ex.accountId }),
    modelId: z.string().openapi({ example: ex.modelId }),
    usageType: z.string().openapi({ example: "text" }),
    inputTokens: z.number().openapi({ example: 9500 }),
    outputTokens: z.number().openapi({ example: 3100 }),
    cachedTokens: z.number().openapi({ example: 2000 }),
    transactionId: z.string().nullable().openapi({ example: ex.confirmTxnId }),
    estimatedCostUsd: z.number().openapi({ example: 0.0696 }),
    creditsCharged: z.number().nullable().openapi({
      description:
        "Credits the record was charged (`deduct: true`, or a confirm with `usage`); 0 for a cost of 0, null when it was not charged",
      example: 6.96,
    }),
    creditsReversed: z.number().nullable().openapi({
      description:
        "What the reversals of the record's charge add up to (docs/api.md#reversals): 0 when none, null when the record was not charged",
      example: 0,
    }),
    createdAt: z.string().openapi({ example: ex.usageAt }),
  })
  .openapi("UsageRecord", { example: usageRecordExample });

export const recordBody = z
  .object({
    accountId: idString
      .optional()
      .openapi({ description: "Required for customer usage", example: ex.externalId }),
    context: usageContext
      .optional()
      .openapi({ description: "Default customer", example: "customer" }),
    transactionId: idString
      .optional()
      .openapi({ description: "The transaction that paid for it", example: ex.confirmTxnId }),
    modelId: idString.openapi({ example: ex.modelId }),
    usageType: z
      .enum(["text"])
      .optional()
      .openapi({ description: "Default text", example: "text" }),
    ...tokenCountsShape,
    metadata: metadataSchema.optional().openapi({ example: { conversationId: "conv_8812" } }),
    deduct: z.boolean().optional().openapi({
      description:
        "Default false. true: also debit the usage's credit cost (USD cost × the project's creditsPerUsd, rounded up to the micro-credit) in the same transaction, as a deduction; needs context customer, an accountId, no transactionId and a project credit price",
      example: true,
    }),
  })
  .refine(cachedWithinInput, CACHED_WITHIN_INPUT)
  .openapi("RecordUsageRequest", {
    example: {
      accountId: ex.externalId,
      transactionId: ex.confirmTxnId,
      modelId: ex.modelId,
      inputTokens: 9500,
      outputTokens: 3100,
      cachedTokens: 2000,
    },
  });

export const recordResponse = z
  .object({
    success: z.literal(true),
    usageRecord: usageRecordSchema,
    creditsCharged: z.number().optional().openapi({
      description: "With deduct: true: the credits debited (0 when the cost was 0)",
      example: 6.96,
    }),
    transactionId: z.string().nullable().optional().openapi({
      description: "With deduct: true: the debit's transaction (null when the cost was 0)",
      example: ex.confirmTxnId,
    }),
    balance: z.number().optional().openapi({
      description: "With deduct: true: the account's balance afterwards",
      example: 18.54,
    }),
  })
  .openapi({ example: { success: true as const, usageRecord: usageRecordExample } });

/** `groupBy` of the usage summary (docs/api.md#usage-over-time). */
export const usageGroupBy = z.enum(["day", "model", "account", "context"]).openapi({
  description:
    "With summary=true: also sum the records per UTC day, model, account or context, in `summary.groups` (at most 1,000 groups)",
  example: "day",
});

/** One group of `summary.groups`. */
export const usageGroupSchema = z
  .object({
    key: z.string().nullable().openapi({
      description:
        "The UTC day (YYYY-MM-DD), the modelId, the accountId (null for system usage without an account) or the context",
      example: "2026-11-21",
    }),
    externalId: z.string().nullable().optional().openapi({
      description: "groupBy=account only: the account's externalId",
      example: ex.externalId,
    }),
    requestCount: z.number().openapi({ description: "Usage records in the group", example: 12 }),
    inputTokens: z.number().openapi({ example: 114000 }),
    cachedTokens: z.number().openapi({ example: 24000 }),
    outputTokens: z.number().openapi({ example: 37200 }),
    costUsd: z
      .number()
      .openapi({ description: "Exact sum of the records' costs", example: 0.8352 }),
    creditsCharged: z.number().openapi({
      description:
        "Exact sum of the credits the records were charged (a record without a charge counts 0)",
      example: 83.52,
    }),
    creditsReversed: z.number().openapi({
      description:
        "Exact sum of the reversals of the records' charges (docs/api.md#reversals; 0 when none)",
      example: 6.96,
    }),
  })
  .openapi("UsageGroup");

/**
 * The filters of the usage list and summary, which the usage export takes too
 * (docs/api.md#exports): one account or all, a model, a context, and a period.
 */
const usageFilterShape = {
  ...accountRefFields,
  modelId: idString.optional().openapi({ example: ex.modelId }),
  context: usageContext.optional(),
  ...dateRangeQuery,
};

/** The query of `GET /v1/usage/export`: the list's filters and `format`, no paging. */
export const exportUsageQuery = z
  .object({ ...usageFilterShape, format: exportFormat })
  .refine(datesInOrder, datesInOrderError);

export const usageQuery = z
  .object({
    ...usageFilterShape,
    summary: queryBoolean
      .optional()
      .openapi({ description: "Totals instead of records", example: "false" }),
    groupBy: usageGroupBy.optional(),
    ...pageQuery(100, 1000),
  })
  .refine(datesInOrder, datesInOrderError)
  .refine((q) => q.groupBy === undefined || q.summary === true, {
    message: "groupBy needs summary=true",
    path: ["groupBy"],
  });

export const summarySchema = z
  .object({
    totalCostUsd: z.number(),
    totalInputTokens: z.number(),
    totalOutputTokens: z.number(),
    creditsCharged: z.number().openapi({
      description:
        "Exact sum of the credits the records were charged (a record without a charge counts 0)",
      example: 6.96,
    }),
    creditsReversed: z.number().openapi({
      description:
        "Exact sum of the reversals of the records' charges (docs/api.md#reversals; 0 when none)",
      example: 0,
    }),
    byContext: z.object({ customer: z.number(), system: z.number() }),
    byModel: z.record(z.string(), z.object({ costUsd: z.number(), count: z.number() })),
    groups: z.array(usageGroupSchema).optional().openapi({
      description:
        "With groupBy: days ascending; models, accounts or contexts by costUsd descending, then key",
    }),
  })
  .openapi("UsageSummary", {
    example: {
      totalCostUsd: 0.0696,
      totalInputTokens: 9500,
      totalOutputTokens: 3100,
      creditsCharged: 6.96,
      creditsReversed: 0,
      byContext: { customer: 0.0696, system: 0 },
      byModel: { [ex.modelId]: { costUsd: 0.0696, count: 1 } },
    },
  });

export const usageResponse = z
  .union([
    z.object({
      success: z.literal(true),
      usageRecords: z.array(usageRecordSchema),
      pagination: paginationSchema,
    }),
    z.object({ success: z.literal(true), summary: summarySchema }),
  ])
  .openapi({
    example: {
      success: true as const,
      usageRecords: [usageRecordExample],
      pagination: { limit: 100, offset: 0, totalCount: 1, hasMore: false },
    },
  });

/** Pico-USD in a micro-USD. */
export const PICO_PER_MICRO = 1_000_000n;

/** A record's cost in pico-USD (stored as micro-USD and a pico-USD remainder). */
export function costOf(row: Pick<UsageRecordRow, "cost_micro_usd" | "cost_pico_rem">): bigint {
  return BigInt(row.cost_micro_usd) * PICO_PER_MICRO + BigInt(row.cost_pico_rem);
}

/**
 * A usage record as the API shows it: its row, with what the reversals of its charge's debit
 * add up to (`reversed_micros`, micro-credits) when they were read; absent, none (a record just
 * written). The sum rides on the row rather than in a second argument, so that
 * `rows.map(usageRecordJson)` cannot pass an array index for it.
 */
export type UsageRecordView = Omit<UsageRecordRow, "seq"> & {
  reversed_micros?: number | undefined;
};

/**
 * The API's Usage record object (docs/api.md#endpoints). `creditsReversed` is null for a record
 * without a charge, else `row.reversed_micros` (0 when absent).
 */
export function usageRecordJson(row: UsageRecordView): WireOf<typeof usageRecordSchema> {
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
    creditsCharged:
      row.credits_charged_micros === null ? null : fromMicros(row.credits_charged_micros),
    creditsReversed:
      row.credits_charged_micros === null ? null : fromMicros(row.reversed_micros ?? 0),
    createdAt: iso(row.created_at_ms),
  };
}
