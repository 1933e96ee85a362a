/**
 * Plan settlement (docs/api.md#plans-and-grants): each period of an assignment is granted exactly once,
 * as a `credit` transaction naming the plan and the assignment; `plan_grants` has one row per
 * (assignment, period), so a restart, a second process or an overrunning job never grants a
 * period twice. Each grant is a credit grant (docs/api.md#credit-grants-expiry-and-priority):
 * priority 50 without expiry, or for `accumulate: false` priority 0 expiring at the end of its
 * period, the instant the next grant is due (docs/api.md#credits-that-do-not-roll-over). The
 * account's due expiries are booked before each grant, so what is left of the previous grant
 * expires first (`plan_credits_expired`, capped at `available`). Ending the assignment does not
 * move a grant's expiry.
 */
import type { Transaction } from "kysely";
import { externalIdOf } from "../accounts/lookup.ts";
import { checkLowBalance } from "../accounts/low-balance.ts";
import { iso } from "../dates.ts";
import type { AccountPlanRow, DB, PlanRow } from "../db/schema.ts";
import { type PostedEntry, postEntry } from "../ledger/core.ts";
import { bookDueExpiries } from "../ledger/expiry.ts";
import { DEFAULT_PRIORITY, PLAN_PRIORITY } from "../ledger/grants.ts";
import { fromMicros } from "../money.ts";
import { defineEvent } from "../webhooks/outbox.ts";
import { addIntervals, nextGrantAt } from "./schedule.ts";
import { planGrantedData } from "./schemas.ts";

/** The `plan.granted` event: a plan grant was booked. */
export const planGranted = defineEvent("plan.granted", planGrantedData);

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
  const done = await trx
    .selectFrom("plan_grants")
    .select("transaction_id")
    .where("account_plan_id", "=", ap.id)
    .where("period_index", "=", period)
    .executeTakeFirst();
  if (!done) await grantPeriod(trx, { ap, plan, period }, nowMs);
  const grantsMade = period + 1;
  const next = nextGrantAt(ap.anchor_at_ms, plan.interval, grantsMade, plan.occurrences);
  await trx
    .updateTable("account_plans")
    .set({ grants_made: grantsMade, next_grant_at_ms: next })
    .where("id", "=", ap.id)
    .execute();
  return { ...ap, grants_made: grantsMade, next_grant_at_ms: next };
}

/** One period of an assignment: `period` counts from 0. */
interface PlanPeriod {
  ap: AccountPlanRow;
  plan: PlanRow;
  period: number;
}

/**
 * Books the grant of one period not granted yet: the account's due expiries first, then the
 * credit and its credit grant, the `plan.granted` event, the low-balance check, and the
 * `plan_grants` row that makes it happen once.
 * @throws ApiError BALANCE_LIMIT_EXCEEDED when the grant would pass 9e9 credits
 */
async function grantPeriod(trx: Transaction<DB>, grant: PlanPeriod, nowMs: number): Promise<void> {
  const { ap, plan, period } = grant;
  const dueMs = nextGrantAt(ap.anchor_at_ms, plan.interval, period, plan.occurrences) ?? nowMs;
  const account = { projectId: ap.project_id, accountId: ap.account_id };
  const due = await bookDueExpiries(trx, account, nowMs);
  const rolls = plan.accumulate !== 0;
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
    grant: rolls
      ? { priority: DEFAULT_PRIORITY, expiresAtMs: null }
      : {
          priority: PLAN_PRIORITY,
          expiresAtMs: addIntervals(ap.anchor_at_ms, plan.interval, period + 1),
        },
  });
  await emitPlanGranted(trx, grant, { tx, dueMs, nowMs });
  const lowered = due.expiredMicros - plan.credits_micros;
  await checkLowBalance(
    trx,
    { id: ap.account_id, project_id: ap.project_id },
    { nowMs, loweredByMicros: lowered, transactionId: tx.id },
  );
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

/** Emits `plan.granted` for the grant `tx` of a period that began at `dueMs`. */
async function emitPlanGranted(
  trx: Transaction<DB>,
  { ap, plan }: PlanPeriod,
  { tx, dueMs, nowMs }: { tx: PostedEntry; dueMs: number; nowMs: number },
): Promise<void> {
  await planGranted.emit(trx, {
    projectId: ap.project_id,
    nowMs,
    data: async (make) =>
      make({
        accountId: ap.account_id,
        externalId: await externalIdOf(trx, ap.account_id),
        accountPlanId: ap.id,
        planId: plan.id,
        transactionId: tx.id,
        amount: fromMicros(tx.amount_micros),
        balance: fromMicros(tx.balance_after_micros),
        periodStart: iso(dueMs),
      }),
  });
}

/**
 * Makes an assignment inactive (replaced, cancelled or completed). Credits already granted
 * stay, with their expiry: a non-rolling grant still expires at the end of its period.
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
