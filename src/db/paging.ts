/**
 * The one paging rule of every list (docs/api.md#transaction-list): a page of a filtered
 * selection of one table, in the list's own order, with the number of rows the filter selects.
 */
import type { SelectQueryBuilder } from "kysely";
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
