/**
 * `GET /v1/transactions/export` (docs/api.md#exports): every transaction the list's filters
 * select, oldest first, as CSV or NDJSON, read in keyset pages up to the highest `seq` committed
 * when the export began (docs/design.md#exports).
 */
import type { Kysely } from "kysely";
import { oldestFirstAfter } from "../db/ledger-rows.ts";
import { highestSeq } from "../db/paging.ts";
import type { DB, TransactionRow } from "../db/schema.ts";
import { ledgerExport } from "../exports/ledger-export.ts";
import { EXPORT_PAGE_ROWS, type ExportFormat, type ExportSource } from "../exports/stream.ts";
import { stringifyJsonFast } from "../json.ts";
import { transactionJson } from "./schemas.ts";
import { filteredTransactions, type TransactionFilter } from "./service.ts";

/** The CSV columns of a transaction export (docs/api.md#exports). */
export const TRANSACTION_CSV_COLUMNS = [
  "id",
  "createdAt",
  "accountId",
  "externalId",
  "type",
  "amount",
  "balanceAfter",
  "description",
  "reservationId",
  "metadata",
] as const;

/**
 * The export of the transactions `filter` selects, in `format`: what `exportResponse` streams.
 * The walk is bounded by the highest `seq` at this call, so it ends even while writes go on.
 * @param options.pageRows rows per keyset page (default `EXPORT_PAGE_ROWS`)
 */
export async function transactionExport(
  db: Kysely<DB>,
  projectId: string,
  filter: TransactionFilter,
  options: { format: ExportFormat; filename: string; pageRows?: number | undefined },
): Promise<ExportSource<TransactionRow>> {
  const maxSeq = await highestSeq(db, "transactions");
  const base = filteredTransactions(db, projectId, filter);
  const pageRows = options.pageRows ?? EXPORT_PAGE_ROWS;
  return ledgerExport({
    db,
    projectId,
    name: "transactions",
    format: options.format,
    filename: options.filename,
    pageRows,
    readPage: (after) =>
      oldestFirstAfter(base, after, maxSeq).selectAll().limit(pageRows).execute(),
    columns: TRANSACTION_CSV_COLUMNS,
    csvCells,
    item: transactionJson,
  });
}

/** A transaction's CSV fields: the list item's values, in `TRANSACTION_CSV_COLUMNS` order. */
function csvCells(row: TransactionRow, externalId: string | null) {
  const item = transactionJson(row);
  return [
    item.id,
    item.createdAt,
    item.accountId,
    externalId,
    item.type,
    item.amount,
    item.balanceAfter,
    item.description,
    row.reservation_id,
    stringifyJsonFast(item.metadata),
  ];
}
