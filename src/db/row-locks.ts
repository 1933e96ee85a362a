/**
 * Row locks a read takes on PostgreSQL and not on SQLite (docs/design.md#the-write-path-on-postgresql,
 * docs/design.md#scheduled-jobs-on-several-processes). On PostgreSQL several processes write at
 * once, so a unit locks the rows it is about to change; on SQLite the write queue runs one unit
 * at a time, and SQLite has no `FOR UPDATE`. Callers say which rows they lock; which engine
 * takes the lock is decided here.
 */
import type { Kysely, SelectQueryBuilder, Transaction } from "kysely";
import { engineOf, locksRows } from "./engine.ts";
import type { DB } from "./schema.ts";

/**
 * `query … FOR UPDATE` when `db` runs on PostgreSQL, else `query` unchanged. Made for the
 * builder of a `prepared(...)` query (src/db/prepared.ts): its `db` is the engine's compile-only
 * instance, so the lock is part of the PostgreSQL text and absent from the SQLite text; the
 * query then locks whenever it runs on PostgreSQL (inside a write unit's transaction).
 * @param db the Kysely instance or transaction that decides the engine
 * @param query a select built on `db`
 * @returns the same select, with `FOR UPDATE` on PostgreSQL
 */
export function forUpdateOnPostgres<D, TB extends keyof D, O>(
  db: Kysely<DB>,
  query: SelectQueryBuilder<D, TB, O>,
): SelectQueryBuilder<D, TB, O> {
  return engineOf(db) === "postgres" ? query.forUpdate() : query;
}

/**
 * `query … FOR UPDATE SKIP LOCKED` when `trx` is a PostgreSQL transaction (`locksRows`), else
 * `query` unchanged: the rows it selects are locked until `trx` ends, and rows another
 * transaction holds are left out rather than waited for. For jobs that several processes run at
 * once (the reservation sweeper, webhook claims, webhook retention): each takes rows no other
 * one is working on (docs/design.md#scheduled-jobs-on-several-processes).
 * @param trx the unit's transaction, which decides the engine
 * @param query a select built on `trx`
 * @returns the same select, with `FOR UPDATE SKIP LOCKED` on PostgreSQL
 */
export function forUpdateSkipLockedOnPostgres<D, TB extends keyof D, O>(
  trx: Transaction<DB>,
  query: SelectQueryBuilder<D, TB, O>,
): SelectQueryBuilder<D, TB, O> {
  return locksRows(trx) ? query.forUpdate().skipLocked() : query;
}
