/**
 * An export of ledger-like rows (transactions, usage records; docs/api.md#exports) as
 * `exportResponse` streams it: keyset pages, each encoded as CSV records (with the accounts'
 * externalIds) or as NDJSON lines of the list route's items.
 */
import type { Kysely } from "kysely";
import type { LedgerKey } from "../db/ledger-rows.ts";
import { keysetPages } from "../db/paging.ts";
import type { DB } from "../db/schema.ts";
import { stringifyJsonFast } from "../json.ts";
import type { ExportName } from "../metrics.ts";
import { type CsvCell, csvLine } from "./csv.ts";
import { externalIds } from "./external-ids.ts";
import type { ExportFormat, ExportSource } from "./stream.ts";

/** What one kind of ledger-like row needs to be exported. */
export interface LedgerExportSpec<R extends LedgerKey & { account_id: string | null }> {
  db: Kysely<DB>;
  projectId: string;
  name: ExportName;
  format: ExportFormat;
  filename: string;
  /** Rows per keyset page. */
  pageRows: number;
  /** Reads up to `pageRows` rows after `after`, oldest first (`oldestFirstAfter`). */
  readPage: (after: LedgerKey | undefined) => Promise<R[]>;
  /** The CSV header's column names. */
  columns: readonly string[];
  /** A row's CSV fields, in `columns` order. */
  csvCells: (row: R, externalId: string | null) => CsvCell[];
  /** A row as the list route's item (an NDJSON line). */
  item: (row: R) => unknown;
}

/** The `ExportSource` of `spec`. */
export function ledgerExport<R extends LedgerKey & { account_id: string | null }>(
  spec: LedgerExportSpec<R>,
): ExportSource<R> {
  const { name, format, filename } = spec;
  const pages = keysetPages(spec.readPage, spec.pageRows);
  if (format === "ndjson") {
    const encode = async (rows: R[]) => {
      let text = "";
      for (const row of rows) text += `${stringifyJsonFast(spec.item(row))}\n`;
      return text;
    };
    return { name, format, filename, header: "", pages, encode };
  }
  const accounts = externalIds(spec.db, spec.projectId);
  const encode = async (rows: R[]) => {
    await accounts.load(rows.map((row) => row.account_id));
    let text = "";
    for (const row of rows) text += csvLine(spec.csvCells(row, accounts.of(row.account_id)));
    return text;
  };
  return { name, format, filename, header: csvLine(spec.columns), pages, encode };
}
