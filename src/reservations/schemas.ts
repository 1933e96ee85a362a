/** zod schemas of reservations (spec §4.4; contract §7). */
import { z } from "@hono/zod-openapi";
import {
  creditAmount,
  idString,
  metadataSchema,
  pageQuery,
  paginationSchema,
  queryBoolean,
} from "../http/schemas.ts";

export const reservationSchema = z
  .object({
    id: z.string(),
    accountId: z.string(),
    amount: z.number(),
    status: z.enum(["pending", "confirmed", "cancelled", "expired"]),
    createdAt: z.string(),
    expiresAt: z.string(),
    metadata: z.record(z.string(), z.unknown()),
  })
  .openapi("Reservation");

export const createReservationBody = z
  .object({
    accountId: idString.openapi({ description: "Internal id or externalId" }),
    amount: creditAmount(),
    operation: idString.optional().openapi({ example: "chat.completion" }),
    model: idString.optional().openapi({ example: "gpt-4o" }),
    ttlSeconds: z
      .number()
      .int()
      .min(1)
      .max(86400)
      .optional()
      .openapi({ description: "Lifetime in seconds, default 900" }),
    metadata: metadataSchema.optional(),
  })
  .openapi("CreateReservationRequest");

export const createReservationResponse = z.object({
  success: z.literal(true),
  reservation: reservationSchema,
});

export const listReservationsQuery = z.object({
  accountId: idString.optional().openapi({ description: "Internal id or externalId" }),
  externalId: idString.optional(),
  activeOnly: queryBoolean.optional(),
  ...pageQuery(100, 1000),
});

export const listReservationsResponse = z.object({
  success: z.literal(true),
  reservations: z.array(reservationSchema),
  pagination: paginationSchema,
});

export const confirmReservationBody = z
  .object({
    reservationId: idString,
    actualAmount: creditAmount({ allowZero: true }),
  })
  .openapi("ConfirmReservationRequest");

export const confirmReservationResponse = z.object({
  success: z.literal(true),
  reservationId: z.string(),
  transactionId: z.string(),
  reservedAmount: z.number(),
  actualAmount: z.number(),
  balance: z.number(),
  amountReleased: z.number(),
});

export const cancelReservationBody = z
  .object({ reservationId: idString })
  .openapi("CancelReservationRequest");

export const cancelReservationResponse = z.object({
  success: z.literal(true),
  reservationId: z.string(),
  amountReleased: z.number(),
  accountId: z.string(),
});
