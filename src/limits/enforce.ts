/**
 * Spend limits on the general path of every write that spends (docs/api.md#spend-limits,
 * docs/design.md#spend-limits): deductions, manual debits and confirms (`limitDebit`, from
 * ledger/service.ts `generalDebit`) and reservations (`limitHold`). The plain debits make only
 * writes that these would neither refuse nor report reached, by the same rule (`plainLimit` of
 * src/admission/rule.ts: src/limits/plain.ts for an account's own limits,
 * src/ledger/plain-member.ts and `levelsPlain` below for the levels of a tree); every other write
 * that spends is judged here (judge.ts). It runs inside the write's own unit, after the
 * spender's path was found (and on PostgreSQL locked): the counters and the holds it reads are
 * exact, and a refusal rolls the whole unit back.
 *
 * A write is judged at every level of its spender's path (docs/api.md#pools-and-members): each
 * level's limits count what the whole subtree below it spends and holds. Of the limits that
 * refuse, at any level, the answer names the one whose window ends last, and among equals the
 * one nearest the spender.
 */
import type { Transaction } from "kysely";
import { numbers, plainLimit } from "../admission/rule.ts";
import type { AccountRow, DB } from "../db/schema.ts";
import { addSpent, readSpent, windowsAt } from "./counters.ts";
import {
  type LimitState,
  limitStates,
  reachedLimits,
  refusingLimit,
  spendLimitError,
  termsOf,
} from "./judge.ts";
import { parseLimits } from "./limits.ts";
import { type ReachedBy, sendReached } from "./reached.ts";

/** An account whose limits a write is judged by, as its unit found it. */
export type LimitedAccount = Pick<AccountRow, "id" | "project_id" | "external_id" | "spend_limits">;

/** One level of a spender's path: the account and what it and the accounts below it hold. */
export interface SpendLevel {
  account: LimitedAccount;
  /** Pending, unexpired holds at this level and below, before the write (micro-credits). */
  heldMicros: number;
}

/** A spending debit, as booked in the unit. */
export interface DebitSpend {
  /** The debit's amount, micro-credits (booked as spent in its window). */
  amountMicros: number;
  /** What it adds to spend: its amount beyond the hold it settles (≤ 0 never refuses). */
  neededMicros: number;
  /** Its entry's `created_at_ms`, which places it in its windows. */
  atMs: number;
  transactionId: string;
  /** The time of the write (for `Retry-After`). */
  nowMs: number;
  /** The member that spent, when its pool books the debit; else null. */
  onBehalfOf: string | null;
  /** The spender is in a tree: a refusal names the refusing level. */
  inTree: boolean;
}

/** A level's limit states, with the level. */
interface LevelStates {
  level: SpendLevel;
  states: LimitState[];
}

/**
 * Refuses the write when a hard limit at some level would be passed by `neededMicros`: the
 * refusing limit whose window ends last, the level nearest the spender among equals.
 * @throws ApiError SPEND_LIMIT_EXCEEDED (with `Retry-After` but for a `total` limit; for a
 *   spender in a tree, `details` name the level)
 */
function refuse(
  judged: readonly LevelStates[],
  neededMicros: number,
  nowMs: number,
  tree: boolean,
) {
  let refusing: { at: LevelStates; state: LimitState } | undefined;
  for (const at of judged) {
    const state = refusingLimit(at.states, neededMicros);
    if (state === undefined) continue;
    if (refusing === undefined || state.window.endMs > refusing.state.window.endMs) {
      refusing = { at, state };
    }
  }
  if (refusing === undefined) return;
  const level = tree ? refusing.at.level.account : undefined;
  throw spendLimitError(refusing.state, neededMicros, nowMs, level);
}

/** Sends `spend_limit.reached` for each level's limits the write takes to their amount. */
async function sendEachReached(
  trx: Transaction<DB>,
  judged: readonly LevelStates[],
  neededMicros: number,
  by: ReachedBy,
): Promise<void> {
  for (const { level, states } of judged) {
    const reached = reachedLimits(states, neededMicros);
    if (reached.length > 0) await sendReached(trx, level.account, reached, by);
  }
}

/**
 * Books a spending debit in the window counters of each level with limits (`levels`: the
 * spender's path, spender first) and applies their limits: call after its entry is posted in
 * the same unit. Does nothing at a level without limits.
 * @throws ApiError SPEND_LIMIT_EXCEEDED when a hard limit refuses what the debit adds to spend;
 *   the unit then rolls back
 */
export async function limitDebit(
  trx: Transaction<DB>,
  levels: readonly SpendLevel[],
  debit: DebitSpend,
): Promise<void> {
  if (debit.amountMicros <= 0) return;
  const judged: LevelStates[] = [];
  for (const level of levels) {
    const limits = parseLimits(level.account.spend_limits);
    if (limits.length === 0) continue;
    const windows = windowsAt(limits, debit.atMs);
    const after = await addSpent(trx, level.account.id, windows, debit.amountMicros);
    const before = new Map([...after].map(([key, sum]) => [key, sum - debit.amountMicros]));
    judged.push({ level, states: limitStates(limits, debit.atMs, before, level.heldMicros) });
  }
  if (judged.length === 0) return;
  refuse(judged, debit.neededMicros, debit.nowMs, debit.inTree);
  await sendEachReached(trx, judged, debit.neededMicros, {
    atMs: debit.atMs,
    spentDeltaMicros: debit.amountMicros,
    heldDeltaMicros: debit.neededMicros - debit.amountMicros,
    transactionId: debit.transactionId,
    reservationId: null,
    onBehalfOf: debit.onBehalfOf,
  });
}

/**
 * Applies the limits of each level (`levels`: the spender's path, spender first) to a
 * reservation of `amountMicros` made at `nowMs`. Does nothing at a level without limits.
 * @throws ApiError SPEND_LIMIT_EXCEEDED (with `Retry-After` but for a `total` limit)
 */
export async function limitHold(
  trx: Transaction<DB>,
  levels: readonly SpendLevel[],
  hold: {
    id: string;
    amountMicros: number;
    nowMs: number;
    onBehalfOf: string | null;
    inTree: boolean;
  },
): Promise<void> {
  const judged: LevelStates[] = [];
  for (const level of levels) {
    const limits = parseLimits(level.account.spend_limits);
    if (limits.length === 0) continue;
    const spent = await readSpent(trx, level.account.id);
    judged.push({ level, states: limitStates(limits, hold.nowMs, spent, level.heldMicros) });
  }
  if (judged.length === 0) return;
  refuse(judged, hold.amountMicros, hold.nowMs, hold.inTree);
  await sendEachReached(trx, judged, hold.amountMicros, {
    atMs: hold.nowMs,
    spentDeltaMicros: 0,
    heldDeltaMicros: hold.amountMicros,
    transactionId: null,
    reservationId: hold.id,
    onBehalfOf: hold.onBehalfOf,
  });
}

/**
 * Whether a spending debit adding `neededMicros` (micro-credits) at `atMs` lies in the plain
 * region of every limit of every level (`levels`, each with what its window counters hold:
 * `spent`, window key → micro-credits, as slots.ts `slotSums` reads them): the admission rule's
 * `plainLimit` on numbers (src/admission/rule.ts), so that `limitDebit` would refuse nothing
 * and send no `spend_limit.reached`. SQLite's plain member debit decides with it before it
 * writes (src/ledger/plain-member.ts).
 */
export function levelsPlain(
  levels: readonly (SpendLevel & { spent: ReadonlyMap<string, number> })[],
  atMs: number,
  neededMicros: number,
): boolean {
  for (const level of levels) {
    const limits = parseLimits(level.account.spend_limits);
    const states = limitStates(limits, atMs, level.spent, level.heldMicros);
    for (const state of states) {
      if (!plainLimit(numbers, termsOf(state, neededMicros), state.limit.soft)) return false;
    }
  }
  return true;
}
