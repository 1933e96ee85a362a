/**
 * Plan grants (docs/api.md#plans-and-grants): each period of an assignment is granted exactly once,
 * as a `credit` transaction naming the plan and the assignment; `plan_grants` has one row per
 * (assignment, period), so a restart, a second process or an overrunning job never grants a
 * period twice. For `accumulate: false`, what is left of the previous grant of the assignment
 * expires first as a `debit` with `metadata.reason = "plan_credits_expired"`, capped at
 * `available` so that it never takes credits that reservations hold.
 */
import type { Transaction } from "kysely";
import { findAccountWithBalance } from "../accounts/lookup.ts";
import type { AccountPlanRow, DB, PlanRow } from "../db/schema.ts";
import { iso } from "../http/dates.ts";
import { postEntry } from "../ledger/core.ts";
import { nextGrantAt } from "./schedule.ts";

/**
 * Grants period `grants_made` of the assignment (due at its nextGrantAt) and advances the
 * schedule. Does nothing but advance when the period was already granted.
 * @returns the assignment as updated
 * @throws ApiError BALANCE_LIMIT_EXCEEDED when the grant would pass 9e9 credits
 */
export async function grantNextPeriod(
  trx: Transaction<DB>,
  ap: AccountPlanRow,
  plan: PlanRow,
  nowMs: number,
): Promise<AccountPlanRow> {
  const period = ap.grants_made;
  const dueMs = nextGrantAt(ap.anchor_at_ms, plan.interval, period, plan.occurrences) ?? nowMs;
  const done = await trx
    .selectFrom("plan_grants")
    .select("transaction_id")
    .where("account_plan_id", "=", ap.id)
    .where("period_index", "=", period)
    .executeTakeFirst();
  if (!done) {
    if (plan.accumulate === 0) await expireUnspentGrant(trx, ap, period, nowMs);
    const tx = await postEntry(trx, {
      projectId: ap.project_id,
      accountId: ap.account_id,
      type: "credit",
      amountMicros: plan.credits_micros,
      description: `Plan ${plan.name}: grant ${period + 1}`,
      metadata: {
        reason: "plan_grant",
        planId: plan.id,
        accountPlanId: ap.id,
        period: period + 1,
        periodStart: iso(dueMs),
      },
      source: "plan_grant",
      accountPlanId: ap.id,
      nowMs,
    });
    if (plan.accumulate === 0) {
      await trx
        .updateTable("accounts")
        .set({ plan_bucket_micros: plan.credits_micros, plan_bucket_account_plan_id: ap.id })
        .where("id", "=", ap.account_id)
        .execute();
    }
    await trx
      .insertInto("plan_grants")
      .values({
        account_plan_id: ap.id,
        period_index: period,
        due_at_ms: dueMs,
        transaction_id: tx.id,
        granted_at_ms: nowMs,
      })
      .execute();
  }
  const grantsMade = period + 1;
  const next = nextGrantAt(ap.anchor_at_ms, plan.interval, grantsMade, plan.occurrences);
  await trx
    .updateTable("account_plans")
    .set({ grants_made: grantsMade, next_grant_at_ms: next })
    .where("id", "=", ap.id)
    .execute();
  return { ...ap, grants_made: grantsMade, next_grant_at_ms: next };
}

/** Expires the unspent part of the assignment's previous grant, capped at `available`. */
async function expireUnspentGrant(
  trx: Transaction<DB>,
  ap: AccountPlanRow,
  period: number,
  nowMs: number,
): Promise<void> {
  const { account, available } = await findAccountWithBalance(
    trx,
    ap.project_id,
    ap.account_id,
    nowMs,
  );
  if (account.plan_bucket_account_plan_id !== ap.id || account.plan_bucket_micros === 0) return;
  const amount = Math.min(account.plan_bucket_micros, Math.max(0, available));
  if (amount > 0) {
    await postEntry(trx, {
      projectId: ap.project_id,
      accountId: ap.account_id,
      type: "debit",
      amountMicros: amount,
      description: "Unused plan credits expired",
      metadata: {
        reason: "plan_credits_expired",
        planId: ap.plan_id,
        accountPlanId: ap.id,
        period,
      },
      source: "plan_expiry",
      accountPlanId: ap.id,
      nowMs,
    });
  }
  await trx
    .updateTable("accounts")
    .set({ plan_bucket_micros: 0, plan_bucket_account_plan_id: null })
    .where("id", "=", ap.account_id)
    .execute();
}

/**
 * Makes an assignment inactive (replaced, cancelled or completed). Credits already granted
 * stay; a non-accumulating grant's leftover stops being tracked for expiry.
 */
export async function endAssignment(
  trx: Transaction<DB>,
  ap: AccountPlanRow,
  reason: "replaced" | "cancelled" | "completed",
  nowMs: number,
): Promise<AccountPlanRow> {
  const cancelledAt = reason === "cancelled" ? nowMs : ap.cancelled_at_ms;
  const ended = {
    active: 0,
    ended_at_ms: nowMs,
    end_reason: reason,
    cancelled_at_ms: cancelledAt,
    next_grant_at_ms: null,
  };
  await trx.updateTable("account_plans").set(ended).where("id", "=", ap.id).execute();
  await trx
    .updateTable("accounts")
    .set({ plan_bucket_micros: 0, plan_bucket_account_plan_id: null })
    .where("id", "=", ap.account_id)
    .where("plan_bucket_account_plan_id", "=", ap.id)
    .execute();
  return { ...ap, ...ended };
}

/**
 * Grants every period of the assignment due at `nowMs`, in order, and ends it when its last
 * period is over (occurrences). Used by the grant job and before an assignment is replaced or
 * cancelled, so that periods missed while the job was not running are never lost.
 * @returns the assignment as updated, the grants made, and whether it completed
 */
export async function settleDue(trx: Transaction<DB>, start: AccountPlanRow, nowMs: number) {
  const plan = await trx
    .selectFrom("plans")
    .selectAll()
    .where("id", "=", start.plan_id)
    .executeTakeFirstOrThrow();
  let ap = start;
  let grants = 0;
  while (ap.next_grant_at_ms !== null && ap.next_grant_at_ms <= nowMs) {
    ap = await grantNextPeriod(trx, ap, plan, nowMs);
    grants++;
  }
  const completed = ap.expires_at_ms !== null && ap.expires_at_ms <= nowMs;
  if (completed) ap = await endAssignment(trx, ap, "completed", nowMs);
  return { ap, grants, completed };
}
