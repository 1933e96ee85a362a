/**
 * Long reads of the whole database (`ledger verify`) over one view of it, without the engine
 * showing through to the caller (see docs/design.md, "Engines").
 */
import { type Kysely, sql } from "kysely";
import { engineOf } from "./engine.ts";
import { UNBOUNDED_STATEMENT } from "./postgres.ts";
import type { DB } from "./schema.ts";

/**
 * Runs `read`, read-only, over one snapshot where the engine needs one for it. On PostgreSQL,
 * where service processes may write meanwhile, `read` gets a REPEATABLE READ, READ ONLY
 * transaction without statement timeouts, so all its statements see one snapshot however long
 * they take. On SQLite `read` gets `db` itself.
 * @returns what `read` returns; its errors propagate (the transaction is rolled back)
 */
export async function inReadSnapshot<T>(
  db: Kysely<DB>,
  read: (db: Kysely<DB>) => Promise<T>,
): Promise<T> {
  if (engineOf(db) !== "postgres") return read(db);
  return db
    .transaction()
    .setIsolationLevel("repeatable read")
    .setAccessMode("read only")
    .execute(async (trx) => {
      await sql`${sql.raw(UNBOUNDED_STATEMENT)}SET LOCAL statement_timeout = 0`.execute(trx);
      return read(trx);
    });
}
