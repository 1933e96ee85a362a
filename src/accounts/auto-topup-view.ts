/**
 * The automatic top-up as the API shows it (docs/api.md#automatic-top-up): the AutoTopup and
 * AutoTopupAttempt objects, read from the settings and attempts (auto-topup.ts), and the page
 * of an account's attempts.
 */
import { z } from "@hono/zod-openapi";
import type { Kysely, Transaction } from "kysely";
import { iso } from "../dates.ts";
import { countedPage } from "../db/paging.ts";
import type { AutoTopupAttemptsTable, DB } from "../db/schema.ts";
import { ex } from "../http/examples.ts";
import { fromMicros } from "../money.ts";
import type { WireOf } from "../wire.ts";
import { lastAttempt, readSettings, toppedUpThisMonth } from "./auto-topup.ts";

type Reader = Kysely<DB> | Transaction<DB>;
type Attempt = AutoTopupAttemptsTable;

const exampleAttempt = {
  id: "atu_01M7YKB3F8Q2W6E4R0T9Y1U3I5",
  status: "succeeded" as const,
  reason: null,
  credits: 500,
  amountCents: 500,
  paymentIntentId: "pi_3Q0abc",
  createdAt: ex.accountCreatedAt,
  finishedAt: ex.accountCreatedAt,
};

export const autoTopupAttemptSchema = z
  .object({
    id: z.string().openapi({ example: exampleAttempt.id }),
    status: z.enum(["pending", "succeeded", "failed"]),
    reason: z
      .string()
      .nullable()
      .openapi({
        description:
          "Why it failed: Stripe's decline_code or code (card_declined, authentication_required, " +
          "…), requires_action, no_payment_method, not_configured, unreachable or monthly_limit",
        example: null,
      }),
    credits: z.number().openapi({ example: 500 }),
    amountCents: z.number().int().openapi({ description: "USD cents charged", example: 500 }),
    paymentIntentId: z.string().nullable().openapi({ example: "pi_3Q0abc" }),
    createdAt: z.string().openapi({ example: ex.accountCreatedAt }),
    finishedAt: z.string().nullable().openapi({ example: ex.accountCreatedAt }),
  })
  .openapi("AutoTopupAttempt", { example: exampleAttempt });

export const autoTopupSchema = z
  .object({
    enabled: z.boolean(),
    threshold: z.number().openapi({ description: "Credits", example: 100 }),
    amount: z.number().openapi({ description: "Credits bought per attempt", example: 500 }),
    monthlyLimit: z.number().nullable().openapi({
      description: "Credits per UTC month (null: none)",
      example: 2000,
    }),
    toppedUpThisMonth: z.number().openapi({
      description: "Credits of this UTC month's succeeded and in-flight attempts",
      example: 500,
    }),
    consecutiveFailures: z.number().int().openapi({ example: 0 }),
    disabledReason: z.enum(["consecutive_failures"]).nullable().openapi({ example: null }),
    lastAttempt: autoTopupAttemptSchema.nullable(),
  })
  .openapi("AutoTopup");

/** The API's AutoTopup of an account's settings, at `nowMs`. */
export async function autoTopupJson(
  db: Reader,
  accountId: string,
  nowMs: number,
): Promise<WireOf<typeof autoTopupSchema> | null> {
  const s = await readSettings(db, accountId);
  if (s === undefined) return null;
  const last = await lastAttempt(db, accountId);
  return {
    enabled: s.enabled === 1,
    threshold: fromMicros(s.threshold_micros),
    amount: fromMicros(s.amount_micros),
    monthlyLimit: s.monthly_limit_micros === null ? null : fromMicros(s.monthly_limit_micros),
    toppedUpThisMonth: fromMicros(await toppedUpThisMonth(db, accountId, nowMs)),
    consecutiveFailures: s.consecutive_failures,
    disabledReason: s.disabled_reason === "consecutive_failures" ? "consecutive_failures" : null,
    lastAttempt: last === undefined ? null : attemptJson(last),
  };
}

/** The API's AutoTopupAttempt of a stored attempt. */
export function attemptJson(a: Attempt): WireOf<typeof autoTopupAttemptSchema> {
  return {
    id: a.id,
    status: a.status,
    reason: a.reason,
    credits: fromMicros(a.credits_micros),
    amountCents: a.amount_cents,
    paymentIntentId: a.payment_intent_id,
    createdAt: iso(a.created_at_ms),
    finishedAt: a.finished_at_ms === null ? null : iso(a.finished_at_ms),
  };
}

/** A page of the account's attempts, newest first, with how many it has. */
export async function listAttempts(
  db: Reader,
  accountId: string,
  page: { limit: number; offset: number },
) {
  const base = db.selectFrom("auto_topup_attempts").where("account_id", "=", accountId);
  const { rows, totalCount } = await countedPage(
    base,
    (q) => q.orderBy("created_at_ms", "desc").orderBy("id", "desc"),
    page,
  );
  return {
    rows: rows.map(attemptJson),
    totalCount,
  };
}
