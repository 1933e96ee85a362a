/** zod schemas of balance adjustments and transactions (spec §4.2, §4.5; contract §6). */
import { z } from "@hono/zod-openapi";
import {
  creditAmount,
  descriptionString,
  idString,
  isoDateOrDateTime,
  metadataSchema,
  pageQuery,
  paginationSchema,
} from "../http/schemas.ts";

export const addCreditsBody = z
  .object({
    accountId: idString.openapi({ description: "Internal id or externalId" }),
    amount: creditAmount(),
    description: descriptionString.optional(),
    paymentMethod: idString.optional().openapi({ description: "Free text, kept in metadata" }),
    metadata: metadataSchema.optional(),
  })
  .openapi("AddCreditsRequest");

export const addCreditsResponse = z.object({
  success: z.literal(true),
  accountId: z.string(),
  externalId: z.string(),
  balance: z.number(),
  added: z.number(),
  transactionId: z.string(),
});

export const deductCreditsBody = z
  .object({
    accountId: idString.openapi({ description: "Internal id or externalId" }),
    amount: creditAmount(),
    description: descriptionString.optional(),
    metadata: metadataSchema.optional(),
  })
  .openapi("DeductCreditsRequest");

export const deductCreditsResponse = z.object({
  success: z.literal(true),
  accountId: z.string(),
  externalId: z.string(),
  balance: z.number(),
  deducted: z.number(),
  transactionId: z.string(),
});

export const transactionSchema = z
  .object({
    id: z.string(),
    accountId: z.string(),
    type: z.enum(["credit", "debit"]),
    amount: z.number(),
    description: z.string(),
    balanceAfter: z.number(),
    metadata: z.record(z.string(), z.unknown()),
    createdAt: z.string(),
    reservation: z.unknown().optional().openapi({ description: "With include=reservation" }),
    usage: z.array(z.unknown()).optional().openapi({ description: "With include=usage" }),
  })
  .openapi("Transaction");

export const listTransactionsQuery = z.object({
  accountId: idString.optional().openapi({ description: "Internal id or externalId" }),
  externalId: idString.optional(),
  ...pageQuery(50, 500),
  startDate: isoDateOrDateTime.optional().openapi({ description: "Inclusive" }),
  endDate: isoDateOrDateTime
    .optional()
    .openapi({ description: "Inclusive; a date covers the whole UTC day" }),
  include: z
    .string()
    .max(100)
    .refine((s) => s.split(",").every((p) => ["reservation", "usage", ""].includes(p.trim())), {
      message: "comma list of reservation, usage",
    })
    .optional(),
});

export const listTransactionsResponse = z.object({
  items: z.array(transactionSchema),
  pagination: paginationSchema,
});

export const createTransactionBody = z
  .object({
    accountId: idString.openapi({ description: "Internal id or externalId" }),
    amount: creditAmount(),
    type: z.enum(["credit", "debit"]),
    description: descriptionString.optional(),
    metadata: metadataSchema.optional(),
  })
  .openapi("CreateTransactionRequest");

export const createTransactionResponse = z.object({
  success: z.literal(true),
  transaction: z.object({
    id: z.string(),
    accountId: z.string(),
    type: z.enum(["credit", "debit"]),
    amount: z.number(),
    balanceAfter: z.number(),
    createdAt: z.string(),
    description: z.string(),
    metadata: z.record(z.string(), z.unknown()),
  }),
});
