/**
 * The Purchase and Stripe event objects (docs/api.md#selling-credits-through-stripe) with their
 * list queries and answers, and the mappers of rows to them.
 */
import { z } from "@hono/zod-openapi";
import { iso } from "../dates.ts";
import type { PurchasesTable, StripeEventsTable } from "../db/schema.ts";
import { ex } from "../http/examples.ts";
import { accountRefFields, pageQuery, paginationSchema } from "../http/schemas.ts";
import { fromMicros } from "../money.ts";
import type { WireOf } from "../wire.ts";

const examplePurchase = {
  id: "pur_01M7YKB3F8Q2W6E4R0T9Y1U3I5",
  accountId: ex.accountId,
  externalId: ex.externalId,
  paymentIntentId: "pi_3Q0abc",
  credits: 1000,
  amountPaid: 1000,
  currency: "usd",
  amountRefunded: 300,
  creditsClawedBack: 300,
  creditsUncollected: 0,
  status: "partially_refunded" as const,
  transactionId: ex.addTxnId,
  createdAt: ex.accountCreatedAt,
};

export const purchaseSchema = z
  .object({
    id: z.string().openapi({ example: examplePurchase.id }),
    accountId: z.string().openapi({ example: ex.accountId }),
    externalId: z.string().openapi({ example: ex.externalId }),
    paymentIntentId: z.string().openapi({ example: examplePurchase.paymentIntentId }),
    credits: z.number().openapi({ description: "Credits granted", example: 1000 }),
    amountPaid: z.number().int().openapi({
      description: "In the currency's smallest unit (cents), as Stripe gives it",
      example: 1000,
    }),
    currency: z.string().openapi({ description: "Lower case, as Stripe sends it", example: "usd" }),
    amountRefunded: z.number().int().openapi({ description: "Smallest unit", example: 300 }),
    creditsClawedBack: z.number().openapi({
      description: "Credits taken back by refunds, disputes and reversals of its credits",
      example: 300,
    }),
    creditsUncollected: z.number().openapi({
      description: "Credits a refund or dispute asked for that were already spent or held",
      example: 0,
    }),
    status: z.enum(["paid", "partially_refunded", "refunded", "disputed"]),
    transactionId: z
      .string()
      .openapi({ description: "The purchase's credit", example: ex.addTxnId }),
    createdAt: z.string().openapi({ example: ex.accountCreatedAt }),
  })
  .openapi("Purchase", { example: examplePurchase });

/** The API's Purchase of a stored purchase, its account's externalId and its clawed-back credits. */
export function purchaseJson(
  row: PurchasesTable,
  externalId: string,
  clawedBackMicros: number,
): WireOf<typeof purchaseSchema> {
  return {
    id: row.id,
    accountId: row.account_id,
    externalId,
    paymentIntentId: row.payment_intent_id,
    credits: fromMicros(row.credits_micros),
    amountPaid: row.amount_paid,
    currency: row.currency,
    amountRefunded: row.amount_refunded,
    creditsClawedBack: fromMicros(clawedBackMicros),
    creditsUncollected: fromMicros(row.credits_uncollected_micros),
    status: row.status,
    transactionId: row.transaction_id,
    createdAt: iso(row.created_at_ms),
  };
}

export const listPurchasesQuery = z.object({ ...accountRefFields, ...pageQuery(50, 500) });

export const listPurchasesResponse = z
  .object({
    success: z.literal(true),
    purchases: z.array(purchaseSchema),
    pagination: paginationSchema,
  })
  .openapi("PurchaseList", {
    example: {
      success: true,
      purchases: [examplePurchase],
      pagination: { limit: 50, offset: 0, totalCount: 1, hasMore: false },
    },
  });

const exampleEvent = {
  id: "evt_1Q0abc",
  type: "checkout.session.completed",
  receivedAt: ex.accountCreatedAt,
  deliveries: 1,
  outcome: "applied" as const,
  reason: null,
  purchaseId: examplePurchase.id,
};

export const stripeEventSchema = z
  .object({
    id: z.string().openapi({ description: "Stripe's event id", example: exampleEvent.id }),
    type: z.string().openapi({ example: exampleEvent.type }),
    receivedAt: z.string().openapi({ description: "First delivery", example: ex.accountCreatedAt }),
    deliveries: z.number().int().openapi({ example: 1 }),
    outcome: z.enum(["applied", "duplicate", "pending", "ignored"]),
    reason: z.string().nullable().openapi({
      description: "Why it was ignored (null otherwise)",
      example: null,
    }),
    purchaseId: z.string().nullable().openapi({ example: examplePurchase.id }),
  })
  .openapi("StripeEvent", { example: exampleEvent });

/** The API's StripeEvent of a stored event. */
export function stripeEventJson(row: StripeEventsTable): WireOf<typeof stripeEventSchema> {
  return {
    id: row.id,
    type: row.type,
    receivedAt: iso(row.received_at_ms),
    deliveries: row.deliveries,
    outcome: row.outcome,
    reason: row.reason,
    purchaseId: row.purchase_id,
  };
}

export const listStripeEventsQuery = z.object({ ...pageQuery(50, 500) });

export const listStripeEventsResponse = z
  .object({
    success: z.literal(true),
    events: z.array(stripeEventSchema),
    pagination: paginationSchema,
  })
  .openapi("StripeEventList", {
    example: {
      success: true,
      events: [exampleEvent],
      pagination: { limit: 50, offset: 0, totalCount: 1, hasMore: false },
    },
  });
