import type { Kysely, Transaction } from "kysely";
import type { AutoTopupAttemptsTable, AutoTopupsTable, DB } from "../db/schema.ts";
import { newId } from "../ids.ts";
import { fromMicros } from "../money.ts";
import { autoTopupFailed, autoTopupSucceeded } from "./auto-topup-events.ts";

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

/** An account's settings, or undefined before any. */
export function readSettings(db: Reader, accountId: string): Promise<Settings | undefined> {
  return db
    .selectFrom("auto_topups")
    .selectAll()
    .where("account_id", "=", accountId)
    .executeTakeFirst();
}

/** The attempt `id`, or undefined. */
export function readAttempt(db: Reader, id: string): Promise<Attempt | undefined> {
  return db.selectFrom("auto_topup_attempts").selectAll().where("id", "=", id).executeTakeFirst();
}

/** The account's newest attempt, or undefined. */
export function lastAttempt(db: Reader, accountId: string): Promise<Attempt | undefined> {
  return db
    .selectFrom("auto_topup_attempts")
    .selectAll()
    .where("account_id", "=", accountId)
    .orderBy("created_at_ms", "desc")
    .orderBy("id", "desc")
    .executeTakeFirst();
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
  const price = project.credits_per_usd_micros;
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
