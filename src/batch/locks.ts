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
 */
import type { Transaction } from "kysely";
import { locksRows } from "../db/engine.ts";
import type { DB } from "../db/schema.ts";

/**
 * Locks the project's accounts whose id or externalId is one of `refs`, in id order
 * (PostgreSQL write units only; a no-op on SQLite and for no refs).
 */
export async function lockBatchAccounts(
  trx: Transaction<DB>,
  projectId: string,
  refs: readonly string[],
): Promise<void> {
  if (refs.length === 0 || !locksRows(trx)) return;
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
