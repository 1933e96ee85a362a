/** zod schemas of balance adjustments and transactions (docs/api.md#endpoints, docs/api.md#balance-adjustments-and-transactions). */
import { z } from "@hono/zod-openapi";
import { parseDateParam } from "../http/dates.ts";
import {
  ex,
  exampleAddTransaction,
  exampleConfirmTransaction,
  exampleManualTransaction,
  exampleReservation,
  exampleUsageRecord,
} from "../http/examples.ts";
import {
  creditAmount,
  dateRangeQuery,
  datesInOrder,
  datesInOrderError,
  descriptionString,
  idString,
  metadataSchema,
  pageQuery,
  paginationSchema,
} from "../http/schemas.ts";
import { reservationSchema } from "../reservations/schemas.ts";
import { usageRecordSchema } from "../usage/schemas.ts";

/** An example grant id. */
const exampleGrantId = "grt_01JD7Q2W8R5T3V9X1Z4B6C8E0G";

/**
 * A date-time `YYYY-MM-DDTHH:MM[:SS[.fff]]` with `Z`, `±HH:MM` or no offset (UTC), checked
 * against the calendar (src/http/dates.ts); a bare date is refused.
 */
const isoDateTime = z
  .string()
  .max(64)
  .refine((s) => parseDateParam(s)?.dateOnly === false, {
    message:
      "must be a date-time YYYY-MM-DDTHH:MM[:SS[.fff]] with Z, ±HH:MM or no offset, on the calendar",
  });

/**
 * `priority` and `expiresAt` of the grant a credit makes (docs/api.md#grants). That `expiresAt`
 * is in the future and at most 3,653 days ahead is checked against the clock of the write.
 */
const grantTermsFields = {
  priority: z.number().int().min(0).max(100).optional().openapi({
    description: "0-100, lower is spent first (default 50)",
    example: 50,
  }),
  expiresAt: isoDateTime.optional().openapi({
    description:
      "When what is left of these credits expires: a date-time in the future, at most 3,653 days ahead (default: never)",
    example: "2027-12-31T23:59:59Z",
  }),
};

const accountRef = idString.openapi({
  description: "Internal id or externalId",
  example: ex.externalId,
});

export const addCreditsBody = z
  .object({
    accountId: accountRef,
    amount: creditAmount().openapi({ example: 25.5 }),
    description: descriptionString.optional().openapi({ example: "Starter pack" }),
    paymentMethod: idString
      .optional()
      .openapi({ description: "Free text, kept in metadata", example: "card" }),
    metadata: metadataSchema.optional().openapi({ example: { invoiceId: "inv_2026_0042" } }),
    ...grantTermsFields,
  })
  .openapi("AddCreditsRequest", {
    example: {
      accountId: ex.externalId,
      amount: 25.5,
      description: "Starter pack",
      paymentMethod: "card",
    },
  });

export const addCreditsResponse = z
  .object({
    success: z.literal(true),
    accountId: z.string(),
    externalId: z.string(),
    balance: z.number(),
    added: z.number(),
    transactionId: z.string(),
    grantId: z.string().openapi({ description: "The grant these credits make" }),
  })
  .openapi({
    example: {
      success: true,
      accountId: ex.accountId,
      externalId: ex.externalId,
      balance: 25.5,
      added: 25.5,
      transactionId: ex.addTxnId,
      grantId: exampleGrantId,
    },
  });

export const deductCreditsBody = z
  .object({
    accountId: accountRef,
    amount: creditAmount().openapi({ example: 1.25 }),
    description: descriptionString.optional().openapi({ example: "Image upscale" }),
    metadata: metadataSchema.optional().openapi({ example: { feature: "upscale" } }),
  })
  .openapi("DeductCreditsRequest", {
    example: {
      accountId: ex.externalId,
      amount: 1.25,
      description: "Image upscale",
      metadata: { feature: "upscale" },
    },
  });

export const deductCreditsResponse = z
  .object({
    success: z.literal(true),
    accountId: z.string(),
    externalId: z.string(),
    balance: z.number(),
    deducted: z.number(),
    transactionId: z.string(),
  })
  .openapi({
    example: {
      success: true,
      accountId: ex.accountId,
      externalId: ex.externalId,
      balance: 17.29,
      deducted: 1.25,
      transactionId: ex.deductTxnId,
    },
  });

export const transactionSchema = z
  .object({
    id: z.string().openapi({ example: ex.confirmTxnId }),
    accountId: z.string().openapi({ example: ex.accountId }),
    type: z.enum(["credit", "debit"]),
    amount: z.number().openapi({ example: 6.96 }),
    description: z.string().openapi({ example: exampleConfirmTransaction.description }),
    balanceAfter: z.number().openapi({ example: 18.54 }),
    metadata: z
      .record(z.string(), z.unknown())
      .openapi({ additionalProperties: true, example: { ...exampleConfirmTransaction.metadata } }),
    createdAt: z.string().openapi({ example: ex.confirmedAt }),
    reservation: reservationSchema.nullable().optional().openapi({
      description: "With include=reservation: the reservation this entry settled, or null",
    }),
    usage: z
      .array(usageRecordSchema)
      .optional()
      .openapi({ description: "With include=usage: the usage records of this entry" }),
  })
  .openapi("Transaction", {
    example: {
      ...exampleConfirmTransaction,
      reservation: exampleReservation,
      usage: [exampleUsageRecord],
    },
  });

export const listTransactionsQuery = z
  .object({
    accountId: idString
      .optional()
      .openapi({ description: "Internal id or externalId", example: ex.externalId }),
    externalId: idString.optional().openapi({ example: ex.externalId }),
    ...pageQuery(50, 500),
    ...dateRangeQuery,
    include: z
      .string()
      .max(100)
      .refine((s) => s.split(",").every((p) => ["reservation", "usage", ""].includes(p.trim())), {
        message: "comma list of reservation, usage",
      })
      .optional()
      .openapi({
        description: "Comma list of `reservation`, `usage`: audit data on each entry",
        example: "reservation,usage",
      }),
  })
  .refine(datesInOrder, datesInOrderError);

export const listTransactionsResponse = z
  .object({
    items: z.array(transactionSchema),
    pagination: paginationSchema,
  })
  .openapi({
    example: {
      items: [
        { ...exampleManualTransaction, reservation: null, usage: [] },
        {
          id: ex.deductTxnId,
          accountId: ex.accountId,
          type: "debit",
          amount: 1.25,
          description: "Image upscale",
          balanceAfter: 17.29,
          metadata: { feature: "upscale" },
          createdAt: "2026-11-21T08:22:45.903Z",
          reservation: null,
          usage: [],
        },
        {
          ...exampleConfirmTransaction,
          reservation: exampleReservation,
          usage: [exampleUsageRecord],
        },
        { ...exampleAddTransaction, reservation: null, usage: [] },
      ],
      pagination: { limit: 50, offset: 0, totalCount: 4, hasMore: false },
    },
  });

export const createTransactionBody = z
  .object({
    accountId: accountRef,
    amount: creditAmount().openapi({ example: 5.5 }),
    type: z.enum(["credit", "debit"]),
    description: descriptionString
      .optional()
      .openapi({ example: "Refund for a failed generation" }),
    metadata: metadataSchema.optional().openapi({ example: { ticket: "SUP-1234" } }),
    ...grantTermsFields,
  })
  .refine((b) => b.type === "credit" || b.priority === undefined, {
    message: "only a credit takes a priority",
    path: ["priority"],
  })
  .refine((b) => b.type === "credit" || b.expiresAt === undefined, {
    message: "only a credit takes an expiresAt",
    path: ["expiresAt"],
  })
  .openapi("CreateTransactionRequest", {
    example: {
      accountId: ex.externalId,
      amount: 5.5,
      type: "credit",
      description: "Refund for a failed generation",
      metadata: { ticket: "SUP-1234" },
    },
  });

export const createTransactionResponse = z
  .object({
    success: z.literal(true),
    transaction: z.object({
      id: z.string(),
      accountId: z.string(),
      type: z.enum(["credit", "debit"]),
      amount: z.number(),
      balanceAfter: z.number(),
      createdAt: z.string(),
      description: z.string(),
      metadata: z.record(z.string(), z.unknown()).openapi({ additionalProperties: true }),
    }),
    grantId: z
      .string()
      .optional()
      .openapi({ description: "A credit: the grant it makes (docs/api.md#grants)" }),
  })
  .openapi({
    example: { success: true, transaction: exampleManualTransaction, grantId: exampleGrantId },
  });
