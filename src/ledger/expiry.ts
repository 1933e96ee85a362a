/**
 * Expiry of credit grants (docs/api.md#expiry-of-grants). Once a grant's expiresAt has passed,
 * what is left of it is removed by a `debit` with `metadata.reason = "credits_expired"`
 * (`"plan_credits_expired"` for a plan grant) and `metadata.grantId`, never of 0:
 *
 * - every removal is capped at `available`, so it never takes credits that reservations hold;
 *   at the first one the grant is marked booked;
 * - what stays (only ever while `available` is 0 after the removal) is removed by every later
 *   unit as far as `available` then allows, whatever else is held: holds are covered by
 *   unexpired credits first. So a leftover is spent only by the confirms of the holds that
 *   cover it (the spending order puts it first, docs/api.md#spending-order), never by a new
 *   deduction, debit or reservation. A confirm or cancel removes what it leaves uncovered in
 *   its own unit; a hold that simply runs out is cleaned up by the next write or the job.
 *
 * `bookDueExpiries` runs first in every unit that moves an account's balance or holds its
 * credits (add, deduct, manual transaction, reservation create/confirm/cancel, plan grant), so
 * expired credits are never spent or reserved; the expiry job (src/jobs/expire-grants.ts) books
 * the others. A unit that fails rolls its expiries back with it, and the job books them.
 */
import { sql, type Transaction } from "kysely";
import { externalIdOf, reservedMicros } from "../accounts/lookup.ts";
import { prepared } from "../db/prepared.ts";
import type { DB, TransactionRow } from "../db/schema.ts";
import { fromMicros } from "../money.ts";
import { defineEvent } from "../webhooks/outbox.ts";
import { postEntry } from "./core.ts";
import {
  grantsWithRemaining,
  readSpendable,
  SPEND_COLUMNS,
  type Spendable,
  type SpendableGrant,
} from "./grants.ts";
import { creditsExpiredData } from "./schemas.ts";

/** The `credits.expired` event: an expiry debit was booked. */
export const creditsExpired = defineEvent("credits.expired", creditsExpiredData);

/** The account a unit books expiries for, and what the unit already knows of it. */
export interface ExpiryAccount {
  projectId: string;
  accountId: string;
  /** The balance as read in this unit, micro-credits (read when missing and needed). */
  balanceMicros?: number | undefined;
  /** Micro-credits held by pending, unexpired holds at `nowMs` (read when missing and needed). */
  reservedMicros?: number | undefined;
  /**
   * False when the account lookup found no grant expiry due and none held (`grantWork` of
   * `findAccountWithBalance`): then there is nothing to book and nothing is read.
   */
  grantWork?: boolean | undefined;
}

/** The ExpiryAccount of an account read with its balances (`findAccountWithBalance`). */
export function expiryAccount(found: {
  account: { id: string; project_id: string };
  balance: number;
  reserved: number;
  grantWork?: boolean | undefined;
}): ExpiryAccount {
  return {
    projectId: found.account.project_id,
    accountId: found.account.id,
    balanceMicros: found.balance,
    reservedMicros: found.reserved,
    grantWork: found.grantWork,
  };
}

export interface DueExpiries {
  /** Micro-credits removed by the expiries booked now. */
  expiredMicros: number;
  /** The expiry transactions booked now, in order. */
  expiries: TransactionRow[];
  /**
   * The account's spendable grants after them, for the debit that follows in the unit
   * (undefined when the lookup already showed nothing due or held, and nothing was read: the
   * debit then draws in plain spending order, grants.ts `drawDown`).
   */
  spendable: Spendable | undefined;
}

/**
 * Books the account's due expiries at `nowMs`: first what is left of the grants booked earlier,
 * then each grant past expiresAt whose expiry is not booked yet (earliest expiry first, then
 * ledger order), each capped at what is still available (docs/api.md#expiry-of-grants). The common case (nothing due) costs one
 * indexed query, whose result the caller's debit reuses, or none when the account lookup
 * already showed nothing due or held (`grantWork` false). The unit must hold the account (its
 * row lock on PostgreSQL: callers find it with `findAccount`/`findAccountWithBalance` first).
 * @returns what was removed, the expiry transactions, and the spendable grants after them
 */
export async function bookDueExpiries(
  trx: Transaction<DB>,
  account: ExpiryAccount,
  nowMs: number,
): Promise<DueExpiries> {
  if (account.grantWork === false) return { expiredMicros: 0, expiries: [], spendable: undefined };
  const spendable = await readSpendable(trx, account.accountId);
  const due = spendable.nextDueMs !== null && spendable.nextDueMs <= nowMs;
  const held = spendable.grants[0]?.expiry_booked === 1;
  if (!due && !held) return { expiredMicros: 0, expiries: [], spendable };

  const balanceMicros = account.balanceMicros ?? (await balanceOf(trx, account.accountId));
  const heldMicros =
    account.reservedMicros ?? (await reservedMicros(trx, account.accountId, nowMs));
  let availableMicros = balanceMicros - heldMicros;
  const expiries: TransactionRow[] = [];
  const book = async (grant: SpendableGrant, amountMicros: number) => {
    const tx = await bookGrantExpiry(
      trx,
      account.projectId,
      account.accountId,
      grant,
      amountMicros,
      nowMs,
    );
    if (tx) expiries.push(tx);
    availableMicros -= amountMicros;
  };

  // What stays of booked grants, as far as `available` allows: holds are covered by the
  // account's other credits first, so a leftover survives only where nothing else covers them.
  for (const grant of await grantsWhere(trx, account.accountId, "booked", nowMs)) {
    if (availableMicros <= 0) break;
    await book(grant, Math.min(grant.remaining_micros, availableMicros));
  }
  // Grants past expiresAt: what is available of each goes; the rest is held, and stays.
  for (const grant of await grantsWhere(trx, account.accountId, "due", nowMs)) {
    await book(grant, Math.min(grant.remaining_micros, Math.max(0, availableMicros)));
  }
  const expiredMicros = expiries.reduce((sum, tx) => sum + tx.amount_micros, 0);
  return {
    expiredMicros,
    expiries,
    spendable:
      expiredMicros === 0 && !due ? spendable : await readSpendable(trx, account.accountId),
  };
}

/**
 * Books the expiry of `amountMicros` of one grant, with its `credits.expired` event: a
 * `debit` with `metadata.reason` `credits_expired` (`plan_credits_expired`, with `planId` and
 * `accountPlanId`, for a plan grant) and `metadata.grantId`, taken from that grant; and marks
 * the grant's expiry booked. An amount of 0 books nothing (the grant is still marked).
 * @returns the expiry transaction, or null when `amountMicros` is 0
 * @throws Error (a broken ledger invariant) when the grant or the balance holds less
 */
export async function bookGrantExpiry(
  trx: Transaction<DB>,
  projectId: string,
  accountId: string,
  grant: SpendableGrant,
  amountMicros: number,
  nowMs: number,
): Promise<TransactionRow | null> {
  if (grant.expiry_booked !== 1) {
    await trx.executeQuery(markBooked(trx, { seq: grant.seq }));
  }
  if (amountMicros <= 0) return null;
  const plan =
    grant.account_plan_id === null ? undefined : await planOf(trx, grant.account_plan_id);
  const metadata: Record<string, unknown> = plan
    ? {
        reason: "plan_credits_expired",
        grantId: grant.id,
        planId: plan.plan_id,
        accountPlanId: plan.id,
      }
    : { reason: "credits_expired", grantId: grant.id };
  const { grantId: _, ...tx } = await postEntry(trx, {
    projectId,
    accountId,
    type: "debit",
    amountMicros,
    description: plan ? "Unused plan credits expired" : "Credits expired",
    metadata,
    source: plan ? "plan_expiry" : "grant_expiry",
    accountPlanId: plan?.id ?? null,
    nowMs,
    fromGrantSeq: grant.seq,
  });
  await creditsExpired.emit(trx, {
    projectId,
    nowMs,
    data: async (make) =>
      make({
        accountId,
        externalId: await externalIdOf(trx, accountId),
        grantId: grant.id,
        transactionId: tx.id,
        amount: fromMicros(tx.amount_micros),
        balance: fromMicros(tx.balance_after_micros),
      }),
  });
  return tx;
}

const markBooked = prepared<{ seq: number }, unknown>((db, arg) =>
  db.updateTable("credit_grants").set({ expiry_booked: 1 }).where("seq", "=", arg("seq")),
);

async function planOf(trx: Transaction<DB>, accountPlanId: string) {
  return trx
    .selectFrom("account_plans")
    .select(["id", "plan_id"])
    .where("id", "=", accountPlanId)
    .executeTakeFirst();
}

async function balanceOf(trx: Transaction<DB>, accountId: string): Promise<number> {
  const row = await trx
    .selectFrom("accounts")
    .select("balance_micros")
    .where("id", "=", accountId)
    .executeTakeFirstOrThrow();
  return row.balance_micros;
}

/**
 * The account's grants with something left whose expiry is booked (`booked`), or past
 * expiresAt at `nowMs` and not booked yet (`due`); earliest expiry first, then ledger order.
 * Each reads a partial index (`credit_grants_held`, `credit_grants_account_due`).
 */
async function grantsWhere(
  trx: Transaction<DB>,
  accountId: string,
  which: "booked" | "due",
  nowMs: number,
): Promise<SpendableGrant[]> {
  let query = grantsWithRemaining(trx)
    .select(SPEND_COLUMNS)
    .where("g.account_id", "=", accountId)
    .where("g.exhausted", "=", sql.lit(0));
  query =
    which === "booked"
      ? query.where("g.expiry_booked", "=", sql.lit(1))
      : query
          .where("g.expiry_booked", "=", sql.lit(0))
          .where("g.expires_at_ms", "is not", null)
          .where("g.expires_at_ms", "<=", nowMs);
  return query.orderBy("g.expires_at_ms").orderBy("g.seq").execute();
}
