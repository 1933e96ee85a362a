/** Routes of spec §4.6: record usage, list usage records, and the usage summary. */
import { createRoute, z } from "@hono/zod-openapi";
import { resolveAccount } from "../accounts/service.ts";
import type { App, AppDeps } from "../http/context.ts";
import { ex, exampleUsageRecord } from "../http/examples.ts";
import { runWrite } from "../http/idempotency.ts";
import {
  accountRefFields,
  dateRangeQuery,
  errorResponses,
  idString,
  jsonBody,
  metadataSchema,
  okJson,
  pageQuery,
  paginationSchema,
  queryBoolean,
} from "../http/schemas.ts";
import { dateRangeMs } from "../ledger/service.ts";
import { cachedWithinInput, tokenCountsShape } from "../models/routes.ts";
import { usageContext as context, usageRecordSchema } from "./schemas.ts";
import { listUsage, recordUsage, summarizeUsage, usageRecordJson } from "./service.ts";

const tags = ["Usage"];
const recordBody = z
  .object({
    accountId: idString
      .optional()
      .openapi({ description: "Required for customer usage", example: ex.externalId }),
    context: context.optional().openapi({ description: "Default customer", example: "customer" }),
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
  })
  .refine(cachedWithinInput, {
    message: "cachedTokens must not exceed inputTokens",
    path: ["cachedTokens"],
  })
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

const recordResponse = z
  .object({ success: z.literal(true), usageRecord: usageRecordSchema })
  .openapi({ example: { success: true, usageRecord: exampleUsageRecord } });

const usageQuery = z.object({
  ...accountRefFields,
  modelId: idString.optional().openapi({ example: ex.modelId }),
  context: context.optional(),
  ...dateRangeQuery,
  summary: queryBoolean
    .optional()
    .openapi({ description: "Totals instead of records", example: "false" }),
  ...pageQuery(100, 1000),
});

const summarySchema = z
  .object({
    totalCostUsd: z.number(),
    totalInputTokens: z.number(),
    totalOutputTokens: z.number(),
    byContext: z.object({ customer: z.number(), system: z.number() }),
    byModel: z.record(z.string(), z.object({ costUsd: z.number(), count: z.number() })),
  })
  .openapi("UsageSummary", {
    example: {
      totalCostUsd: 0.0696,
      totalInputTokens: 9500,
      totalOutputTokens: 3100,
      byContext: { customer: 0.0696, system: 0 },
      byModel: { [ex.modelId]: { costUsd: 0.0696, count: 1 } },
    },
  });

const usageResponse = z
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
      success: true,
      usageRecords: [exampleUsageRecord],
      pagination: { limit: 100, offset: 0, totalCount: 1, hasMore: false },
    },
  });

const recordRoute = createRoute({
  method: "post",
  path: "/v1/usage/record",
  tags,
  summary: "Record LLM usage; the cost is computed from the model's current prices",
  request: { body: jsonBody(recordBody) },
  responses: {
    ...okJson(recordResponse, "The usage record"),
    ...errorResponses(
      "ACCOUNT_NOT_FOUND",
      "MODEL_NOT_FOUND",
      "TRANSACTION_NOT_FOUND",
      "IDEMPOTENCY_KEY_REUSED",
    ),
  },
});

const listRoute = createRoute({
  method: "get",
  path: "/v1/usage",
  tags,
  summary: "List usage records, newest first, or their summary with summary=true",
  request: { query: usageQuery },
  responses: {
    ...okJson(usageResponse, "Usage records or summary"),
    ...errorResponses("ACCOUNT_NOT_FOUND"),
  },
});

export function registerUsageRoutes(app: App, deps: AppDeps): void {
  app.openapi(recordRoute, async (c) => {
    const body = c.req.valid("json");
    const projectId = c.get("projectId");
    return runWrite(c, deps.queue, async (trx, nowMs) => {
      const row = await recordUsage(
        trx,
        projectId,
        {
          context: body.context ?? "customer",
          accountRef: body.accountId,
          modelId: body.modelId,
          usageType: body.usageType ?? "text",
          inputTokens: body.inputTokens,
          outputTokens: body.outputTokens,
          cachedTokens: body.cachedTokens ?? 0,
          transactionId: body.transactionId,
          metadata: body.metadata,
        },
        nowMs,
      );
      return { status: 200, body: { success: true, usageRecord: usageRecordJson(row) } };
    }) as never;
  });

  app.openapi(listRoute, async (c) => {
    const q = c.req.valid("query");
    const projectId = c.get("projectId");
    const { startMs, endMs } = dateRangeMs(q.startDate, q.endDate);
    const account =
      q.accountId === undefined && q.externalId === undefined
        ? undefined
        : await resolveAccount(deps.db.read, projectId, q);
    const filter = {
      accountId: account?.id,
      modelId: q.modelId,
      context: q.context,
      startMs,
      endMs,
    };
    if (q.summary) {
      const summary = await summarizeUsage(deps.db.read, projectId, filter);
      return c.json({ success: true as const, summary }, 200);
    }
    const limit = q.limit ?? 100;
    const offset = q.offset ?? 0;
    const { rows, totalCount } = await listUsage(deps.db.read, projectId, {
      ...filter,
      limit,
      offset,
    });
    const pagination = { limit, offset, totalCount, hasMore: offset + rows.length < totalCount };
    return c.json(
      { success: true as const, usageRecords: rows.map(usageRecordJson), pagination },
      200,
    );
  });
}
