/**
 * PostgreSQL's limited plain debit (docs/design.md#spend-limits): a deduction or manual debit on
 * an account with limits in one call of `ledger_plain_limited_debit` (migration 0011), when this
 * process already knows the account's limits. The function makes the write only when the
 * account's stored limits are still those, and every limit stays strictly below its amount after
 * it (or is soft and already reached): a write no limit refuses and none is reached by. Any other
 * write changes nothing there and takes the general path, which applies the rule
 * (src/limits/enforce.ts). SQLite has no such path: its general path keeps the rate
 * (docs/benchmarks.md#spend-limits).
 */
import { sql } from "kysely";
import { prepared } from "../db/prepared.ts";
import type { AccountRow } from "../db/schema.ts";
import type { PgDebitRow } from "../ledger/plain-debit.ts";
import { parseLimits } from "./limits.ts";
import { windowAt } from "./windows.ts";

/** Project and account reference (internal id or externalId) → the account's limits text. */
const known = new Map<string, string>();
const MAX_KNOWN = 100_000;

const keyOf = (projectId: string, ref: string) => `${projectId} ${ref}`;

/**
 * Records what a unit of the general path read of an account's limits, under both its names, so
 * that the next deduction naming it may try the limited plain debit (and forgets an account
 * without limits). A stale entry is harmless: the function compares it with the stored limits.
 */
export function rememberLimits(
  account: Pick<AccountRow, "project_id" | "id" | "external_id" | "spend_limits">,
): void {
  const byId = keyOf(account.project_id, account.id);
  const byExternalId = keyOf(account.project_id, account.external_id);
  if (account.spend_limits === null) {
    if (known.size === 0) return;
    known.delete(byId);
    known.delete(byExternalId);
    return;
  }
  if (known.size >= MAX_KNOWN) known.clear();
  known.set(byId, account.spend_limits);
  known.set(byExternalId, account.spend_limits);
}

/** The limits text this process last saw for the account `ref` names, if any. */
export function knownLimits(projectId: string, ref: string): string | undefined {
  return known.get(keyOf(projectId, ref));
}

type Args = {
  projectId: string;
  ref: string;
  byId: boolean;
  amountMicros: number;
  nowMs: number;
  txnId: string;
  description: string;
  metadata: string;
  source: string;
  limits: string;
  periods: string[];
  zones: string[];
  starts: number[];
  ends: number[];
  amounts: number[];
  softs: boolean[];
};

/** The call of `ledger_plain_limited_debit`. */
export const pgPlainLimitedDebit = prepared<Args, PgDebitRow>((db, arg) => ({
  compile: () =>
    sql<PgDebitRow>`SELECT * FROM ledger_plain_limited_debit(${arg("projectId")}, ${arg("ref")}, ${arg("byId")}, ${arg("amountMicros")}, ${arg("nowMs")}, ${arg("txnId")}, ${arg("description")}, ${arg("metadata")}, ${arg("source")}, ${arg("limits")}, ${arg("periods")}::text[], ${arg("zones")}::text[], ${arg("starts")}::bigint[], ${arg("ends")}::bigint[], ${arg("amounts")}::bigint[], ${arg("softs")}::boolean[])`.compile(
      db,
    ),
}));

/** The limit arguments of the call for the limits text `limits` at `nowMs`. */
export function limitArgs(limits: string, nowMs: number) {
  const list = parseLimits(limits);
  const windows = list.map((l) => windowAt(nowMs, l.period, l.timeZone));
  return {
    limits,
    periods: list.map((l) => l.period),
    zones: list.map((l) => l.timeZone),
    starts: windows.map((w) => w.startMs),
    ends: windows.map((w) => w.endMs),
    amounts: list.map((l) => l.amountMicros),
    softs: list.map((l) => l.soft),
  };
}
