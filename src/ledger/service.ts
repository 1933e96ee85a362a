/**
 * Balance adjustments and the transaction list (docs/api.md#endpoints, docs/api.md#balance-adjustments-and-transactions).
 * Writes run inside a write unit (`trx`); reads use the read connection.
 */
import type { Kysely, Transaction } from "kysely";
import { findAccount, findAccountWithBalance } from "../accounts/lookup.ts";
import { newestFirstPage } from "../db/paging.ts";
import type {
  AccountRow,
  DB,
  TransactionRow,
  TransactionSource,
  TransactionType,
} from "../db/schema.ts";
import type { WireOf } from "../http/respond.ts";
import { reservationJson } from "../reservations/service.ts";
import { usageRecordJson } from "../usage/service.ts";
import { postEntry, requireAvailable, transactionJson } from "./core.ts";
import type { transactionSchema } from "./schemas.ts";

export interface MoveInput {
  accountRef: string;
  type: TransactionType;
  amountMicros: number;
  description?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
  source: TransactionSource;
}

/**
 * Credits or debits an account (add, deduct, manual transaction). A debit needs
 * `amount ≤ available` (docs/api.md#balance-adjustments-and-transactions).
 * @throws ApiError ACCOUNT_NOT_FOUND, INSUFFICIENT_CREDITS, BALANCE_LIMIT_EXCEEDED
 */
export async function moveCredits(
  trx: Transaction<DB>,
  projectId: string,
  input: MoveInput,
  nowMs: number,
) {
  let account: AccountRow;
  if (input.type === "debit") {
    const found = await findAccountWithBalance(trx, projectId, input.accountRef, nowMs);
    requireAvailable(found.available, input.amountMicros);
    account = found.account;
  } else {
    account = await findAccount(trx, projectId, input.accountRef);
  }
  const row = await postEntry(trx, {
    projectId,
    accountId: account.id,
    type: input.type,
    amountMicros: input.amountMicros,
    description: input.description ?? "",
    metadata: input.metadata ?? {},
    source: input.source,
    nowMs,
  });
  return { account, row };
}

export interface TransactionFilter {
  accountId?: string | undefined;
  startMs?: number | undefined;
  endMs?: number | undefined;
  limit: number;
  offset: number;
}

/** A page of the project's transactions, newest first (ties by insertion order), with total. */
export async function listTransactions(db: Kysely<DB>, projectId: string, f: TransactionFilter) {
  // An account id was already resolved within the project, so it alone selects the rows (and
  // lets SQLite use the account index instead of scanning the project's ledger).
  let base =
    f.accountId === undefined
      ? db.selectFrom("transactions").where("project_id", "=", projectId)
      : db.selectFrom("transactions").where("account_id", "=", f.accountId);
  if (f.startMs !== undefined) base = base.where("created_at_ms", ">=", f.startMs);
  if (f.endMs !== undefined) base = base.where("created_at_ms", "<=", f.endMs);
  return newestFirstPage(base, f);
}

/**
 * The audit data of `include=reservation,usage` (docs/api.md#audit-data): each item gains
 * `reservation` (the reservation it settled, or null) and/or `usage` (the usage records naming
 * it, oldest first).
 */
export async function withAuditData(
  db: Kysely<DB>,
  rows: TransactionRow[],
  include: { reservation: boolean; usage: boolean },
  nowMs: number,
): Promise<WireOf<typeof transactionSchema>[]> {
  const reservationIds = rows.flatMap((r) => (r.reservation_id === null ? [] : [r.reservation_id]));
  const reservations =
    include.reservation && reservationIds.length > 0
      ? await db.selectFrom("reservations").selectAll().where("id", "in", reservationIds).execute()
      : [];
  const reservationById = new Map(reservations.map((r) => [r.id, reservationJson(r, nowMs)]));
  const usage =
    include.usage && rows.length > 0
      ? await db
          .selectFrom("usage_records")
          .selectAll()
          .where(
            "transaction_id",
            "in",
            rows.map((r) => r.id),
          )
          .orderBy("seq")
          .execute()
      : [];
  return rows.map((row) => ({
    ...transactionJson(row),
    ...(include.reservation
      ? {
          reservation:
            row.reservation_id === null ? null : (reservationById.get(row.reservation_id) ?? null),
        }
      : {}),
    ...(include.usage
      ? { usage: usage.filter((u) => u.transaction_id === row.id).map(usageRecordJson) }
      : {}),
  }));
}
