/**
 * The one paging rule of the ledger-like lists (transactions, usage records; docs/api.md#balance-adjustments-and-transactions, docs/api.md#usage-and-models):
 * newest first, ties in insertion order (seq), with the total count of the filtered rows.
 */
import type { Selectable, SelectQueryBuilder } from "kysely";
import type { DB } from "./schema.ts";

type Timeline = "transactions" | "usage_records";

/**
 * A page of `base` (a filtered selection of one table) and the number of rows it filters to.
 * @param page `limit` rows from `offset`
 */
export async function newestFirstPage<T extends Timeline>(
  base: SelectQueryBuilder<DB, T, object>,
  page: { limit: number; offset: number },
): Promise<{ rows: Selectable<DB[T]>[]; totalCount: number }> {
  const timeline = base as unknown as SelectQueryBuilder<DB, Timeline, object>;
  const rows = await timeline
    .selectAll()
    .orderBy("created_at_ms", "desc")
    .orderBy("seq", "desc")
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  const { count } = await timeline
    .select((eb) => eb.fn.countAll<number>().as("count"))
    .executeTakeFirstOrThrow();
  return { rows: rows as Selectable<DB[T]>[], totalCount: Number(count) };
}
