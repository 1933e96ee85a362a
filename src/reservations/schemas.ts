/**
 * zod schemas of reservations (docs/api.md#endpoints, docs/api.md#reservations), also the `data`
 * of a `reservation.expired` event, and the mapper of a stored hold to the API's Reservation.
 */
import { z } from "@hono/zod-openapi";
import { iso } from "../dates.ts";
import type { ReservationRow, ReservationStatus } from "../db/schema.ts";
import {
  ex,
  examplePendingReservation,
  exampleReservation,
  exampleUsageRecord,
} from "../http/examples.ts";
import {
  creditAmount,
  idString,
  metadataSchema,
  pageQuery,
  paginationSchema,
  queryBoolean,
  requiringAccount,
} from "../http/schemas.ts";
import { parseJsonColumn } from "../json.ts";
import {
  CACHED_WITHIN_INPUT,
  cachedWithinInput,
  exampleCall,
  tokenCountsShape,
} from "../models/schemas.ts";
import { fromMicros } from "../money.ts";
import { usageRecordSchema } from "../usage/schemas.ts";
import type { WireOf } from "../wire.ts";

export const reservationSchema = z
  .object({
    id: z.string().openapi({ example: ex.reservationId }),
    accountId: z.string().openapi({ example: ex.accountId }),
    amount: z.number().openapi({ example: 9.6 }),
    status: z
      .enum(["pending", "confirmed", "cancelled", "expired"])
      .openapi({ description: "`expired` as soon as expiresAt passes", example: "pending" }),
    createdAt: z.string().openapi({ example: ex.reservationCreatedAt }),
    expiresAt: z.string().openapi({ example: ex.reservationExpiresAt }),
    metadata: z
      .record(z.string(), z.unknown())
      .openapi({ additionalProperties: true, example: { ...ex.reservationMetadata } }),
  })
  .openapi("Reservation", { example: { ...exampleReservation, status: "pending" } });

/** The status a reader sees: a pending hold past its expiresAt is `expired`. */
export function effectiveStatus(row: ReservationRow, nowMs: number): ReservationStatus {
  return row.status === "pending" && row.expires_at_ms <= nowMs ? "expired" : row.status;
}

/** The API's Reservation object; `nowMs` decides the effective status (expired or not). */
export function reservationJson(
  row: ReservationRow,
  nowMs: number,
): WireOf<typeof reservationSchema> {
  return {
    id: row.id,
    accountId: row.account_id,
    amount: fromMicros(row.amount_micros),
    status: effectiveStatus(row, nowMs),
    createdAt: iso(row.created_at_ms),
    expiresAt: iso(row.expires_at_ms),
    metadata: parseJsonColumn(row.metadata) ?? {},
  };
}

export const createReservationBody = z
  .object({
    accountId: idString.openapi({
      description: "Internal id or externalId",
      example: ex.externalId,
    }),
    amount: creditAmount().openapi({ example: 9.6 }),
    operation: idString.optional().openapi({ example: "chat.completion" }),
    model: idString.optional().openapi({ example: ex.modelId }),
    ttlSeconds: z
      .number()
      .int()
      .min(1)
      .max(86400)
      .optional()
      .openapi({ description: "Lifetime in seconds, default 900", example: 900 }),
    metadata: metadataSchema.optional().openapi({ example: { conversationId: "conv_8812" } }),
  })
  .openapi("CreateReservationRequest", {
    example: {
      accountId: ex.externalId,
      amount: 9.6,
      operation: "chat.completion",
      model: ex.modelId,
      ttlSeconds: 900,
    },
  });

export const createReservationResponse = z
  .object({
    success: z.literal(true),
    reservation: reservationSchema,
  })
  .openapi({
    example: { success: true, reservation: { ...exampleReservation, status: "pending" } },
  });

export const listReservationsQuery = requiringAccount({
  activeOnly: queryBoolean
    .optional()
    .openapi({ description: "Only pending, unexpired holds", example: "false" }),
  ...pageQuery(100, 1000),
});

export const listReservationsResponse = z
  .object({
    success: z.literal(true),
    reservations: z.array(reservationSchema),
    pagination: paginationSchema,
  })
  .openapi({
    example: {
      success: true,
      reservations: [examplePendingReservation, exampleReservation],
      pagination: { limit: 100, offset: 0, totalCount: 2, hasMore: false },
    },
  });

/** A confirm's usage: the call whose credit cost is the confirm's amount. */
export const confirmUsageSchema = z
  .object({
    modelId: idString.openapi({ example: ex.modelId }),
    ...tokenCountsShape,
    usageType: z
      .enum(["text"])
      .optional()
      .openapi({ description: "Default text", example: "text" }),
  })
  .refine(cachedWithinInput, CACHED_WITHIN_INPUT)
  .openapi("ConfirmUsage", { example: exampleCall });

export const confirmReservationBody = z
  .object({
    reservationId: idString.openapi({ example: ex.reservationId }),
    actualAmount: creditAmount({ allowZero: true }).optional().openapi({
      description: "Credits to debit (≥ 0); exactly one of actualAmount and usage",
      example: 6.96,
    }),
    usage: confirmUsageSchema.optional().openapi({
      description:
        "Instead of actualAmount: the call's token usage; the amount debited is its credit cost (USD cost × the project's creditsPerUsd, rounded up to the micro-credit), and the usage record is written with the debit",
    }),
  })
  .superRefine((body, ctx) => {
    const given = (body.actualAmount === undefined ? 0 : 1) + (body.usage === undefined ? 0 : 1);
    if (given !== 1) {
      ctx.addIssue({
        code: "custom",
        path: [body.usage === undefined ? "actualAmount" : "usage"],
        message: "exactly one of actualAmount and usage is required",
      });
    }
  })
  .openapi("ConfirmReservationRequest", {
    example: {
      reservationId: ex.reservationId,
      usage: { modelId: ex.modelId, inputTokens: 9500, outputTokens: 3100, cachedTokens: 2000 },
    },
  });

/** The fields of every confirm's answer: the hold settled, and the balance after it. */
const confirmedShape = {
  success: z.literal(true),
  reservationId: z.string(),
  transactionId: z.string(),
  reservedAmount: z.number(),
  actualAmount: z.number(),
  balance: z.number(),
  amountReleased: z.number(),
};

/** The answer to a confirm of an `actualAmount`. */
const confirmedAmountResponse = z.object(confirmedShape).openapi({
  description: "A confirm of an actualAmount",
  example: {
    success: true,
    reservationId: ex.reservationId,
    transactionId: ex.confirmTxnId,
    reservedAmount: 9.6,
    actualAmount: 6.96,
    balance: 18.54,
    amountReleased: 2.64,
  },
});

/** A confirm with `usage` answered: 9.6 held, 6.96 charged for the usage. */
const confirmedUsageExample = {
  success: true as const,
  reservationId: ex.reservationId,
  transactionId: ex.confirmTxnId,
  reservedAmount: 9.6,
  actualAmount: 6.96,
  balance: 18.54,
  amountReleased: 2.64,
  usageRecord: exampleUsageRecord,
  creditsCharged: 6.96,
};

/** The answer to a confirm with `usage`: it always adds the usage record and the credits charged. */
const confirmedUsageResponse = z
  .object({
    ...confirmedShape,
    usageRecord: usageRecordSchema.openapi({
      description: "The usage record written with the debit",
    }),
    creditsCharged: z.number().openapi({
      description: "The credits debited (the usage's credit cost); equal to actualAmount",
      example: 6.96,
    }),
  })
  .openapi({ description: "A confirm with usage", example: confirmedUsageExample });

/**
 * The answer to a confirm: with `usage`, always `usageRecord` and `creditsCharged` as well; a
 * typed client tells the two apart with `"creditsCharged" in data`. The answer with usage comes
 * first so that parsing an answer with this schema keeps its usage fields.
 */
export const confirmReservationResponse = z
  .union([confirmedUsageResponse, confirmedAmountResponse])
  .openapi({ example: confirmedUsageExample });

export const cancelReservationBody = z
  .object({ reservationId: idString.openapi({ example: ex.pendingReservationId }) })
  .openapi("CancelReservationRequest", { example: { reservationId: ex.pendingReservationId } });

export const cancelReservationResponse = z
  .object({
    success: z.literal(true),
    reservationId: z.string(),
    amountReleased: z.number(),
    accountId: z.string(),
  })
  .openapi({
    example: {
      success: true,
      reservationId: ex.pendingReservationId,
      amountReleased: 4.8,
      accountId: ex.accountId,
    },
  });
