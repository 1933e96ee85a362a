/**
 * `GET /v1/usage/export` (docs/api.md#exports): every usage record the list's filters select,
 * oldest first, as CSV or NDJSON, read in keyset pages up to the highest `seq` committed when
 * the export began (docs/design.md#exports).
 */
import type { Kysely } from "kysely";
import { oldestFirstAfter } from "../db/ledger-rows.ts";
import { highestSeq } from "../db/paging.ts";
import type { DB, UsageRecordRow } from "../db/schema.ts";
import { ledgerExport } from "../exports/ledger-export.ts";
import { EXPORT_PAGE_ROWS, type ExportFormat, type ExportSource } from "../exports/stream.ts";
import { type ExactDecimal, fromMicros } from "../money.ts";
import { type UsageRecordView, usageRecordJson } from "./schemas.ts";
import { filteredUsage, type UsageFilter, withReversals } from "./service.ts";

/** The CSV columns of a usage export (docs/api.md#exports). */
export const USAGE_CSV_COLUMNS = [
  "id",
  "createdAt",
  "context",
  "accountId",
  "externalId",
  "modelId",
  "usageType",
  "inputTokens",
  "cachedTokens",
  "outputTokens",
  "estimatedCostUsd",
  "transactionId",
  "creditsCharged",
  "creditsReversed",
] as const;

/**
 * The credits a usage record charged (docs/api.md#charging-usage-in-credits: `null`, an empty
 * field, for a record made without `deduct: true`; `0` for a charge whose cost was 0), for the
 * export's `creditsCharged` column; the one place the export reads it.
 */
export function creditsChargedOf(row: UsageRecordRow): ExactDecimal | null {
  const micros = row.credits_charged_micros;
  return micros === null ? null : fromMicros(micros);
}

/** A usage record as the export reads it: its row and its charge's reversals. */
type ExportedUsage = UsageRecordRow & UsageRecordView;

/**
 * The export of the usage records `filter` selects, in `format`: what `exportResponse` streams.
 * The walk is bounded by the highest `seq` at this call, so it ends even while writes go on.
 * @param options.pageRows rows per keyset page (default `EXPORT_PAGE_ROWS`)
 */
export async function usageExport(
  db: Kysely<DB>,
  projectId: string,
  filter: UsageFilter,
  options: { format: ExportFormat; filename: string; pageRows?: number | undefined },
): Promise<ExportSource<ExportedUsage>> {
  // The reversals committed when the export began, as its records: a record's creditsReversed
  // does not grow between one page and the next.
  const [maxSeq, maxTransactionSeq] = await Promise.all([
    highestSeq(db, "usage_records"),
    highestSeq(db, "transactions"),
  ]);
  const base = filteredUsage(db, projectId, filter);
  const pageRows = options.pageRows ?? EXPORT_PAGE_ROWS;
  return ledgerExport({
    db,
    projectId,
    name: "usage",
    format: options.format,
    filename: options.filename,
    pageRows,
    readPage: async (after): Promise<ExportedUsage[]> => {
      const rows = await oldestFirstAfter(base, after, maxSeq)
        .selectAll()
        .limit(pageRows)
        .execute();
      return withReversals(db, rows, maxTransactionSeq);
    },
    columns: USAGE_CSV_COLUMNS,
    csvCells,
    item: usageRecordJson,
  });
}

/** A usage record's CSV fields: the list item's values, in `USAGE_CSV_COLUMNS` order. */
function csvCells(row: ExportedUsage, externalId: string | null) {
  const item = usageRecordJson(row);
  return [
    item.id,
    item.createdAt,
    item.context,
    item.accountId,
    externalId,
    item.modelId,
    item.usageType,
    item.inputTokens,
    item.cachedTokens,
    item.outputTokens,
    item.estimatedCostUsd,
    item.transactionId,
    creditsChargedOf(row),
    item.creditsReversed,
  ];
}
