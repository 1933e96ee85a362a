/**
 * The one paging rule of every list (docs/api.md#transaction-list): a page of a filtered
 * selection of one table, in the list's own order, with the number of rows the filter selects;
 * and the keyset walk of the exports (docs/design.md#exports).
 */
import type { Kysely, SelectQueryBuilder } from "kysely";
import type { LedgerKey } from "./ledger-rows.ts";
import type { DB } from "./schema.ts";

/** A filtered selection of one table, before its columns are chosen. */
type Filtered<T extends keyof DB> = SelectQueryBuilder<DB, T, object>;

/**
 * `limit` rows of `base` from `offset`, in the order `order` gives, and how many rows `base`
 * selects in all.
 * @returns `{ rows, totalCount }`
 */
export async function countedPage<T extends keyof DB>(
  base: Filtered<T>,
  order: (query: Filtered<T>) => Filtered<T>,
  page: { limit: number; offset: number },
) {
  const rows = await order(base).selectAll().limit(page.limit).offset(page.offset).execute();
  const { count } = await base
    .select((eb) => eb.fn.countAll<number>().as("count"))
    .executeTakeFirstOrThrow();
  return { rows, totalCount: Number(count) };
}

/**
 * A page of a ledger-like list (transactions, usage records): newest first, ties in insertion
 * order (`seq`).
 */
export function newestFirstPage<T extends "transactions" | "usage_records">(
  base: Filtered<T>,
  page: { limit: number; offset: number },
) {
  return countedPage(base, (q) => q.orderBy("created_at_ms", "desc").orderBy("seq", "desc"), page);
}

/**
 * The highest `seq` of `table` now, 0 when it is empty: every row committed before this read
 * has a `seq` at most this (docs/design.md#exports), on either engine.
 */
export async function highestSeq(
  db: Kysely<DB>,
  table: "transactions" | "usage_records",
): Promise<number> {
  const row = await db
    .selectFrom(table)
    .select((eb) => eb.fn.max("seq").as("seq"))
    .executeTakeFirst();
  return row?.seq == null ? 0 : Number(row.seq);
}

/**
 * The pages of a keyset walk (docs/design.md#exports): `read(after)` reads up to `pageSize`
 * rows after the key `after` (undefined: from the start), and each page goes on from its last
 * row's key, until a page comes back shorter than `pageSize`. Nothing is held between pages but
 * that key, so memory stays bounded by one page however many rows the walk meets.
 */
export async function* keysetPages<R extends LedgerKey>(
  read: (after: LedgerKey | undefined) => Promise<R[]>,
  pageSize: number,
): AsyncGenerator<R[], void> {
  let after: LedgerKey | undefined;
  for (;;) {
    const rows = await read(after);
    const last = rows.at(-1);
    if (last === undefined) return;
    yield rows;
    if (rows.length < pageSize) return;
    after = { created_at_ms: last.created_at_ms, seq: last.seq };
  }
}
