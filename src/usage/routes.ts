/** Routes of spec §4.6: record usage, list usage records, and the usage summary. */
import { createRoute, z } from "@hono/zod-openapi";
import { resolveAccount } from "../accounts/service.ts";
import type { App, AppDeps } from "../http/context.ts";
import { runWrite } from "../http/idempotency.ts";
import {
  errorResponses,
  idString,
  isoDateOrDateTime,
  jsonBody,
  metadataSchema,
  okJson,
  pageQuery,
  paginationSchema,
  queryBoolean,
} from "../http/schemas.ts";
import { dateRangeMs } from "../ledger/service.ts";
import { cachedWithinInput, tokenCountsShape } from "../models/routes.ts";
import { listUsage, recordUsage, summarizeUsage, usageRecordJson } from "./service.ts";

const tags = ["Usage"];
const context = z.enum(["customer", "system"]);

const usageRecordSchema = z
  .object({
    id: z.string(),
    context,
    accountId: z.string().nullable(),
    modelId: z.string(),
    usageType: z.string(),
    inputTokens: z.number(),
    outputTokens: z.number(),
    cachedTokens: z.number(),
    transactionId: z.string().nullable(),
    estimatedCostUsd: z.number(),
    createdAt: z.string(),
  })
  .openapi("UsageRecord");

const recordBody = z
  .object({
    accountId: idString.optional().openapi({ description: "Required for customer usage" }),
    context: context.optional().openapi({ description: "Default customer" }),
    transactionId: idString.optional(),
    modelId: idString.openapi({ example: "gpt-4o" }),
    usageType: z.enum(["text"]).optional().openapi({ description: "Default text" }),
    ...tokenCountsShape,
    metadata: metadataSchema.optional(),
  })
  .refine(cachedWithinInput, {
    message: "cachedTokens must not exceed inputTokens",
    path: ["cachedTokens"],
  })
  .openapi("RecordUsageRequest");

const recordResponse = z.object({ success: z.literal(true), usageRecord: usageRecordSchema });

const usageQuery = z.object({
  accountId: idString.optional().openapi({ description: "Internal id or externalId" }),
  modelId: idString.optional(),
  context: context.optional(),
  startDate: isoDateOrDateTime.optional(),
  endDate: isoDateOrDateTime.optional(),
  summary: queryBoolean.optional(),
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
  .openapi("UsageSummary");

const usageResponse = z.union([
  z.object({
    success: z.literal(true),
    usageRecords: z.array(usageRecordSchema),
    pagination: paginationSchema,
  }),
  z.object({ success: z.literal(true), summary: summarySchema }),
]);

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
      q.accountId === undefined
        ? undefined
        : await resolveAccount(deps.db.read, projectId, { accountId: q.accountId });
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
