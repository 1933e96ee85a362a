/**
 * The spend counters (docs/design.md#spend-limits), kept in the account's own row on both engines
 * (the columns: src/db/slot-columns.ts). Slot i (0–9) is the i-th distinct (period, time zone) of
 * the account's limits, in the order of its limits (`windowsAt` gives the windows in that order);
 * it holds the start of the window it counts (epoch ms) and what the account's spending debits
 * booked in it (micro-credits). A slot whose start is not a window's counts 0 for that window:
 * nothing resets a slot, the first debit of a new window overwrites it. SQLite's limited plain
 * debit adds to the slots in its balance move (`slotSets`, src/ledger/plain-move.ts),
 * PostgreSQL's in `ledger_plain_limited_debit`, so that a limited deduction writes no row but
 * the account's.
 */
import { type Expression, type ExpressionBuilder, type Kysely, sql } from "kysely";
import { type Prepared, prepared } from "../db/prepared.ts";
import type { DB } from "../db/schema.ts";
import {
  ALL_SLOT_COLUMNS,
  SLOTS,
  type SpendSlot,
  type SpendSlotColumns,
  spentColumn,
  startColumn,
} from "../db/slot-columns.ts";
import { fromMicros } from "../money.ts";
import { MAX_LIMITS, parseLimits, type SpendLimit } from "./limits.ts";
import { computeWindow, type Period } from "./windows.ts";

/** One counted window of an account: a (period, zone) and its window at an instant. */
export interface CountedWindow {
  period: Period;
  timeZone: string;
  startMs: number;
  endMs: number;
}

/** The key a window's sum is known by within an account. */
export function windowKey(w: Pick<CountedWindow, "period" | "timeZone" | "startMs">): string {
  return `${w.period} ${w.timeZone} ${w.startMs}`;
}

/**
 * An account may have MAX_LIMITS limits, each of a (period, zone) of its own: as many slots as
 * that. This compiles only while the two counts are the same number.
 */
const SLOTS_PER_ACCOUNT: typeof MAX_LIMITS = SLOTS.length;
if (SLOTS_PER_ACCOUNT !== MAX_LIMITS) throw new Error("spend limits: a slot per limit");

/**
 * The slot `i`.
 * @throws Error (a bug: an account has at most 10 limits) when there is no such slot
 */
export function slotAt(i: number): SpendSlot {
  const slot = SLOTS[i];
  if (slot === undefined) throw new Error(`spend limits: no counter slot ${i}`);
  return slot;
}

/** The distinct (period, zone) pairs of `limits`, in slot order. */
export function slotPairs(
  limits: readonly SpendLimit[],
): Pick<SpendLimit, "period" | "timeZone">[] {
  const out = new Map<string, Pick<SpendLimit, "period" | "timeZone">>();
  for (const { period, timeZone } of limits) {
    const key = `${period} ${timeZone}`;
    if (!out.has(key)) out.set(key, { period, timeZone });
  }
  return [...out.values()];
}

/** The slot counting limit `index` of `limits`: its (period, zone)'s place among the distinct. */
export function slotOfLimit(limits: readonly SpendLimit[], index: number): SpendSlot {
  const limit = limits[index];
  if (limit === undefined) throw new Error(`spend limits: no limit ${index}`);
  const pairs = slotPairs(limits);
  return slotAt(pairs.findIndex((p) => p.period === limit.period && p.timeZone === limit.timeZone));
}

/**
 * A slot's spend in the window starting at `start` (an expression of the account's row): its
 * sum when it counts that window, else 0.
 */
export function slotSpent(
  eb: ExpressionBuilder<DB, "accounts">,
  slot: SpendSlot,
  start: unknown,
): Expression<number> {
  return sql<number>`(CASE WHEN ${eb.ref(`accounts.${startColumn(slot)}`)} = ${start} THEN ${eb.ref(`accounts.${spentColumn(slot)}`)} ELSE 0 END)`;
}

/**
 * The SET of a debit of `micros` on the slots 0 … n−1 whose windows start at `starts(i)`: a
 * slot counting that window adds it, any other starts counting that window with it.
 */
export function slotSets(n: number, starts: (i: number) => unknown, micros: unknown) {
  const sets: [ReturnType<typeof startColumn | typeof spentColumn>, Expression<number>][] = [];
  for (let i = 0; i < n; i++) {
    const slot = slotAt(i);
    const spent = sql.ref(spentColumn(slot));
    const start = sql.ref(startColumn(slot));
    sets.push([
      spentColumn(slot),
      sql<number>`CASE WHEN ${start} = ${starts(i)} THEN ${spent} + ${micros} ELSE ${micros} END`,
    ]);
    sets.push([startColumn(slot), sql<number>`${starts(i)}`]);
  }
  return sets;
}

/** An account row's limits text and spend slots. */
export type SlotRow = SpendSlotColumns & { spend_limits: string | null };

/**
 * Window key (`windowKey`) → micro-credits, of the slots of an account row whose
 * limits text is `spend_limits`: each slot under its own window, so a reader that computed its
 * windows from another limits text finds only those that match.
 */
export function slotSums(row: SlotRow): Map<string, number> {
  const out = new Map<string, number>();
  slotPairs(parseLimits(row.spend_limits)).forEach((pair, i) => {
    const slot = slotAt(i);
    const start = row[startColumn(slot)];
    const spent = row[spentColumn(slot)];
    if (start === null || spent === null) return;
    out.set(windowKey({ ...pair, startMs: Number(start) }), Number(spent));
  });
  return out;
}

/**
 * Adds a spending debit of `micros` (> 0) to the account's `windows` (its limits' windows at
 * the debit's instant, in slot order), in the caller's unit.
 * @returns each window's sum after the debit (window key → micro-credits)
 */
export async function addSpentSlots(
  db: Kysely<DB>,
  accountId: string,
  windows: readonly Pick<CountedWindow, "startMs">[],
  micros: number,
): Promise<Map<string, number>> {
  const args: AddArgs = { accountId, micros };
  windows.forEach((w, i) => {
    args[`slot${i}Start`] = w.startMs;
  });
  const row = (await db.executeQuery(addToSlots(windows.length)(db, args))).rows[0];
  if (row === undefined) throw new Error(`spend limits: no account ${accountId} to count`);
  return slotSums(row);
}

/** `addSpentSlots`'s arguments: the account, the debit and each slot's window start. */
type AddArgs = { accountId: string; micros: number } & Record<`slot${number}Start`, number>;

/** The prepared adds to the first n slots, by n. */
const slotAdds = new Map<number, Prepared<AddArgs, SlotRow>>();

/** The add of a debit to the slots 0 … n−1 of an account (`slotSets`), prepared once per n. */
function addToSlots(n: number): Prepared<AddArgs, SlotRow> {
  let add = slotAdds.get(n);
  if (add === undefined) {
    add = prepared<AddArgs, SlotRow>((db, arg) => {
      let update = db.updateTable("accounts");
      for (const [column, value] of slotSets(n, (i) => arg(`slot${i}Start`), arg("micros"))) {
        update = update.set(column, value);
      }
      return update
        .where("id", "=", arg("accountId"))
        .returning(["spend_limits", ...ALL_SLOT_COLUMNS]);
    });
    slotAdds.set(n, add);
  }
  return add;
}

/**
 * Takes a reversed spending debit's `micros` out of each of the account's slots that counts its
 * window (`windows`: the account's limits' windows at the debit's instant, in slot order), in
 * the caller's unit; a slot counting another window is left as it is.
 */
export async function subtractSpentSlots(
  db: Kysely<DB>,
  accountId: string,
  windows: readonly Pick<CountedWindow, "startMs">[],
  micros: number,
): Promise<void> {
  let update = db.updateTable("accounts");
  windows.forEach((window, i) => {
    const slot = slotAt(i);
    const spent = sql.ref(spentColumn(slot));
    const start = sql.ref(startColumn(slot));
    update = update.set(
      spentColumn(slot),
      sql<number>`CASE WHEN ${start} = ${window.startMs} THEN ${spent} - ${micros} ELSE ${spent} END`,
    );
  });
  if (windows.length > 0) await update.where("id", "=", accountId).execute();
}

/** What the account's slots spent, as `slotSums` (an account without a row: nothing). */
export async function readSpentSlots(
  db: Kysely<DB>,
  accountId: string,
): Promise<Map<string, number>> {
  const row = await db
    .selectFrom("accounts")
    .select(["spend_limits", ...ALL_SLOT_COLUMNS])
    .where("id", "=", accountId)
    .executeTakeFirst();
  return row === undefined ? new Map() : slotSums(row);
}

/**
 * Sets the account's slots to `sums` (the windows of its new limits in slot order, each with
 * what it spent), and empties the others.
 */
export async function writeSlots(
  db: Kysely<DB>,
  accountId: string,
  sums: readonly { startMs: number; spentMicros: number }[],
): Promise<void> {
  let update = db.updateTable("accounts");
  SLOTS.forEach((slot, i) => {
    const sum = sums[i];
    update = update
      .set(startColumn(slot), sum === undefined ? null : sum.startMs)
      .set(spentColumn(slot), sum === undefined ? null : sum.spentMicros);
  });
  await update.where("id", "=", accountId).execute();
}

/**
 * `ledger verify`'s check of the slots: each slot of an account counts a window of the
 * (period, zone) of its place, which starts where the slot says, and holds what the account's
 * spending debits booked in it (`summed`); a slot past the account's distinct (period, zone)
 * pairs is empty.
 * @returns the problems found (empty when all hold)
 */
export async function slotProblems(
  db: Kysely<DB>,
  summed: (accountId: string, startMs: number, endMs: number) => Promise<number>,
): Promise<string[]> {
  const problems: string[] = [];
  const rows = await db
    .selectFrom("accounts")
    .select(["id", "spend_limits", ...ALL_SLOT_COLUMNS])
    .where((eb) =>
      eb.or([
        eb("spend_limits", "is not", null),
        ...SLOTS.map((slot) => eb(startColumn(slot), "is not", null)),
        ...SLOTS.map((slot) => eb(spentColumn(slot), "is not", null)),
      ]),
    )
    .execute();
  for (const row of rows) {
    const pairs = slotPairs(parseLimits(row.spend_limits));
    for (const slot of SLOTS) {
      const start = row[startColumn(slot)];
      const spent = row[spentColumn(slot)];
      const pair = pairs[slot];
      if (start === null && spent === null) continue;
      if (pair === undefined || start === null || spent === null) {
        problems.push(
          `account ${row.id}: spend counter slot ${slot} is not a window of its limits`,
        );
        continue;
      }
      const startMs = Number(start);
      const { period } = pair;
      const name = `account ${row.id}: spend window ${period} ${pair.timeZone} from ${new Date(startMs).toISOString()}`;
      const expected = computeWindow(startMs, period, pair.timeZone);
      if (expected.startMs !== startMs) {
        problems.push(`${name}: bounds are not that window's`);
        continue;
      }
      const debits = await summed(row.id, startMs, expected.endMs);
      if (debits !== Number(spent)) {
        problems.push(
          `${name}: spent ${fromMicros(Number(spent))} != debits ${fromMicros(debits)}`,
        );
      }
    }
  }
  return problems;
}
