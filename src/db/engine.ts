/**
 * Which engine a Kysely instance or transaction runs on: the embedded SQLite (libSQL) file or
 * PostgreSQL. Services stay engine-neutral; the few places where the SQL must differ (prepared
 * queries, row locks, the sweeper's SKIP LOCKED) ask here. See docs/design.md, "Engines".
 */
import { type Kysely, PostgresAdapter } from "kysely";
import type { DB } from "./schema.ts";

export type Engine = "sqlite" | "postgres";

/** The dialect adapter of each Kysely instance seen so far → its engine. */
const engines = new WeakMap<object, Engine>();

/**
 * The engine behind `db` (a Kysely instance, a transaction or a connection). Reads the dialect's
 * adapter, which a transaction shares with the instance it was opened on.
 */
export function engineOf(db: Kysely<DB>): Engine {
  const adapter = db.getExecutor().adapter;
  let engine = engines.get(adapter);
  if (engine === undefined) {
    engine = adapter instanceof PostgresAdapter ? "postgres" : "sqlite";
    engines.set(adapter, engine);
  }
  return engine;
}

/**
 * True when `db` is a PostgreSQL transaction: there, a write unit locks the rows it is about to
 * change (`SELECT … FOR UPDATE`), since other processes write at the same time. On SQLite the
 * write queue already runs one unit at a time, and SQLite has no `FOR UPDATE`.
 */
export function locksRows(db: Kysely<DB>): boolean {
  return db.isTransaction && engineOf(db) === "postgres";
}

/**
 * The form of a step for the engine of `db`: callers hand one form per engine, so that which
 * engine runs stays a question asked here (a batch's run of plain debits, src/batch/plain-debits.ts).
 */
export function onEngine<T>(db: Kysely<DB>, forms: Record<Engine, () => T>): T {
  return forms[engineOf(db)]();
}
