/**
 * Advisory locks for what has no row to lock yet (see docs/design.md, "Engines").
 *
 * On PostgreSQL, units of several processes run at once; a unit that must not overlap another
 * one with the same key (two requests with one Idempotency-Key) takes a transaction-level
 * advisory lock on the key's hash first, so the second waits for the first to commit and then
 * sees its row. On SQLite the write queue already runs one unit at a time, so these are no-ops.
 */
import { sql, type Transaction } from "kysely";
import { locksRows } from "./engine.ts";
import type { DB } from "./schema.ts";

/**
 * Holds an advisory lock on (`scope`, `key`) until the unit's transaction ends. Two keys whose
 * 64-bit hashes collide only make their units take turns.
 */
export async function lockKey(trx: Transaction<DB>, scope: string, key: string): Promise<void> {
  if (!locksRows(trx)) return;
  const text = `${scope}\u0001${key}`;
  await sql`SELECT pg_advisory_xact_lock(hashtextextended(${text}, 0))`.execute(trx);
}

/**
 * Takes the account's row lock without waiting: false when another transaction holds it
 * (PostgreSQL's `FOR UPDATE SKIP LOCKED`); always true on SQLite. Used by scheduled jobs, which
 * leave a busy account to their next run instead of queueing behind requests.
 */
export async function tryLockAccount(trx: Transaction<DB>, accountId: string): Promise<boolean> {
  if (!locksRows(trx)) return true;
  const row = await trx
    .selectFrom("accounts")
    .select("id")
    .where("id", "=", accountId)
    .forUpdate()
    .skipLocked()
    .executeTakeFirst();
  return row !== undefined;
}
