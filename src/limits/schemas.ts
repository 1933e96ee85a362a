/**
 * zod schemas of the spend limit reads (docs/api.md#spend-limits): `GET /v1/accounts/limits`
 * and `GET /v1/accounts/check`.
 */
import { z } from "@hono/zod-openapi";
import { ex } from "../http/examples.ts";
import { requiringAccount, successResponse } from "../http/schemas.ts";
import { literalToMicros, MAX_AMOUNT_MICROS } from "../money.ts";
import { PERIODS } from "./windows.ts";

/** One limit's current window with its figures (credits). */
export const limitWindowSchema = z
  .object({
    period: z.enum(PERIODS).openapi({ example: "day" }),
    amount: z.number().openapi({ description: "The limit, credits", example: 50 }),
    timeZone: z.string().openapi({ example: "Europe/Paris" }),
    soft: z.boolean().openapi({ example: false }),
    windowStart: z.string().openapi({ example: "2026-11-20T23:00:00.000Z" }),
    resetsAt: z
      .string()
      .openapi({ description: "The window's end", example: "2026-11-21T23:00:00.000Z" }),
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

const spendable = z.number().openapi({
  description: "The largest deduction that would succeed now: available, or less by a hard limit",
  example: 17.99,
});

export const limitsResponse = successResponse(
  {
    accountId: z.string().openapi({ example: ex.accountId }),
    externalId: z.string().openapi({ example: ex.externalId }),
    available: z.number().openapi({ description: "balance − reserved", example: 17.99 }),
    spendable,
    limits: z.array(limitWindowSchema),
  },
  {
    accountId: ex.accountId,
    externalId: ex.externalId,
    available: 17.99,
    spendable: 17.99,
    limits: [exampleWindow],
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
  },
  {
    allowed: true,
    code: null,
    requested: 4,
    available: 17.99,
    spendable: 17.99,
    limits: [exampleWindow],
  },
);
