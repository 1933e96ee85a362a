/**
 * Spend limits on the general path of every write that spends (docs/api.md#spend-limits,
 * docs/design.md#spend-limits): deductions, manual debits and confirms (`limitDebit`, from
 * ledger/service.ts `generalDebit`) and reservations (`limitHold`). Accounts with limits never
 * take a plain path (accounts/plain.ts, `ledger_plain_account`, sql/postgres/functions/), so this is the
 * one place the rule (judge.ts) is applied. It runs inside the write's own unit, after the
 * account was found (and on PostgreSQL locked): the counters and the holds it reads are exact,
 * and a refusal rolls the whole unit back.
 */
import type { Transaction } from "kysely";
import type { AccountRow, DB } from "../db/schema.ts";
import { addSpent, readSpent, windowsAt } from "./counters.ts";
import { limitStates, reachedLimits, refusingLimit, spendLimitError } from "./judge.ts";
import { parseLimits } from "./limits.ts";
import { sendReached } from "./reached.ts";

/** The account a write spends on, as its unit found it. */
export type LimitedAccount = Pick<AccountRow, "id" | "project_id" | "external_id" | "spend_limits">;

/** A spending debit, as booked in the unit. */
export interface DebitSpend {
  /** The debit's amount, micro-credits (booked as spent in its window). */
  amountMicros: number;
  /** What it adds to spend: its amount beyond the hold it settles (≤ 0 never refuses). */
  neededMicros: number;
  /** The account's holds before the write (pending, unexpired), micro-credits. */
  heldMicros: number;
  /** Its entry's `created_at_ms`, which places it in its windows. */
  atMs: number;
  transactionId: string;
  /** The time of the write (for `Retry-After`). */
  nowMs: number;
}

/**
 * Books a spending debit in the account's window counters and applies its limits: call after
 * its entry is posted in the same unit. Does nothing for an account without limits.
 * @throws ApiError SPEND_LIMIT_EXCEEDED (with `Retry-After`) when a hard limit refuses what the
 *   debit adds to spend; the unit then rolls back
 */
export async function limitDebit(
  trx: Transaction<DB>,
  account: LimitedAccount,
  debit: DebitSpend,
): Promise<void> {
  const limits = parseLimits(account.spend_limits);
  if (limits.length === 0 || debit.amountMicros <= 0) return;
  const windows = windowsAt(limits, debit.atMs);
  const after = await addSpent(trx, account.id, windows, debit.amountMicros);
  const before = new Map([...after].map(([key, sum]) => [key, sum - debit.amountMicros]));
  const states = limitStates(limits, debit.atMs, before, debit.heldMicros);
  const refusing = refusingLimit(states, debit.neededMicros);
  if (refusing) throw spendLimitError(refusing, debit.neededMicros, debit.nowMs);
  const reached = reachedLimits(states, debit.neededMicros);
  if (reached.length === 0) return;
  await sendReached(trx, account, reached, {
    atMs: debit.atMs,
    spentDeltaMicros: debit.amountMicros,
    heldDeltaMicros: debit.neededMicros - debit.amountMicros,
    transactionId: debit.transactionId,
    reservationId: null,
  });
}

/**
 * Applies the account's limits to a reservation of `amountMicros` made at `nowMs`, with
 * `heldMicros` held before it. Does nothing for an account without limits.
 * @throws ApiError SPEND_LIMIT_EXCEEDED (with `Retry-After`)
 */
export async function limitHold(
  trx: Transaction<DB>,
  account: LimitedAccount,
  hold: { id: string; amountMicros: number; heldMicros: number; nowMs: number },
): Promise<void> {
  const limits = parseLimits(account.spend_limits);
  if (limits.length === 0) return;
  const spent = await readSpent(trx, account.id);
  const states = limitStates(limits, hold.nowMs, spent, hold.heldMicros);
  const refusing = refusingLimit(states, hold.amountMicros);
  if (refusing) throw spendLimitError(refusing, hold.amountMicros, hold.nowMs);
  const reached = reachedLimits(states, hold.amountMicros);
  if (reached.length === 0) return;
  await sendReached(trx, account, reached, {
    atMs: hold.nowMs,
    spentDeltaMicros: 0,
    heldDeltaMicros: hold.amountMicros,
    transactionId: null,
    reservationId: hold.id,
  });
}
