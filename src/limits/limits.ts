/**
 * An account's spend limits (docs/api.md#spend-limits): up to 10 of `{period, amount, timeZone,
 * soft}`, stored on the account as JSON text (`accounts.spend_limits`; null when
 * none), replaced whole by create and update. Amounts are micro-credits inside, credits outside.
 */
import { z } from "@hono/zod-openapi";
import { creditAmount } from "../http/schemas.ts";
import { fromMicros } from "../money.ts";
import type { WireOf } from "../wire.ts";
import { isTimeZone, PERIODS, type Period } from "./windows.ts";

/** The most limits an account may carry. */
export const MAX_LIMITS = 10;

/** One spend limit, as the service keeps it. */
export interface SpendLimit {
  period: Period;
  /** The most a window may spend (spent + held), micro-credits, > 0. */
  amountMicros: number;
  /** An IANA zone name, as the caller gave it. */
  timeZone: string;
  /** A soft limit never refuses; it only sends `spend_limit.reached`. */
  soft: boolean;
}

const period = z.enum(PERIODS).openapi({ example: "day" });

/** A spend limit in a request: `timeZone` defaults to UTC, `soft` to false. */
export const spendLimitInput = z
  .object({
    period,
    amount: creditAmount().openapi({ description: "Credits > 0, at most 6 decimals", example: 50 }),
    timeZone: z
      .string()
      .refine(isTimeZone, { message: "must be an IANA time zone name (such as Europe/Paris)" })
      .optional()
      .openapi({ description: "IANA time zone of the window (default UTC)", example: "UTC" }),
    soft: z.boolean().optional().openapi({ description: "Never refuses (default false)" }),
  })
  .openapi("SpendLimitInput");

/** `spendLimits` in a request: at most 10; `[]` or null removes every limit. */
export const spendLimitsInput = z.array(spendLimitInput).max(MAX_LIMITS).nullable().openapi({
  description: "Up to 10 limits, replacing the account's whole list; [] or null removes them",
});

/** A spend limit of the Account object. */
export const spendLimitSchema = z
  .object({
    period,
    amount: z.number().openapi({ description: "Credits", example: 50 }),
    timeZone: z.string().openapi({ example: "UTC" }),
    soft: z.boolean().openapi({ example: false }),
  })
  .openapi("SpendLimit");

/** The limits a request gave (null: remove them all). */
export function limitsOfInput(input: z.output<typeof spendLimitsInput>): SpendLimit[] {
  return (input ?? []).map((limit) => ({
    period: limit.period,
    amountMicros: limit.amount,
    timeZone: limit.timeZone ?? "UTC",
    soft: limit.soft ?? false,
  }));
}

/** The stored text of `limits` (null when there are none: the account's writes stay plain). */
export function limitsText(limits: readonly SpendLimit[]): string | null {
  return limits.length === 0 ? null : JSON.stringify(limits);
}

const parsed = new Map<string, readonly SpendLimit[]>();

/**
 * The limits of an account's stored `spend_limits` text (cached by text: the hot path parses a
 * given list once).
 */
export function parseLimits(text: string | null): readonly SpendLimit[] {
  if (text === null) return [];
  let limits = parsed.get(text);
  if (limits === undefined) {
    limits = JSON.parse(text) as SpendLimit[];
    if (parsed.size > 10_000) parsed.clear();
    parsed.set(text, limits);
  }
  return limits;
}

/** The Account object's `spendLimits` of a stored text. */
export function limitsJson(text: string | null): WireOf<typeof spendLimitSchema>[] {
  return parseLimits(text).map((limit) => ({
    period: limit.period,
    amount: fromMicros(limit.amountMicros),
    timeZone: limit.timeZone,
    soft: limit.soft,
  }));
}

/** A limit's identity for "once per account, limit and window" (`spend_limit_reached`). */
export function limitKey(limit: SpendLimit): string {
  return `${limit.period}|${limit.timeZone}|${limit.amountMicros}|${limit.soft ? 1 : 0}`;
}
