/**
 * The filters the ledger-like lists share (transactions, usage records): the project's rows or
 * one account's, created within a period.
 */
import type { SelectQueryBuilder } from "kysely";
import type { DB } from "./schema.ts";

/**
 * The tables of ledger-like rows: each row is of an account in a project and has a creation
 * time, in columns of the same names and types.
 */
type LedgerTable = "transactions" | "usage_records";

/** A filtered selection of one ledger-like table, before its columns are chosen. */
type LedgerRows<T extends LedgerTable> = SelectQueryBuilder<DB, T, object>;

/**
 * `rows` narrowed to the project's, or only to the account's when `accountId` is given. The
 * account id was already resolved within the project, so it alone selects the rows (and lets
 * SQLite use the account index instead of scanning the project's rows).
 */
export function ofProjectOrAccount<T extends LedgerTable>(
  rows: LedgerRows<T>,
  projectId: string,
  accountId: string | undefined,
): LedgerRows<T> {
  const ledger: LedgerRows<LedgerTable> = rows;
  return accountId === undefined
    ? ledger.where("project_id", "=", projectId)
    : ledger.where("account_id", "=", accountId);
}

/**
 * `rows` narrowed to those created from `startMs` to `endMs` (epoch ms, both included; either
 * left out: no bound on that side).
 */
export function createdWithin<T extends LedgerTable>(
  rows: LedgerRows<T>,
  period: { startMs?: number | undefined; endMs?: number | undefined },
): LedgerRows<T> {
  let within: LedgerRows<LedgerTable> = rows;
  if (period.startMs !== undefined) within = within.where("created_at_ms", ">=", period.startMs);
  if (period.endMs !== undefined) within = within.where("created_at_ms", "<=", period.endMs);
  return within;
}

/** A ledger-like row's place in oldest-first order: its creation time, then its `seq`. */
export interface LedgerKey {
  created_at_ms: number;
  seq: number;
}

/**
 * `rows` in oldest-first order (creation time, then `seq`), only those after `after` (strictly,
 * by that order) and with `seq` at most `maxSeq`: one keyset page of an export, without its
 * limit (docs/design.md#exports). Each row's key is unique and never changes, so consecutive
 * pages neither repeat nor skip a row that existed when the walk began.
 */
export function oldestFirstAfter<T extends LedgerTable>(
  rows: LedgerRows<T>,
  after: LedgerKey | undefined,
  maxSeq: number,
): LedgerRows<T> {
  const ledger: LedgerRows<LedgerTable> = rows;
  let page = ledger.where("seq", "<=", maxSeq);
  if (after !== undefined) {
    page = page.where((eb) =>
      eb(eb.refTuple("created_at_ms", "seq"), ">", eb.tuple(after.created_at_ms, after.seq)),
    );
  }
  return page.orderBy("created_at_ms").orderBy("seq");
}
