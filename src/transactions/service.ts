/**
 * The transaction list (docs/api.md#transaction-list) and its audit data
 * (docs/api.md#audit-data): reads on the read connection.
 */
import type { Kysely } from "kysely";
import { createdWithin, ofProjectOrAccount } from "../db/ledger-rows.ts";
import { newestFirstPage } from "../db/paging.ts";
import type { DB, TransactionRow, UsageRecordRow } from "../db/schema.ts";
import type { AuditData } from "./schemas.ts";

export interface TransactionFilter {
  accountId?: string | undefined;
  /** Only credits or only debits (docs/api.md#transaction-list); both when undefined. */
  type?: "credit" | "debit" | undefined;
  startMs?: number | undefined;
  endMs?: number | undefined;
  limit: number;
  offset: number;
}

/** A page of the project's transactions, newest first (ties by insertion order), with total. */
export async function listTransactions(db: Kysely<DB>, projectId: string, f: TransactionFilter) {
  const all = ofProjectOrAccount(db.selectFrom("transactions"), projectId, f.accountId);
  const rows = f.type === undefined ? all : all.where("type", "=", f.type);
  return newestFirstPage(createdWithin(rows, f), f);
}

/**
 * Reads the audit data `include` asks for of a page of entries: the reservations they settled
 * and the usage records naming them (oldest first); one query each, none when not asked for.
 * @param nowMs the time that decides each reservation's effective status
 */
export async function readAuditData(
  db: Kysely<DB>,
  rows: readonly TransactionRow[],
  include: AuditData["include"],
  nowMs: number,
): Promise<AuditData> {
  const reservationIds = rows.flatMap((r) => (r.reservation_id === null ? [] : [r.reservation_id]));
  const reservations =
    include.reservation && reservationIds.length > 0
      ? await db.selectFrom("reservations").selectAll().where("id", "in", reservationIds).execute()
      : [];
  const records =
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
  const usage = new Map<string, UsageRecordRow[]>();
  for (const record of records) {
    if (record.transaction_id === null) continue;
    const list = usage.get(record.transaction_id) ?? [];
    list.push(record);
    usage.set(record.transaction_id, list);
  }
  return {
    include,
    reservations: new Map(reservations.map((r) => [r.id, r])),
    usage,
    nowMs,
  };
}
