/**
 * The spend counter slots of an account row (docs/design.md#spend-limits): the one place that
 * names their columns. Slot i (0–9) is the i-th distinct (period, time zone) of the account's
 * limits (src/limits/slots.ts gives that order and the counting); its start column holds the
 * start of the window it counts (epoch ms), its spent column what the account's spending debits
 * booked in it (micro-credits); both null while it counts nothing. PostgreSQL's plain functions
 * (sql/postgres/functions/) read and write the same columns.
 */

/** Every slot, in order: one per limit at most (src/limits/slots.ts ties the count to them). */
export const SLOTS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] as const;

/** A spend counter slot of an account row. */
export type SpendSlot = (typeof SLOTS)[number];

/** The column of a slot's window start (epoch ms). */
export const startColumn = <S extends SpendSlot>(slot: S) => `sw${slot}_start_ms` as const;

/** The column of what a slot's window spent (micro-credits). */
export const spentColumn = <S extends SpendSlot>(slot: S) => `sw${slot}_spent_micros` as const;

/** A slot column's name. */
export type SlotColumn =
  | ReturnType<typeof startColumn<SpendSlot>>
  | ReturnType<typeof spentColumn<SpendSlot>>;

/** An account's spend counters, in its own row: every slot's two columns. */
export type SpendSlotColumns = { [K in SlotColumn]: number | null };

/** Every slot column, for a read of them all. */
export const ALL_SLOT_COLUMNS: readonly SlotColumn[] = SLOTS.flatMap((slot) => [
  startColumn(slot),
  spentColumn(slot),
]);

/** An account's slots when it counts nothing (a new account). */
export const EMPTY_SLOTS: SpendSlotColumns = {
  sw0_start_ms: null,
  sw0_spent_micros: null,
  sw1_start_ms: null,
  sw1_spent_micros: null,
  sw2_start_ms: null,
  sw2_spent_micros: null,
  sw3_start_ms: null,
  sw3_spent_micros: null,
  sw4_start_ms: null,
  sw4_spent_micros: null,
  sw5_start_ms: null,
  sw5_spent_micros: null,
  sw6_start_ms: null,
  sw6_spent_micros: null,
  sw7_start_ms: null,
  sw7_spent_micros: null,
  sw8_start_ms: null,
  sw8_spent_micros: null,
  sw9_start_ms: null,
  sw9_spent_micros: null,
};
