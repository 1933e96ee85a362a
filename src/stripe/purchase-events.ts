/**
 * The events of purchases through Stripe (docs/api.md#event-types): `credits.purchased`,
 * `credits.clawed_back` and `purchase.clawback_incomplete`, each with the schema of its `data`.
 */
import { z } from "@hono/zod-openapi";
import { ex } from "../http/examples.ts";
import { defineEvent } from "../webhooks/outbox.ts";

const credit = (example: number) => z.number().openapi({ example });

/** The `data` of `credits.purchased` (docs/api.md#event-types). */
export const creditsPurchasedData = z
  .object({
    accountId: z.string().openapi({ example: ex.accountId }),
    externalId: z.string().openapi({ example: ex.externalId }),
    purchaseId: z.string().openapi({ example: "pur_01M7YKB3F8Q2W6E4R0T9Y1U3I5" }),
    transactionId: z.string().openapi({ example: ex.addTxnId }),
    credits: credit(1000),
    balance: credit(1250),
    restored: z.boolean().openapi({ description: "A restore after a refund or dispute fell" }),
  })
  .openapi("CreditsPurchasedData");

/** The `data` of `credits.clawed_back`. */
export const creditsClawedBackData = z
  .object({
    accountId: z.string().openapi({ example: ex.accountId }),
    externalId: z.string().openapi({ example: ex.externalId }),
    purchaseId: z.string().openapi({ example: "pur_01M7YKB3F8Q2W6E4R0T9Y1U3I5" }),
    transactionId: z.string().openapi({ description: "The reversal", example: ex.addTxnId }),
    credits: credit(300),
    creditsUncollected: credit(0),
    balance: credit(950),
  })
  .openapi("CreditsClawedBackData");

/** The `data` of `purchase.clawback_incomplete`. */
export const clawbackIncompleteData = z
  .object({
    accountId: z.string().openapi({ example: ex.accountId }),
    externalId: z.string().openapi({ example: ex.externalId }),
    purchaseId: z.string().openapi({ example: "pur_01M7YKB3F8Q2W6E4R0T9Y1U3I5" }),
    creditsUncollected: credit(200),
    creditsUncollectedTotal: credit(200),
  })
  .openapi("PurchaseClawbackIncompleteData");

export const creditsPurchased = defineEvent("credits.purchased", creditsPurchasedData);
export const creditsClawedBack = defineEvent("credits.clawed_back", creditsClawedBackData);
export const clawbackIncomplete = defineEvent(
  "purchase.clawback_incomplete",
  clawbackIncompleteData,
);
