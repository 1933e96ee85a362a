/**
 * One part of a write unit that may fail alone: run inside a SAVEPOINT, so that when it throws
 * only its own changes roll back and the rest of the unit goes on (used by the jobs, which handle
 * many accounts in one unit; see docs/design.md#scheduled-jobs).
 */
import { sql, type Transaction } from "kysely";
import type { DB } from "./schema.ts";

/**
 * Runs `part` inside the savepoint `name` of `trx`.
 * @returns `{ ok: true, value }`, or `{ ok: false, error }` after rolling the part back
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
    await sql.raw(`ROLLBACK TO ${name}`).execute(trx);
    await sql.raw(`RELEASE ${name}`).execute(trx);
    return { ok: false, error };
  }
}
