/**
 * The automatic top-up's events (docs/api.md#event-types): `auto_topup.succeeded` and
 * `auto_topup.failed`, each with the schema of its `data`.
 */
import { z } from "@hono/zod-openapi";
import { ex } from "../http/examples.ts";
import { defineEvent } from "../webhooks/outbox.ts";

/** The `data` of `auto_topup.failed`. */
export const autoTopupFailedData = z
  .object({
    accountId: z.string().openapi({ example: ex.accountId }),
    externalId: z.string().openapi({ example: ex.externalId }),
    attemptId: z.string().openapi({ example: "atu_01M7YKB3F8Q2W6E4R0T9Y1U3I5" }),
    reason: z.string().openapi({ example: "card_declined" }),
  })
  .openapi("AutoTopupFailedData");

/** The `data` of `auto_topup.succeeded`. */
export const autoTopupSucceededData = z
  .object({
    accountId: z.string().openapi({ example: ex.accountId }),
    externalId: z.string().openapi({ example: ex.externalId }),
    attemptId: z.string().openapi({ example: "atu_01M7YKB3F8Q2W6E4R0T9Y1U3I5" }),
    purchaseId: z.string().openapi({ example: "pur_01M7YKB3F8Q2W6E4R0T9Y1U3I5" }),
    credits: z.number().openapi({ example: 500 }),
    balance: z.number().openapi({ example: 590 }),
  })
  .openapi("AutoTopupSucceededData");

export const autoTopupFailed = defineEvent("auto_topup.failed", autoTopupFailedData);
export const autoTopupSucceeded = defineEvent("auto_topup.succeeded", autoTopupSucceededData);
