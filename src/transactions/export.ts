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
import { filteredTransactions, reversedAmounts, type TransactionFilter } from "./service.ts";

/**
 * The CSV columns of a transaction export (docs/api.md#exports), ending `reversalOf,
 * amountReversed, onBehalfOf, transferId`.
 */
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
  "reversalOf",
  "amountReversed",
  "onBehalfOf",
  "transferId",
] as const;

/** A transaction row as exported: with what its reversals (in the export) add up to. */
type ExportedTransaction = TransactionRow & {
  /** Micro-credits of its reversals with `seq` up to the export's bound; 0 when none. */
  reversedMicros: number;
};

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
): Promise<ExportSource<ExportedTransaction>> {
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
    readPage: async (after) => {
      const rows = await oldestFirstAfter(base, after, maxSeq)
        .selectAll()
        .limit(pageRows)
        .execute();
      // One grouped query per page, bounded like the rows: no reversal committed after the
      // export began counts, so the file's amounts agree with the reversals it holds.
      const sums = await reversedAmounts(db, rows, maxSeq);
      return rows.map((row) => ({ ...row, reversedMicros: sums.get(row.id) ?? 0 }));
    },
    columns: TRANSACTION_CSV_COLUMNS,
    csvCells,
    item: (row) => transactionJson(row, row.reversedMicros),
  });
}

/** A transaction's CSV fields: the list item's values, in `TRANSACTION_CSV_COLUMNS` order. */
function csvCells(row: ExportedTransaction, externalId: string | null) {
  const item = transactionJson(row, row.reversedMicros);
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
    item.reversalOf,
    item.amountReversed,
    item.onBehalfOf,
    item.transferId,
  ];
}
