/**
 * The account locks of a batch on PostgreSQL (docs/design.md#batches). A batch is one
 * transaction that changes many accounts; two batches that took their accounts' row locks in
 * array order would deadlock as soon as they met two accounts in opposite orders. So before its
 * first operation a batch locks every existing account its operations name by `accountId`, in
 * one statement, in the order of their ids: batches then take turns on the accounts they share,
 * and each operation's own `FOR UPDATE` finds its lock already held. An account the batch creates
 * is new to every other transaction, and an operation that names its account another way (a
 * reservation's) only locks it when it runs, as a single request would. On SQLite the write
 * queue runs one unit at a time and nothing needs locking.
 *
 * A batch's transaction is long by nature, and one waits for another that shares its accounts:
 * its statements get BATCH_TIMEOUT_MS (server side, for a statement and for a lock wait)
 * instead of the few seconds a single request's statement gets (src/db/postgres.ts), which
 * would turn every wait behind a batch of 1,000 into a 503.
 */
import { sql, type Transaction } from "kysely";
import { locksRows } from "../db/engine.ts";
import { UNBOUNDED_STATEMENT } from "../db/postgres.ts";
import type { DB } from "../db/schema.ts";

/** Milliseconds a batch's statement may run or wait for a lock on PostgreSQL. */
export const BATCH_TIMEOUT_MS = 60_000;

/**
 * Sets the batch's timeouts and locks the project's accounts whose id or externalId is one of
 * `refs`, in id order (PostgreSQL write units only; a no-op on SQLite).
 */
export async function lockBatchAccounts(
  trx: Transaction<DB>,
  projectId: string,
  refs: readonly string[],
): Promise<void> {
  if (!locksRows(trx)) return;
  // The comment lifts the client's own 4 s timeout for this transaction; the server's bounds
  // become BATCH_TIMEOUT_MS.
  await sql`${sql.raw(UNBOUNDED_STATEMENT)}SELECT set_config('statement_timeout', ${String(BATCH_TIMEOUT_MS)}, true), set_config('lock_timeout', ${String(BATCH_TIMEOUT_MS)}, true)`.execute(
    trx,
  );
  if (refs.length === 0) return;
  const unique = [...new Set(refs)];
  await trx
    .selectFrom("accounts")
    .select("id")
    .where("project_id", "=", projectId)
    .where((eb) => eb.or([eb("id", "in", unique), eb("external_id", "in", unique)]))
    .orderBy("id")
    .forUpdate()
    .execute();
}
