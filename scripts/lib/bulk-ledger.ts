/**
 * Loads many ledger entries straight into the database, in big multi-row inserts, for the
 * export bench (scripts/bench-export.ts) and the export tests: debits of one account that was
 * funded through the service with a single credit (its one grant), so that every invariant
 * `ledger verify` checks still holds afterwards: each debit's `balanceAfter` follows the
 * previous one, the account's balance is the last of them, and the grant's remaining is that
 * balance (every debit spent from it).
 */
import type { Transaction } from "kysely";
import type { DB } from "../../src/db/schema.ts";
import { newId } from "../../src/ids.ts";

/** Debits to append to one account's ledger. */
export interface BulkDebits {
  projectId: string;
  accountId: string;
  /** How many debits. */
  count: number;
  /** Each debit's amount, in micro-credits. */
  amountMicros: number;
  /** The i-th debit's creation time, epoch ms (non-decreasing in i). */
  createdAtMs: (i: number) => number;
  /** The i-th debit's description (default: `bulk debit i`). */
  description?: (i: number) => string;
  /** The i-th debit's metadata as JSON text (default `{}`). */
  metadata?: (i: number) => string;
}

/** Rows per INSERT: 12 parameters each stays under SQLite's and PostgreSQL's limits. */
const ROWS_PER_INSERT = 1000;

/**
 * Appends `spec.count` debits to the account inside `trx` (run it as one write unit, or a few),
 * and moves its balance and its one unexhausted grant's remaining down by their sum.
 * @throws Error when the account does not hold enough in one grant
 */
export async function appendDebits(trx: Transaction<DB>, spec: BulkDebits): Promise<void> {
  const account = await trx
    .selectFrom("accounts")
    .select("balance_micros")
    .where("id", "=", spec.accountId)
    .executeTakeFirstOrThrow();
  const grant = await trx
    .selectFrom("credit_grants as g")
    .innerJoin("credit_grant_remaining as r", "r.seq", "g.seq")
    .select(["g.seq", "r.remaining_micros"])
    .where("g.account_id", "=", spec.accountId)
    .where("g.exhausted", "=", 0)
    .executeTakeFirstOrThrow();
  const total = spec.count * spec.amountMicros;
  if (grant.remaining_micros !== account.balance_micros || total > account.balance_micros) {
    throw new Error(`account ${spec.accountId} cannot take ${total} micro-credits of debits`);
  }
  let balance = account.balance_micros;
  for (let from = 0; from < spec.count; from += ROWS_PER_INSERT) {
    const rows = [];
    for (let i = from; i < Math.min(spec.count, from + ROWS_PER_INSERT); i++) {
      balance -= spec.amountMicros;
      rows.push({
        id: newId("txn"),
        project_id: spec.projectId,
        account_id: spec.accountId,
        type: "debit" as const,
        amount_micros: spec.amountMicros,
        balance_after_micros: balance,
        description: spec.description ? spec.description(i) : `bulk debit ${i}`,
        metadata: spec.metadata ? spec.metadata(i) : "{}",
        source: "deduct" as const,
        reservation_id: null,
        account_plan_id: null,
        created_at_ms: spec.createdAtMs(i),
      });
    }
    await trx.insertInto("transactions").values(rows).execute();
  }
  await trx
    .updateTable("accounts")
    .set({ balance_micros: balance })
    .where("id", "=", spec.accountId)
    .execute();
  await trx
    .updateTable("credit_grant_remaining")
    .set({ remaining_micros: balance })
    .where("seq", "=", grant.seq)
    .execute();
}
