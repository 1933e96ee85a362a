/**
 * Balance adjustments and the transaction list (spec §4.2, §4.5; contract §6).
 * Writes run inside a write unit (`trx`); reads use the read connection.
 */
import type { Kysely, Transaction } from "kysely";
import { newestFirstPage } from "../db/paging.ts";
import type {
  AccountRow,
  DB,
  TransactionRow,
  TransactionSource,
  TransactionType,
} from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { boundMs, parseDateParam } from "../http/dates.ts";
import { reservationJson } from "../reservations/service.ts";
import { usageRecordJson } from "../usage/service.ts";
import {
  findAccount,
  findAccountWithBalance,
  postEntry,
  requireAvailable,
  transactionJson,
} from "./core.ts";

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
 * `amount ≤ available` (contract §6).
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
 * The audit data of `include=reservation,usage` (contract §6): each item gains `reservation`
 * (the reservation it settled, or null) and/or `usage` (the usage records naming it).
 */
export async function withAuditData(
  db: Kysely<DB>,
  rows: TransactionRow[],
  include: { reservation: boolean; usage: boolean },
  nowMs: number,
) {
  const items: Record<string, unknown>[] = rows.map(transactionJson);
  if (rows.length === 0) return items;
  if (include.reservation) {
    const ids = rows.map((r) => r.reservation_id).filter((id): id is string => id !== null);
    const found = ids.length
      ? await db.selectFrom("reservations").selectAll().where("id", "in", ids).execute()
      : [];
    const byId = new Map(found.map((r) => [r.id, reservationJson(r, nowMs)]));
    rows.forEach((row, i) => {
      const item = items[i] as Record<string, unknown>;
      item.reservation = row.reservation_id ? (byId.get(row.reservation_id) ?? null) : null;
    });
  }
  if (include.usage) {
    const usage = await db
      .selectFrom("usage_records")
      .selectAll()
      .where(
        "transaction_id",
        "in",
        rows.map((r) => r.id),
      )
      .orderBy("seq")
      .execute();
    rows.forEach((row, i) => {
      const item = items[i] as Record<string, unknown>;
      item.usage = usage.filter((u) => u.transaction_id === row.id).map(usageRecordJson);
    });
  }
  return items;
}

/**
 * `startDate`/`endDate` (validated by the query schema; both inclusive) → epoch ms bounds. A
 * date-only end covers its whole UTC day; a date-time without offset is read as UTC.
 * @throws ApiError VALIDATION_ERROR when a date is not in the strict form, or start is after end
 */
export function dateRangeMs(startDate?: string, endDate?: string) {
  const parse = (s: string, end: boolean) => {
    const parsed = parseDateParam(s);
    if (!parsed) {
      const field = end ? "endDate" : "startDate";
      throw new ApiError("VALIDATION_ERROR", `Invalid query.${field}`, [
        { path: `query.${field}`, message: "not a valid date or date-time" },
      ]);
    }
    return boundMs(parsed, end);
  };
  const startMs = startDate === undefined ? undefined : parse(startDate, false);
  const endMs = endDate === undefined ? undefined : parse(endDate, true);
  if (startMs !== undefined && endMs !== undefined && startMs > endMs) {
    throw new ApiError("VALIDATION_ERROR", "startDate is after endDate", [
      { path: "query.startDate", message: "must not be after endDate" },
    ]);
  }
  return { startMs, endMs };
}
