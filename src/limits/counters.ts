/**
 * Per-window spend counters (docs/design.md#spend-limits): for each account with limits and each
 * (period, time zone, window) of its limits, the sum of its spending debits booked in that
 * window: deductions, manual debits and reservation confirms (by the entry's `created_at_ms`).
 * On PostgreSQL they are rows of `spend_windows`; on SQLite, slots of the account's own row
 * (slots.ts, migration 0017). Every spending debit on such an account adds its amount in its own
 * unit (`addSpent`), so a write never sums a window's ledger rows; setting an account's limits
 * rebuilds its counters from the ledger once (`rebuildCounters`), and `ledger verify` recomputes
 * every one (`counterProblems`).
 */
import type { ExpressionBuilder, Kysely, Transaction } from "kysely";
import { engineOf } from "../db/engine.ts";
import { prepared } from "../db/prepared.ts";
import type { DB, TransactionSource } from "../db/schema.ts";
import { fromMicros } from "../money.ts";
import type { SpendLimit } from "./limits.ts";
import { addSpentSlots, readSpentSlots, slotProblems, writeSlots } from "./slots.ts";
import { computeWindow, type Period, windowAt } from "./windows.ts";

/** The ledger sources of spending debits (docs/api.md#spend-limits); expiries are not. */
export const SPENDING_SOURCES = [
  "deduct",
  "manual",
  "reservation",
] as const satisfies readonly TransactionSource[];

/** One counted window of an account: a (period, zone) and its window at an instant. */
export interface CountedWindow {
  period: Period;
  timeZone: string;
  startMs: number;
  endMs: number;
}

/** The key of a counted window within an account. */
export function windowKey(w: Pick<CountedWindow, "period" | "timeZone" | "startMs">): string {
  return `${w.period} ${w.timeZone} ${w.startMs}`;
}

/** The distinct windows of `limits` (one per period and zone) that contain `atMs`. */
export function windowsAt(limits: readonly SpendLimit[], atMs: number): CountedWindow[] {
  const out = new Map<string, CountedWindow>();
  for (const { period, timeZone } of limits) {
    const { startMs, endMs } = windowAt(atMs, period, timeZone);
    const w = { period, timeZone, startMs, endMs };
    out.set(windowKey(w), w);
  }
  return [...out.values()];
}

type WindowArgs = Record<string, string | number>;

/** The arguments of `n` windows of one account: `account`, then `p<i>`, `z<i>`, `s<i>`, `e<i>`. */
function windowArgs(accountId: string, windows: readonly CountedWindow[], micros: number) {
  const args: WindowArgs = { account: accountId, micros };
  windows.forEach((w, i) => {
    args[`p${i}`] = w.period;
    args[`z${i}`] = w.timeZone;
    args[`s${i}`] = w.startMs;
    args[`e${i}`] = w.endMs;
  });
  return args;
}

type CounterRow = {
  period: string;
  time_zone: string;
  window_start_ms: number;
  spent_micros: number;
};

type WindowArg = (name: string) => unknown;

/** The row of the window `i` of the arguments, spending `micros`. */
function windowRow(arg: WindowArg, i: number) {
  return {
    account_id: arg("account") as string,
    period: arg(`p${i}`) as string,
    time_zone: arg(`z${i}`) as string,
    window_start_ms: arg(`s${i}`) as number,
    window_end_ms: arg(`e${i}`) as number,
    spent_micros: arg("micros") as number,
  };
}

/**
 * The row of `spend_windows` is the window `i` of the arguments: its whole key, so that an OR
 * of such terms looks each row up by the key (SQLite: a multi-index OR), whatever the number
 * of older windows the account has rows of.
 */
function windowIs(eb: ExpressionBuilder<DB, "spend_windows">, arg: WindowArg, i: number) {
  return eb.and([
    eb("account_id", "=", arg("account") as string),
    eb("period", "=", arg(`p${i}`) as string),
    eb("time_zone", "=", arg(`z${i}`) as string),
    eb("window_start_ms", "=", arg(`s${i}`) as number),
  ]);
}

/** The upsert adding `micros` to `n` windows of an account, returning each new sum. */
function addStatement(n: number) {
  return prepared<WindowArgs, CounterRow>((db, arg) =>
    db
      .insertInto("spend_windows")
      .values(Array.from({ length: n }, (_, i) => windowRow(arg, i)))
      .onConflict((oc) =>
        oc.columns(["account_id", "period", "time_zone", "window_start_ms"]).doUpdateSet((eb) => ({
          spent_micros: eb("spend_windows.spent_micros", "+", eb.ref("excluded.spent_micros")),
        })),
      )
      .returning(["period", "time_zone", "window_start_ms", "spent_micros"]),
  );
}

/** The read of `n` windows of an account. */
function readStatement(n: number) {
  return prepared<WindowArgs, CounterRow>((db, arg) =>
    db
      .selectFrom("spend_windows")
      .select(["period", "time_zone", "window_start_ms", "spent_micros"])
      .where((eb) => eb.or(Array.from({ length: n }, (_, i) => windowIs(eb, arg, i)))),
  );
}

const addStatements = new Map<number, ReturnType<typeof addStatement>>();
const readStatements = new Map<number, ReturnType<typeof readStatement>>();

/** The statement of `n` windows, prepared once per count. */
function statementFor<S>(cache: Map<number, S>, n: number, make: (n: number) => S): S {
  let found = cache.get(n);
  if (found === undefined) {
    found = make(n);
    cache.set(n, found);
  }
  return found;
}

/** Window key → micro-credits, from counter rows (a window without a row spent 0). */
function sums(rows: readonly CounterRow[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const row of rows) {
    const key = windowKey({
      period: row.period as Period,
      timeZone: row.time_zone,
      startMs: Number(row.window_start_ms),
    });
    out.set(key, Number(row.spent_micros));
  }
  return out;
}

/**
 * Adds a spending debit of `micros` (> 0) to the account's `windows`, in the caller's unit.
 * @returns each window's sum after the debit (window key → micro-credits)
 */
export async function addSpent(
  trx: Transaction<DB>,
  accountId: string,
  windows: readonly CountedWindow[],
  micros: number,
): Promise<Map<string, number>> {
  if (engineOf(trx) === "sqlite") return addSpentSlots(trx, accountId, windows, micros, windowKey);
  const statement = statementFor(addStatements, windows.length, addStatement);
  const { rows } = await trx.executeQuery(statement(trx, windowArgs(accountId, windows, micros)));
  return sums(rows);
}

/**
 * What the account's `windows` spent so far (window key → micro-credits). On SQLite, what its
 * slots count, each under its own window's key: a window of `windows` without one spent 0.
 */
export async function readSpent(
  db: Kysely<DB>,
  accountId: string,
  windows: readonly CountedWindow[],
): Promise<Map<string, number>> {
  if (windows.length === 0) return new Map();
  if (engineOf(db) === "sqlite") return readSpentSlots(db, accountId, windowKey);
  const statement = statementFor(readStatements, windows.length, readStatement);
  const { rows } = await db.executeQuery(statement(db, windowArgs(accountId, windows, 0)));
  return sums(rows);
}

/** The sum of an account's spending debits booked in [startMs, endMs), micro-credits. */
export async function spentInRows(
  db: Kysely<DB>,
  accountId: string,
  startMs: number,
  endMs: number,
): Promise<number> {
  const row = await db
    .selectFrom("transactions")
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>("amount_micros"), eb.lit(0)).as("spent"))
    .where("account_id", "=", accountId)
    .where("type", "=", "debit")
    .where("source", "in", SPENDING_SOURCES)
    .where("created_at_ms", ">=", startMs)
    .where("created_at_ms", "<", endMs)
    .executeTakeFirst();
  return Number(row?.spent ?? 0);
}

/**
 * Replaces the account's counters by exact ones for `limits` at `nowMs`: deletes every row of
 * the account and writes the current window of each (period, zone) summed from the ledger (a
 * scan at update time, not on the hot path). Runs in the unit that sets the limits, under the
 * account's lock (PostgreSQL), so no debit of the account interleaves.
 */
export async function rebuildCounters(
  trx: Transaction<DB>,
  accountId: string,
  limits: readonly SpendLimit[],
  nowMs: number,
): Promise<void> {
  if (engineOf(trx) === "sqlite") {
    const sums = [];
    for (const w of windowsAt(limits, nowMs)) {
      sums.push({
        startMs: w.startMs,
        spentMicros: await spentInRows(trx, accountId, w.startMs, w.endMs),
      });
    }
    await writeSlots(trx, accountId, sums);
    return;
  }
  await trx.deleteFrom("spend_windows").where("account_id", "=", accountId).execute();
  for (const w of windowsAt(limits, nowMs)) {
    const spent = await spentInRows(trx, accountId, w.startMs, w.endMs);
    await trx
      .insertInto("spend_windows")
      .values({
        account_id: accountId,
        period: w.period,
        time_zone: w.timeZone,
        window_start_ms: w.startMs,
        window_end_ms: w.endMs,
        spent_micros: spent,
      })
      .execute();
  }
}

/**
 * `ledger verify`'s check of the counters (on SQLite, slots.ts `slotProblems`): every
 * `spend_windows` row equals the sum of its
 * account's spending debits in [window_start_ms, window_end_ms), and its bounds are the window
 * of its period and zone that starts there.
 * @returns the problems found (empty when all hold)
 */
export async function counterProblems(db: Kysely<DB>): Promise<string[]> {
  if (engineOf(db) === "sqlite") {
    return slotProblems(db, (accountId, startMs, endMs) =>
      spentInRows(db, accountId, startMs, endMs),
    );
  }
  const problems: string[] = [];
  const rows = await db.selectFrom("spend_windows").selectAll().execute();
  for (const row of rows) {
    const start = Number(row.window_start_ms);
    const end = Number(row.window_end_ms);
    const name = `account ${row.account_id}: spend window ${row.period} ${row.time_zone} from ${new Date(start).toISOString()}`;
    const expected = computeWindow(start, row.period as Period, row.time_zone);
    if (expected.startMs !== start || expected.endMs !== end) {
      problems.push(`${name}: bounds are not that window's`);
    }
    const summed = await spentInRows(db, row.account_id, start, end);
    if (summed !== Number(row.spent_micros)) {
      problems.push(
        `${name}: spent ${fromMicros(Number(row.spent_micros))} != debits ${fromMicros(summed)}`,
      );
    }
  }
  return problems;
}
