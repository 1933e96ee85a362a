/**
 * Automatic top-up (docs/api.md#automatic-top-up, docs/design.md#automatic-top-up): an
 * account's settings, and the rule that queues an attempt in the transaction of the write that
 * calls for it, as `balance.low` is raised in its own (low-balance.ts calls `considerTopUp`).
 * The attempt itself, an off-session PaymentIntent, is made off the request path
 * (src/jobs/auto-topup.ts); its outcome is recorded here (`failAttempt`, `succeedAttempt`).
 *
 * Credits in micro-credits; USD in cents; times in epoch ms. At most one attempt per account is
 * pending: the unit holds the account (its row lock on PostgreSQL) and a partial unique index
 * repeats the rule.
 */
import { z } from "@hono/zod-openapi";
import type { Kysely, Transaction } from "kysely";
import { iso } from "../dates.ts";
import type { AutoTopupAttemptsTable, AutoTopupsTable, DB } from "../db/schema.ts";
import { ex } from "../http/examples.ts";
import { newId } from "../ids.ts";
import { fromMicros } from "../money.ts";
import { defineEvent } from "../webhooks/outbox.ts";
import type { WireOf } from "../wire.ts";

type Reader = Kysely<DB> | Transaction<DB>;
type Settings = AutoTopupsTable;
type Attempt = AutoTopupAttemptsTable;

/** How long after a failed attempt a write below the threshold may queue the next: 1 hour. */
export const RETRY_AFTER_FAILURE_MS = 3_600_000;
/** Failures in a row (a monthly limit not counted) that disable the top-up. */
export const FAILURES_TO_DISABLE = 3;

/** The account an attempt is about. */
export interface TopUpAccount {
  id: string;
  project_id: string;
  external_id: string;
}

const numbers = <T extends Record<string, unknown>>(row: T, keys: (keyof T)[]): T => {
  const out = { ...row };
  for (const k of keys) {
    const v = out[k];
    if (v !== null && v !== undefined) (out as Record<keyof T, unknown>)[k] = Number(v);
  }
  return out;
};

const SETTINGS_NUMBERS: (keyof Settings)[] = [
  "enabled",
  "threshold_micros",
  "amount_micros",
  "monthly_limit_micros",
  "consecutive_failures",
  "updated_at_ms",
];
const ATTEMPT_NUMBERS: (keyof Attempt)[] = [
  "credits_micros",
  "amount_cents",
  "created_at_ms",
  "finished_at_ms",
  "next_try_at_ms",
  "first_unanswered_at_ms",
  "processing_since_ms",
];

/** An account's settings, or undefined before any. */
export async function readSettings(db: Reader, accountId: string): Promise<Settings | undefined> {
  const row = await db
    .selectFrom("auto_topups")
    .selectAll()
    .where("account_id", "=", accountId)
    .executeTakeFirst();
  return row === undefined ? undefined : numbers(row, SETTINGS_NUMBERS);
}

/** The attempt `id`, or undefined. */
export async function readAttempt(db: Reader, id: string): Promise<Attempt | undefined> {
  const row = await db
    .selectFrom("auto_topup_attempts")
    .selectAll()
    .where("id", "=", id)
    .executeTakeFirst();
  return row === undefined ? undefined : numbers(row, ATTEMPT_NUMBERS);
}

/** The account's newest attempt, or undefined. */
export async function lastAttempt(db: Reader, accountId: string): Promise<Attempt | undefined> {
  const row = await db
    .selectFrom("auto_topup_attempts")
    .selectAll()
    .where("account_id", "=", accountId)
    .orderBy("created_at_ms", "desc")
    .orderBy("id", "desc")
    .executeTakeFirst();
  return row === undefined ? undefined : numbers(row, ATTEMPT_NUMBERS);
}

/** The start of the UTC calendar month of `ms`, epoch ms. */
export function monthStartMs(ms: number): number {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

/**
 * The credits of the account's succeeded and pending attempts created in the UTC month of
 * `nowMs` (micro-credits): `toppedUpThisMonth`.
 */
export async function toppedUpThisMonth(db: Reader, accountId: string, nowMs: number) {
  const row = await db
    .selectFrom("auto_topup_attempts")
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>("credits_micros"), eb.lit(0)).as("sum"))
    .where("account_id", "=", accountId)
    .where("status", "in", ["pending", "succeeded"])
    .where("created_at_ms", ">=", monthStartMs(nowMs))
    .executeTakeFirstOrThrow();
  return Number(row.sum);
}

/**
 * The USD cents `creditsMicros` cost at `creditsPerUsdMicros` (micro-credits per USD), rounded
 * up to the cent.
 */
export function centsFor(creditsMicros: number, creditsPerUsdMicros: number): number {
  const num = BigInt(creditsMicros) * 100n;
  const den = BigInt(creditsPerUsdMicros);
  return Number((num + den - 1n) / den);
}

/**
 * After a write that left the account (as the unit holds it) with `afterMicros` available, from
 * `beforeMicros`: queues an attempt when its enabled top-up calls for one (none in flight, and
 * the write crossed the threshold; or it is below it and the last attempt succeeded, or failed
 * at least an hour ago; never after a monthly-limit failure in the same UTC month).
 */
export async function considerTopUp(
  trx: Transaction<DB>,
  account: TopUpAccount,
  beforeMicros: number,
  afterMicros: number,
  nowMs: number,
): Promise<void> {
  const settings = await readSettings(trx, account.id);
  if (settings === undefined || settings.enabled !== 1) return;
  const threshold = settings.threshold_micros;
  if (afterMicros >= threshold) return;
  const last = await lastAttempt(trx, account.id);
  if (last?.status === "pending") return;
  if (
    last?.status === "failed" &&
    last.reason === "monthly_limit" &&
    monthStartMs(last.created_at_ms) === monthStartMs(nowMs)
  ) {
    return;
  }
  const crossed = beforeMicros >= threshold;
  const allowed =
    crossed ||
    last?.status === "succeeded" ||
    (last?.status === "failed" && nowMs - (last.finished_at_ms ?? 0) >= RETRY_AFTER_FAILURE_MS);
  if (!allowed) return;
  await queueAttempt(trx, account, settings, nowMs);
}

/**
 * Queues an attempt of `settings.amount_micros`: pending, due now, its cents fixed at the
 * project's price; or failed at once with `monthly_limit` (past the month's limit) or
 * `not_configured` (no credit price).
 */
export async function queueAttempt(
  trx: Transaction<DB>,
  account: TopUpAccount,
  settings: Settings,
  nowMs: number,
): Promise<void> {
  const project = await trx
    .selectFrom("projects")
    .select("credits_per_usd_micros")
    .where("id", "=", account.project_id)
    .executeTakeFirstOrThrow();
  const price =
    project.credits_per_usd_micros === null ? null : Number(project.credits_per_usd_micros);
  const credits = settings.amount_micros;
  const attempt: Attempt = {
    id: newId("atu"),
    project_id: account.project_id,
    account_id: account.id,
    status: "pending",
    reason: null,
    credits_micros: credits,
    amount_cents: price === null ? 0 : centsFor(credits, price),
    payment_intent_id: null,
    purchase_id: null,
    created_at_ms: nowMs,
    finished_at_ms: null,
    next_try_at_ms: nowMs,
    first_unanswered_at_ms: null,
    processing_since_ms: null,
  };
  const limit = settings.monthly_limit_micros;
  const failure =
    limit !== null && (await toppedUpThisMonth(trx, account.id, nowMs)) + credits > limit
      ? "monthly_limit"
      : price === null
        ? "not_configured"
        : null;
  if (failure === null) {
    await trx.insertInto("auto_topup_attempts").values(attempt).execute();
    return;
  }
  await trx
    .insertInto("auto_topup_attempts")
    .values({ ...attempt, status: "failed", reason: failure, finished_at_ms: nowMs })
    .execute();
  await afterFailure(trx, account, attempt.id, failure, nowMs);
}

/**
 * Fails the pending attempt `attempt` with `reason` (unless it has ended already), announces
 * it and counts it: the third failure in a row (a monthly limit not counted) disables the
 * top-up.
 * @returns whether it failed it
 */
export async function failAttempt(
  trx: Transaction<DB>,
  account: TopUpAccount,
  attempt: Pick<Attempt, "id">,
  reason: string,
  nowMs: number,
): Promise<boolean> {
  const done = await trx
    .updateTable("auto_topup_attempts")
    .set({ status: "failed", reason, finished_at_ms: nowMs })
    .where("id", "=", attempt.id)
    .where("status", "=", "pending")
    .executeTakeFirst();
  if (Number(done.numUpdatedRows) === 0) return false;
  await afterFailure(trx, account, attempt.id, reason, nowMs);
  return true;
}

async function afterFailure(
  trx: Transaction<DB>,
  account: TopUpAccount,
  attemptId: string,
  reason: string,
  nowMs: number,
) {
  if (reason !== "monthly_limit") {
    const settings = await readSettings(trx, account.id);
    if (settings !== undefined) {
      const failures = settings.consecutive_failures + 1;
      const disable = settings.enabled === 1 && failures >= FAILURES_TO_DISABLE;
      await trx
        .updateTable("auto_topups")
        .set({
          consecutive_failures: failures,
          ...(disable ? { enabled: 0, disabled_reason: "consecutive_failures" } : {}),
          updated_at_ms: Math.max(nowMs, settings.updated_at_ms),
        })
        .where("account_id", "=", account.id)
        .execute();
      if (disable) {
        await trx
          .updateTable("accounts")
          .set({ auto_topup_threshold_micros: null })
          .where("id", "=", account.id)
          .execute();
      }
    }
  }
  await autoTopupFailed.emit(trx, {
    projectId: account.project_id,
    nowMs,
    data: { accountId: account.id, externalId: account.external_id, attemptId, reason },
  });
}

/**
 * Marks the attempt `attemptId` succeeded with its purchase (also an attempt that failed
 * meanwhile: a success that arrives late still counts), resets the failures in a row and
 * announces it with the paying account's balance after the grant.
 * @returns whether it changed the attempt (false when it had succeeded already)
 */
export async function succeedAttempt(
  trx: Transaction<DB>,
  account: TopUpAccount,
  attemptId: string,
  purchase: { id: string; paymentIntentId: string; creditsMicros: number },
  balanceMicros: number,
  nowMs: number,
): Promise<boolean> {
  const done = await trx
    .updateTable("auto_topup_attempts")
    .set({
      status: "succeeded",
      reason: null,
      purchase_id: purchase.id,
      payment_intent_id: purchase.paymentIntentId,
      finished_at_ms: nowMs,
    })
    .where("id", "=", attemptId)
    .where("status", "!=", "succeeded")
    .executeTakeFirst();
  if (Number(done.numUpdatedRows) === 0) return false;
  await trx
    .updateTable("auto_topups")
    .set({ consecutive_failures: 0 })
    .where("account_id", "=", account.id)
    .execute();
  await autoTopupSucceeded.emit(trx, {
    projectId: account.project_id,
    nowMs,
    data: {
      accountId: account.id,
      externalId: account.external_id,
      attemptId,
      purchaseId: purchase.id,
      credits: fromMicros(purchase.creditsMicros),
      balance: fromMicros(balanceMicros),
    },
  });
  return true;
}

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
  const rows = await base
    .selectAll()
    .orderBy("created_at_ms", "desc")
    .orderBy("id", "desc")
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  const { count } = await base
    .select((eb) => eb.fn.countAll<number>().as("count"))
    .executeTakeFirstOrThrow();
  return {
    rows: rows.map((r) => attemptJson(numbers(r, ATTEMPT_NUMBERS))),
    totalCount: Number(count),
  };
}

/** The `data` of `auto_topup.failed`. */
export const autoTopupFailedData = z
  .object({
    accountId: z.string().openapi({ example: ex.accountId }),
    externalId: z.string().openapi({ example: ex.externalId }),
    attemptId: z.string().openapi({ example: exampleAttempt.id }),
    reason: z.string().openapi({ example: "card_declined" }),
  })
  .openapi("AutoTopupFailedData");

/** The `data` of `auto_topup.succeeded`. */
export const autoTopupSucceededData = z
  .object({
    accountId: z.string().openapi({ example: ex.accountId }),
    externalId: z.string().openapi({ example: ex.externalId }),
    attemptId: z.string().openapi({ example: exampleAttempt.id }),
    purchaseId: z.string().openapi({ example: "pur_01M7YKB3F8Q2W6E4R0T9Y1U3I5" }),
    credits: z.number().openapi({ example: 500 }),
    balance: z.number().openapi({ example: 590 }),
  })
  .openapi("AutoTopupSucceededData");

export const autoTopupFailed = defineEvent("auto_topup.failed", autoTopupFailedData);
export const autoTopupSucceeded = defineEvent("auto_topup.succeeded", autoTopupSucceededData);
