/**
 * zod schemas of the ledger's transactions: the Transaction object with its audit data, the
 * transaction list and the manual transaction (docs/api.md#endpoints,
 * docs/api.md#balance-adjustments-and-transactions, docs/api.md#audit-data); and the mappers of
 * stored rows to those objects.
 */
import { z } from "@hono/zod-openapi";
import { iso } from "../dates.ts";
import type { ReservationRow, TransactionRow, UsageRecordRow } from "../db/schema.ts";
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
  exportFormat,
  idString,
  metadataSchema,
  pageQuery,
  paginationSchema,
} from "../http/schemas.ts";
import { parseJsonColumn } from "../json.ts";
import { accountRef, exampleGrantId, grantTermsFields } from "../ledger/schemas.ts";
import { fromMicros } from "../money.ts";
import { reservationJson, reservationSchema } from "../reservations/schemas.ts";
import { usageRecordJson, usageRecordSchema } from "../usage/schemas.ts";
import type { WireOf } from "../wire.ts";

/** The reversal fields of an example entry that neither is a reversal nor has been reversed. */
const notReversed = { reversalOf: null, amountReversed: 0, onBehalfOf: null, transferId: null };

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
    reversalOf: z.string().nullable().openapi({
      description: "A reversal: the transaction it reverses (docs/api.md#reversals); else null",
      example: null,
    }),
    amountReversed: z.number().openapi({
      description: "What this transaction's reversals add up to so far (0 when none)",
      example: 0,
    }),
    onBehalfOf: z
      .string()
      .nullable()
      .openapi({
        description:
          "A debit booked on a pool for a member below it (or its reversal): the member " +
          "(docs/api.md#pools-and-members); else null",
        example: null,
      }),
    transferId: z.string().nullable().openapi({
      description:
        "Either half of a transfer: the transfer's id (docs/api.md#transfers); else null",
      example: null,
    }),
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
      ...notReversed,
      reservation: exampleReservation,
      usage: [exampleUsageRecord],
    },
  });

/**
 * The filters of the transaction list, which its export takes too (docs/api.md#exports): one
 * account (`accountId` or `externalId`) or the whole project, credits or debits or both, a
 * period, and the reversals of one transaction (`reversalOf`).
 */
const transactionFilterShape = {
  accountId: idString
    .optional()
    .openapi({ description: "Internal id or externalId", example: ex.externalId }),
  externalId: idString.optional().openapi({ example: ex.externalId }),
  type: z
    .enum(["credit", "debit"])
    .optional()
    .openapi({ description: "Only credits or only debits (default: both)", example: "debit" }),
  ...dateRangeQuery,
  reversalOf: idString.optional().openapi({
    description: "Only the reversals of this transaction (its id; docs/api.md#reversals)",
    example: ex.deductTxnId,
  }),
  onBehalfOf: idString.optional().openapi({
    description:
      "Only the rows booked on behalf of this member (internal id or externalId; " +
      "docs/api.md#pools-and-members), not of the accounts below it",
    example: "team-research",
  }),
};

/** The query of `GET /v1/transactions/export`: the list's filters and `format`, no paging. */
export const exportTransactionsQuery = z
  .object({ ...transactionFilterShape, format: exportFormat })
  .refine(datesInOrder, datesInOrderError);

export const listTransactionsQuery = z
  .object({
    ...transactionFilterShape,
    ...pageQuery(50, 500),
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
        { ...exampleManualTransaction, ...notReversed, reservation: null, usage: [] },
        {
          id: ex.deductTxnId,
          accountId: ex.accountId,
          type: "debit",
          amount: 1.25,
          description: "Image upscale",
          balanceAfter: 17.29,
          metadata: { feature: "upscale" },
          createdAt: "2026-11-21T08:22:45.903Z",
          ...notReversed,
          reservation: null,
          usage: [],
        },
        {
          ...exampleConfirmTransaction,
          ...notReversed,
          reservation: exampleReservation,
          usage: [exampleUsageRecord],
        },
        { ...exampleAddTransaction, ...notReversed, reservation: null, usage: [] },
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

/**
 * The API's Transaction object (docs/api.md#endpoints), without audit data; `reversedMicros`:
 * what its reversals add up to (micro-credits).
 */
export function transactionJson(
  row: TransactionRow,
  reversedMicros = 0,
): WireOf<typeof transactionSchema> {
  return {
    id: row.id,
    accountId: row.account_id,
    type: row.type,
    amount: fromMicros(row.amount_micros),
    description: row.description,
    balanceAfter: fromMicros(row.balance_after_micros),
    metadata: parseJsonColumn(row.metadata) ?? {},
    createdAt: iso(row.created_at_ms),
    reversalOf: row.reversal_of,
    amountReversed: fromMicros(reversedMicros),
    onBehalfOf: row.on_behalf_of,
    transferId: row.transfer_id,
  };
}

/** What `include=reservation,usage` read for a page of entries (docs/api.md#audit-data). */
export interface AuditData {
  /** Which audit fields each item gains. */
  include: { reservation: boolean; usage: boolean };
  /** The reservations the entries settled, by id. */
  reservations: ReadonlyMap<string, ReservationRow>;
  /** The usage records naming each entry, oldest first, by transaction id. */
  usage: ReadonlyMap<string, readonly UsageRecordRow[]>;
  /** The time that decides each reservation's effective status, epoch ms. */
  nowMs: number;
}

/**
 * An item of the transaction list: the Transaction object (`reversedMicros`: what its reversals
 * add up to), plus `reservation` (the reservation it settled, or null) and/or `usage` (the usage
 * records naming it, each with `creditsReversed`) when asked for.
 */
export function transactionItemJson(
  row: TransactionRow,
  audit: AuditData,
  reversedMicros = 0,
): WireOf<typeof transactionSchema> {
  const item = transactionJson(row, reversedMicros);
  if (audit.include.reservation) {
    const hold =
      row.reservation_id === null ? undefined : audit.reservations.get(row.reservation_id);
    item.reservation = hold === undefined ? null : reservationJson(hold, audit.nowMs);
  }
  if (audit.include.usage) {
    // The records name this entry: what its reversals gave back is theirs.
    const records = audit.usage.get(row.id) ?? [];
    item.usage = records.map((u) => usageRecordJson({ ...u, reversed_micros: reversedMicros }));
  }
  return item;
}

export const reverseTransactionBody = z
  .strictObject({
    transactionId: idString.openapi({ example: ex.deductTxnId }),
    amount: creditAmount()
      .optional()
      .openapi({ description: "Default: all that is still reversible", example: 2.5 }),
    description: descriptionString.optional().openapi({ example: "Refund: generation failed" }),
    metadata: metadataSchema.optional().openapi({ example: { ticket: "SUP-1234" } }),
  })
  .openapi("ReverseTransactionRequest", {
    example: {
      transactionId: ex.deductTxnId,
      amount: 2.5,
      description: "Refund: generation failed",
      metadata: { ticket: "SUP-1234" },
    },
  });

export const reverseTransactionResponse = z
  .object({
    success: z.literal(true),
    transaction: transactionSchema.omit({ reservation: true, usage: true }),
    reversedTransactionId: z.string().openapi({ example: ex.deductTxnId }),
    amountReversed: z.number().openapi({
      description: "The original's reversals so far, this one included",
      example: 2.5,
    }),
    reversible: z.number().openapi({
      description: "What may still be reversed of the original after this one",
      example: 4.46,
    }),
    balance: z.number().openapi({ example: 21.04 }),
    available: z.number().openapi({ example: 21.04 }),
  })
  .openapi("ReverseTransactionResponse", {
    example: {
      success: true,
      transaction: {
        id: "txn_01M7YKA0R4V0S2E8A8Y3JZ7QKB",
        accountId: ex.accountId,
        type: "credit",
        amount: 2.5,
        description: "Refund: generation failed",
        balanceAfter: 21.04,
        metadata: { ticket: "SUP-1234" },
        createdAt: ex.confirmedAt,
        reversalOf: ex.deductTxnId,
        amountReversed: 0,
        onBehalfOf: null,
        transferId: null,
      },
      reversedTransactionId: ex.deductTxnId,
      amountReversed: 2.5,
      reversible: 4.46,
      balance: 21.04,
      available: 21.04,
    },
  });
