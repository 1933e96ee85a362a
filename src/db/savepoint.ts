/**
 * One part of a write unit that may fail alone: run inside a SAVEPOINT, so that when it throws
 * only its own changes roll back and the rest of the unit goes on (used by the jobs, which handle
 * many accounts in one unit; see docs/design.md#scheduled-jobs).
 */
import { sql, type Transaction } from "kysely";
import type { DB } from "./schema.ts";
import { isStorageFailure } from "./storage-errors.ts";

/**
 * Runs `part` inside the savepoint `name` of `trx`.
 * @returns `{ ok: true, value }`, or `{ ok: false, error }` after rolling the part back
 * @throws the part's error when the database cannot write (src/db/storage-errors.ts): the
 *   whole unit fails then, since SQLite may have rolled the whole transaction back; or an
 *   Error when the savepoint could not be rolled back (the transaction is gone)
 */
export async function inSavepoint<T>(
  trx: Transaction<DB>,
  name: string,
  part: () => Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  await sql.raw(`SAVEPOINT ${name}`).execute(trx);
  try {
    const value = await part();
    await sql.raw(`RELEASE ${name}`).execute(trx);
    return { ok: true, value };
  } catch (error) {
    if (isStorageFailure(error)) throw error;
    try {
      await sql.raw(`ROLLBACK TO ${name}`).execute(trx);
      await sql.raw(`RELEASE ${name}`).execute(trx);
    } catch (rollbackError) {
      throw new Error(`the transaction was lost after a part failed: ${String(error)}`, {
        cause: rollbackError,
      });
    }
    return { ok: false, error };
  }
}
