/**
 * The transaction list (docs/api.md#transaction-list) and its audit data
 * (docs/api.md#audit-data): reads on the read connection.
 */
import type { Kysely } from "kysely";
import { findAccount } from "../accounts/lookup.ts";
import { resolveAccount } from "../accounts/service.ts";
import { dateRangeMs } from "../dates.ts";
import { withoutIndexOrderOnSqlite } from "../db/index-hints.ts";
import { createdWithin, ofProjectOrAccount } from "../db/ledger-rows.ts";
import { newestFirstPage } from "../db/paging.ts";
import type { AccountRow, DB, TransactionRow, UsageRecordRow } from "../db/schema.ts";
import { reversedSums } from "../ledger/reversal.ts";
import type { AuditData } from "./schemas.ts";

/** Which of the project's transactions a list or an export selects. */
export interface TransactionFilter {
  /** One account's (its internal id), or every account's when undefined. */
  accountId?: string | undefined;
  /** Only credits or only debits (docs/api.md#transaction-list); both when undefined. */
  type?: "credit" | "debit" | undefined;
  /** Created at or after, epoch ms. */
  startMs?: number | undefined;
  /** Created at or before, epoch ms. */
  endMs?: number | undefined;
  /** Only the reversals of this transaction (docs/api.md#reversals); any when undefined. */
  reversalOf?: string | undefined;
  /** Only the rows booked on behalf of this member (its internal id; docs/api.md#pools-and-members). */
  onBehalfOf?: string | undefined;
}

/** The filter parameters of the transaction list and its export, as validated. */
export interface TransactionQuery {
  accountId?: string | undefined;
  externalId?: string | undefined;
  type?: "credit" | "debit" | undefined;
  startDate?: string | undefined;
  endDate?: string | undefined;
  reversalOf?: string | undefined;
  onBehalfOf?: string | undefined;
}

/**
 * The filter a validated list or export query selects by: its account resolved within the
 * project, its dates as inclusive epoch-ms bounds.
 * @returns the filter, and the account when the query names one
 * @throws ApiError as `resolveAccount` (ACCOUNT_NOT_FOUND, VALIDATION_ERROR)
 */
export async function transactionFilterOf(
  db: Kysely<DB>,
  projectId: string,
  q: TransactionQuery,
): Promise<{ filter: TransactionFilter; account: AccountRow | undefined }> {
  const { startMs, endMs } = dateRangeMs(q.startDate, q.endDate);
  const named = q.accountId !== undefined || q.externalId !== undefined;
  const account = named ? await resolveAccount(db, projectId, q) : undefined;
  const member =
    q.onBehalfOf === undefined
      ? undefined
      : await findAccount(db, projectId, q.onBehalfOf, { lock: false });
  const filter = {
    accountId: account?.id,
    type: q.type,
    startMs,
    endMs,
    reversalOf: q.reversalOf,
    onBehalfOf: member?.id,
  };
  return { filter, account };
}

/** The project's transactions that `f` selects (the list's and the export's). */
export function filteredTransactions(db: Kysely<DB>, projectId: string, f: TransactionFilter) {
  const selected =
    f.reversalOf === undefined
      ? ofProjectOrAccount(db.selectFrom("transactions"), projectId, f.accountId)
      : reversalsOf(db, projectId, f.accountId, f.reversalOf);
  const all =
    f.onBehalfOf === undefined ? selected : selected.where("on_behalf_of", "=", f.onBehalfOf);
  const rows = f.type === undefined ? all : all.where("type", "=", f.type);
  return createdWithin(rows, f);
}

/**
 * The reversals of the transaction `reversalOf`, of the project (or only of the account
 * `accountId`). An id of no transaction of the project selects nothing: a filter, not a lookup
 * (no 404). A transaction has few reversals, so they are found by the reversal index: on SQLite
 * the project's (account's) column is written `+project_id` (`+account_id`), which keeps the
 * planner from walking that wider index for the order it gives (src/db/index-hints.ts).
 */
function reversalsOf(
  db: Kysely<DB>,
  projectId: string,
  accountId: string | undefined,
  reversalOf: string,
) {
  const column = accountId === undefined ? "project_id" : "account_id";
  const owner = withoutIndexOrderOnSqlite(db, [column])[0] ?? column;
  return db
    .selectFrom("transactions")
    .where("reversal_of", "=", reversalOf)
    .where(owner, "=", accountId ?? projectId);
}

/**
 * What the reversals of each of `rows` add up to (micro-credits; absent: none), in one grouped
 * query for the whole page (`reversedSums`). A reversal is never reversed, so only the rows
 * that are not reversals are asked about.
 * @param maxSeq only reversals with `seq` at most this (an export's bound: the reversals it
 *   holds, none committed after it began); undefined: every reversal committed
 */
export function reversedAmounts(
  db: Kysely<DB>,
  rows: readonly TransactionRow[],
  maxSeq?: number | undefined,
): Promise<Map<string, number>> {
  const ids = rows.flatMap((r) => (r.reversal_of === null ? [r.id] : []));
  return reversedSums(db, ids, maxSeq);
}

/** A page of the project's transactions, newest first (ties by insertion order), with total. */
export async function listTransactions(
  db: Kysely<DB>,
  projectId: string,
  f: TransactionFilter & { limit: number; offset: number },
) {
  return newestFirstPage(filteredTransactions(db, projectId, f), f);
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
