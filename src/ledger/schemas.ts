/**
 * zod schemas of balance adjustments (add and deduct) and of credit grants: the grant list, the
 * terms a credit's grant takes, and the `data` of a `credits.expired` event (docs/api.md#endpoints,
 * docs/api.md#balance-adjustments-and-transactions, docs/api.md#credit-grants-expiry-and-priority);
 * and the mapper of a stored grant to the API's Grant object.
 */
import { z } from "@hono/zod-openapi";
import { iso, parseDateParam } from "../dates.ts";
import type { CreditGrantRow } from "../db/schema.ts";
import { ex } from "../http/examples.ts";
import {
  creditAmount,
  descriptionString,
  idString,
  metadataSchema,
  pageQuery,
  paginationSchema,
  queryBoolean,
  requiringAccount,
} from "../http/schemas.ts";
import { fromMicros } from "../money.ts";
import type { WireOf } from "../wire.ts";

/** An example grant id. */
export const exampleGrantId = "grt_01JD7Q2W8R5T3V9X1Z4B6C8E0G";

/**
 * A date-time `YYYY-MM-DDTHH:MM[:SS[.fff]]` with `Z`, `±HH:MM` or no offset (UTC), checked
 * against the calendar (src/dates.ts); a bare date is refused.
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
export const grantTermsFields = {
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

export const accountRef = idString.openapi({
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

export const grantSchema = z
  .object({
    id: z.string().openapi({ example: exampleGrantId }),
    accountId: z.string().openapi({ example: ex.accountId }),
    transactionId: z.string().nullable().openapi({
      description: "The credit that made the grant (null for credits booked before grants existed)",
      example: ex.addTxnId,
    }),
    amount: z.number().openapi({ description: "Credits granted", example: 25.5 }),
    remaining: z.number().openapi({ description: "Credits not yet spent", example: 18.25 }),
    priority: z.number().int().openapi({ description: "0-100, lower is spent first", example: 50 }),
    expiresAt: z
      .string()
      .nullable()
      .openapi({ description: "null: never expires", example: "2027-12-31T23:59:59.000Z" }),
    createdAt: z.string().openapi({ example: "2026-11-21T08:20:11.412Z" }),
    status: z.enum(["active", "expired", "spent"]).openapi({
      description:
        "`expired` once past expiresAt; else `active` while something remains, else `spent`",
      example: "active",
    }),
  })
  .openapi("Grant");

export const listGrantsQuery = requiringAccount({
  activeOnly: queryBoolean
    .optional()
    .openapi({ description: "Only active grants", example: "false" }),
  ...pageQuery(100, 1000),
});

const exampleGrant = {
  id: exampleGrantId,
  accountId: ex.accountId,
  transactionId: ex.addTxnId,
  amount: 25.5,
  remaining: 18.25,
  priority: 50,
  expiresAt: "2027-12-31T23:59:59.000Z",
  createdAt: "2026-11-21T08:20:11.412Z",
  status: "active" as const,
};

export const listGrantsResponse = z
  .object({
    success: z.literal(true),
    grants: z.array(grantSchema),
    pagination: paginationSchema,
  })
  .openapi({
    example: {
      success: true,
      grants: [exampleGrant],
      pagination: { limit: 100, offset: 0, totalCount: 1, hasMore: false },
    },
  });

export type GrantStatus = "active" | "expired" | "spent";

/**
 * A grant's status at `nowMs`: `expired` once past its expiresAt (whatever remains), else
 * `active` while something remains, else `spent`.
 */
export function grantStatus(grant: CreditGrantRow, nowMs: number): GrantStatus {
  if (grant.expires_at_ms !== null && grant.expires_at_ms <= nowMs) return "expired";
  return grant.remaining_micros > 0 ? "active" : "spent";
}

/** The API's Grant object at `nowMs`. */
export function grantJson(grant: CreditGrantRow, nowMs: number): WireOf<typeof grantSchema> {
  return {
    id: grant.id,
    accountId: grant.account_id,
    transactionId: grant.transaction_id,
    amount: fromMicros(grant.amount_micros),
    remaining: fromMicros(grant.remaining_micros),
    priority: grant.priority,
    expiresAt: grant.expires_at_ms === null ? null : iso(grant.expires_at_ms),
    createdAt: iso(grant.created_at_ms),
    status: grantStatus(grant, nowMs),
  };
}

/**
 * The `data` of a `credits.expired` event: the expiry debit that removed what was left of one
 * grant (docs/api.md#expiry-of-grants), and the balance after it, in credits.
 */
export const creditsExpiredData = z
  .object({
    accountId: z.string().openapi({ example: ex.accountId }),
    externalId: z.string().openapi({ example: ex.externalId }),
    grantId: z.string().openapi({ description: "The grant that expired", example: exampleGrantId }),
    transactionId: z.string().openapi({ description: "The expiry debit", example: ex.deductTxnId }),
    amount: z.number().openapi({ description: "Credits removed", example: 3.25 }),
    balance: z.number().openapi({ description: "Credits after the expiry", example: 14.04 }),
  })
  .openapi("CreditsExpiredData");
