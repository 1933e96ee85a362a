/** zod schemas of usage records (spec §4.6), shared by the usage routes and the ledger's audit data. */
import { z } from "@hono/zod-openapi";
import { ex, exampleUsageRecord } from "../http/examples.ts";

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
    createdAt: z.string().openapi({ example: ex.usageAt }),
  })
  .openapi("UsageRecord", { example: exampleUsageRecord });
