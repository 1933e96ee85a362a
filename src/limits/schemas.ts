/**
 * zod schemas of the spend limit reads (docs/api.md#spend-limits): `GET /v1/accounts/limits`
 * and `GET /v1/accounts/check`.
 */
import { z } from "@hono/zod-openapi";
import { ex } from "../http/examples.ts";
import { requiringAccount, successResponse } from "../http/schemas.ts";
import { literalToMicros, MAX_AMOUNT_MICROS } from "../money.ts";
import { PERIODS } from "./windows.ts";

/** A window's bounds as the API shows them: RFC 3339 UTC, both null for a `total` limit. */
export const windowBounds = {
  windowStart: z.string().nullable().openapi({
    description: "The window's start (null for a `total` limit)",
    example: "2026-11-20T23:00:00.000Z",
  }),
  resetsAt: z.string().nullable().openapi({
    description: "The window's end (null for a `total` limit)",
    example: "2026-11-21T23:00:00.000Z",
  }),
};

/** One limit's current window with its figures (credits). */
export const limitWindowSchema = z
  .object({
    period: z.enum(PERIODS).openapi({ example: "day" }),
    amount: z.number().openapi({ description: "The limit, credits", example: 50 }),
    timeZone: z.string().openapi({ example: "Europe/Paris" }),
    soft: z.boolean().openapi({ example: false }),
    ...windowBounds,
    spent: z
      .number()
      .openapi({ description: "Spending debits booked in the window", example: 12.5 }),
    held: z.number().openapi({ description: "Pending, unexpired reservations", example: 2 }),
    remaining: z.number().openapi({ description: "max(0, amount − spent − held)", example: 35.5 }),
  })
  .openapi("SpendLimitWindow");

const exampleWindow = {
  period: "day" as const,
  amount: 50,
  timeZone: "Europe/Paris",
  soft: false,
  windowStart: "2026-11-20T23:00:00.000Z",
  resetsAt: "2026-11-21T23:00:00.000Z",
  spent: 12.5,
  held: 2,
  remaining: 35.5,
};

/** An account above the one asked about, with its limits (docs/api.md#pools-and-members). */
const ancestorSchema = z
  .object({
    accountId: z.string().openapi({ example: "acc_01M7YKB3F8Q2W6E4R0T9Y1U3I8" }),
    externalId: z.string().openapi({ example: "acme-corp" }),
    limits: z.array(limitWindowSchema),
  })
  .openapi("SpendLimitAncestor");

const ancestors = z.array(ancestorSchema).openapi({
  description:
    "Every account above it up to the root, nearest first, with its limits (each counting its " +
    "whole subtree); [] for a root",
});

const spendable = z.number().openapi({
  description: "The largest deduction that would succeed now: available, or less by a hard limit",
  example: 17.99,
});

export const limitsResponse = successResponse(
  {
    accountId: z.string().openapi({ example: ex.accountId }),
    externalId: z.string().openapi({ example: ex.externalId }),
    available: z.number().openapi({
      description: "balance − reserved (of its pool, for an account funded by its parent)",
      example: 17.99,
    }),
    spendable,
    limits: z.array(limitWindowSchema),
    ancestors,
  },
  {
    accountId: ex.accountId,
    externalId: ex.externalId,
    available: 17.99,
    spendable: 17.99,
    limits: [exampleWindow],
    ancestors: [],
  },
);

/** A positive amount of credits in a query string, read as micro-credits. */
const queryAmount = z
  .string()
  .max(40)
  .transform((text, ctx) => {
    const micros = /^\d+(\.\d+)?$/.test(text) ? literalToMicros(text) : null;
    if (micros === null || micros <= 0 || micros > MAX_AMOUNT_MICROS) {
      ctx.addIssue({ code: "custom", message: "must be a positive amount, at most 6 decimals" });
      return z.NEVER;
    }
    return micros;
  })
  .openapi({ type: "string", description: "Credits > 0, at most 6 decimals", example: "4" });

export const checkQuery = requiringAccount({ amount: queryAmount });

export const checkResponse = successResponse(
  {
    allowed: z.boolean().openapi({ example: true }),
    code: z
      .enum(["INSUFFICIENT_CREDITS", "SPEND_LIMIT_EXCEEDED"])
      .nullable()
      .openapi({ description: "What that deduction would answer (null: success)", example: null }),
    requested: z.number().openapi({ example: 4 }),
    available: z.number().openapi({ description: "balance − reserved", example: 17.99 }),
    spendable,
    limits: z.array(limitWindowSchema),
    ancestors,
  },
  {
    allowed: true,
    code: null,
    requested: 4,
    available: 17.99,
    spendable: 17.99,
    limits: [exampleWindow],
    ancestors: [],
  },
);
