/**
 * Index hints SQLite's planner needs and PostgreSQL has no syntax for
 * (docs/design.md#usage-summary-indexes, docs/design.md#schema-and-sql-differences). PostgreSQL
 * plans by its statistics; SQLite, without them, sometimes picks an index for the order it gives
 * rather than for the rows it selects, and a term written `+column` takes no index's order.
 */
import { type Kysely, type RawBuilder, sql } from "kysely";
import { engineOf } from "./engine.ts";
import type { DB } from "./schema.ts";

/**
 * The `GROUP BY` (or `ORDER BY`) keys `columns`, so that no index's order serves them on SQLite:
 * each written `+column` there (`+model_id`, a unary plus that leaves the value as it is), and
 * the plain column names on PostgreSQL, which has no `+` on text. SQLite then reads the rows of
 * the index that selects fewest and sorts them, instead of walking a wide index in key order.
 * @param db the Kysely instance or transaction that decides the engine
 * @param columns plain column names (each goes into the SQL text as written)
 * @returns the keys, in the order of `columns`
 */
export function withoutIndexOrderOnSqlite<C extends string>(
  db: Kysely<DB>,
  columns: readonly C[],
): readonly (C | RawBuilder<unknown>)[] {
  if (engineOf(db) !== "sqlite") return columns;
  return columns.map((column) => sql.raw(`+${column}`));
}

/**
 * The column `name` in a `WHERE` term that no index should serve on SQLite (written `+name`
 * there), so that its planner takes another index for the rows the query selects (the usage
 * reversal parts: `usage_transaction`, `transactions_reversal_of`); the plain column on
 * PostgreSQL.
 * @param db the Kysely instance or transaction that decides the engine
 * @param name a column name (it goes into the SQL text as a reference)
 */
export function unindexedOnSqlite(db: Kysely<DB>, name: string): RawBuilder<unknown> {
  return engineOf(db) === "sqlite" ? sql`+${sql.ref(name)}` : sql`${sql.ref(name)}`;
}
