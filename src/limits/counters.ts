/**
 * Per-window spend counters (docs/design.md#spend-limits): for each account with limits and each
 * (period, time zone) of its limits, the sum of its spending debits booked in its current
 * window: deductions, manual debits and reservation confirms (by the entry's `created_at_ms`),
 * kept in slots of the account's own row (slots.ts). Every spending debit on such an account
 * adds its amount in its own unit (`addSpent`), so a write never sums a window's
 * ledger rows; setting an account's limits rebuilds its counters from the ledger once
 * (`rebuildCounters`), and `ledger verify` recomputes every one (`counterProblems`).
 */
import { type Expression, type Kysely, sql, type Transaction } from "kysely";
import type { DB, TransactionSource } from "../db/schema.ts";
import { parseLimits, type SpendLimit } from "./limits.ts";
import {
  addSpentSlots,
  type CountedWindow,
  readSpentSlots,
  slotPairs,
  slotProblems,
  subtractSpentSlots,
  writeSlots,
} from "./slots.ts";
import { windowAt } from "./windows.ts";

export { type CountedWindow, windowKey } from "./slots.ts";

/** The ledger sources of spending debits (docs/api.md#spend-limits); expiries are not. */
export const SPENDING_SOURCES = [
  "deduct",
  "manual",
  "reservation",
] as const satisfies readonly TransactionSource[];

/**
 * The distinct windows of `limits` (one per period and zone, in slot order: slots.ts
 * `slotPairs`) that contain `atMs`.
 */
export function windowsAt(limits: readonly SpendLimit[], atMs: number): CountedWindow[] {
  return slotPairs(limits).map(({ period, timeZone }) => ({
    period,
    timeZone,
    ...windowAt(atMs, period, timeZone),
  }));
}

/**
 * Adds a spending debit of `micros` (> 0) to the account's `windows` (`windowsAt` of its limits
 * at the debit's instant), in the caller's unit.
 * @returns each window's sum after the debit (window key → micro-credits)
 */
export function addSpent(
  trx: Transaction<DB>,
  accountId: string,
  windows: readonly CountedWindow[],
  micros: number,
): Promise<Map<string, number>> {
  return addSpentSlots(trx, accountId, windows, micros);
}

/**
 * Takes a reversed spending debit's `micros` out of the account's counters (docs/api.md#reversals):
 * each slot that still counts the window the debit was booked in (at `bookedAtMs`) loses it; a
 * slot counting a later window keeps its sum. In the caller's unit, which holds the account.
 */
export async function unspend(
  trx: Transaction<DB>,
  account: { id: string; spend_limits: string | null },
  bookedAtMs: number,
  micros: number,
): Promise<void> {
  const limits = parseLimits(account.spend_limits);
  if (limits.length === 0 || micros <= 0) return;
  await subtractSpentSlots(trx, account.id, windowsAt(limits, bookedAtMs), micros);
}

/**
 * What the account's windows spent so far (window key → micro-credits): what its slots count,
 * each under its own window's key, so a window the caller computed without one spent 0.
 */
export function readSpent(db: Kysely<DB>, accountId: string): Promise<Map<string, number>> {
  return readSpentSlots(db, accountId);
}

/**
 * What an account spent in [startMs, endMs) (micro-credits), less what reversals gave back
 * (docs/api.md#reversals: a reversal counts where its original did): its own spending debits
 * (booked on itself, or on its pool on its behalf) and those of the accounts below it when they
 * were booked (`spend_levels`, docs/api.md#pools-and-members).
 */
export async function spentInRows(
  db: Kysely<DB>,
  accountId: string,
  startMs: number,
  endMs: number,
): Promise<number> {
  return (
    (await ownSpentInRows(db, accountId, startMs, endMs)) +
    (await belowSpentInRows(db, accountId, startMs, endMs))
  );
}

/**
 * `spent`: the sum of debits' amounts (`amount`) less what their reversals gave back (the
 * reversals naming `debitId`, found by the partial index transactions_reversal_of).
 */
function netSpent(amount: Expression<number>, debitId: Expression<string>) {
  const back = sql<number>`(SELECT coalesce(sum(r.amount_micros), 0) FROM transactions r WHERE r.reversal_of = ${debitId})`;
  return sql<number>`coalesce(sum(${amount} - ${back}), 0)`.as("spent");
}

/** An account's own spending debits in the window, net of their reversals. */
async function ownSpentInRows(db: Kysely<DB>, accountId: string, startMs: number, endMs: number) {
  const spent = (own: "account_id" | "on_behalf_of") =>
    db
      .selectFrom("transactions as t")
      .select((eb) => netSpent(eb.ref("t.amount_micros"), eb.ref("t.id")))
      .where(`t.${own}`, "=", accountId)
      .$if(own === "account_id", (q) => q.where("t.on_behalf_of", "is", null))
      .where("t.type", "=", "debit")
      .where("t.source", "in", SPENDING_SOURCES)
      .where("t.created_at_ms", ">=", startMs)
      .where("t.created_at_ms", "<", endMs)
      .executeTakeFirst();
  const booked = await spent("account_id");
  const onBehalf = await spent("on_behalf_of");
  return Number(booked?.spent ?? 0) + Number(onBehalf?.spent ?? 0);
}

/** What the accounts below an account spent in the window while below it, net of reversals. */
async function belowSpentInRows(db: Kysely<DB>, accountId: string, startMs: number, endMs: number) {
  const row = await db
    .selectFrom("spend_levels as l")
    .select((eb) => netSpent(eb.ref("l.amount_micros"), eb.ref("l.transaction_id")))
    .where("l.account_id", "=", accountId)
    .where("l.created_at_ms", ">=", startMs)
    .where("l.created_at_ms", "<", endMs)
    .executeTakeFirst();
  return Number(row?.spent ?? 0);
}

/**
 * Replaces the account's counters by exact ones for `limits` at `nowMs`: each slot the current
 * window of its (period, zone) summed from the ledger (a scan at update time, not on the hot
 * path), the others emptied. Runs in the unit that sets the limits, under the account's lock
 * (PostgreSQL), so no debit of the account interleaves.
 */
export async function rebuildCounters(
  trx: Transaction<DB>,
  accountId: string,
  limits: readonly SpendLimit[],
  nowMs: number,
): Promise<void> {
  const sums = [];
  for (const w of windowsAt(limits, nowMs)) {
    const spentMicros = await spentInRows(trx, accountId, w.startMs, w.endMs);
    sums.push({ startMs: w.startMs, spentMicros });
  }
  await writeSlots(trx, accountId, sums);
}

/**
 * `ledger verify`'s check of the counters (slots.ts `slotProblems`): each slot holds the sum of
 * its account's spending debits in its window, and that window is one of its (period, zone).
 * @returns the problems found (empty when all hold)
 */
export function counterProblems(db: Kysely<DB>): Promise<string[]> {
  return slotProblems(db, (accountId, startMs, endMs) =>
    spentInRows(db, accountId, startMs, endMs),
  );
}
