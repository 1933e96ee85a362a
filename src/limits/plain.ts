/**
 * The limited plain debit (docs/design.md#spend-limits): a deduction or manual debit on an
 * account with limits in as few statements as the plain debit, when this process already knows
 * the account's limits (the general path remembers them). It is made only when the account's
 * stored limits are still those, and every limit stays strictly below its amount after it (or
 * is soft and already reached): a write that no limit refuses and that reaches none. Any other
 * write changes nothing and takes the general path, which applies the rule
 * (src/limits/enforce.ts, judge.ts); the SQL here only recognises the writes the rule cannot
 * refuse. PostgreSQL: one call of `ledger_plain_limited_debit` (migration 0011). SQLite: the
 * plain move with these conditions (ledger/core.ts), then the counters' upsert
 * (ledger/plain-debit.ts). test/debit-equivalence.test.ts runs limited cases through both paths.
 */
import { type Expression, type ExpressionBuilder, type SqlBool, sql } from "kysely";
import { heldExpression } from "../db/held.ts";
import { prepared } from "../db/prepared.ts";
import type { AccountRow, DB } from "../db/schema.ts";
import type { PlainDebitRow as PgDebitRow, PlainDebitCall } from "../db/write-path.ts";
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

/** The plain debit's arguments (as one call of a batch passes them), with the account's limits. */
type Args = PlainDebitCall<unknown>["args"] & {
  nowMs: number;
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

/** SQLite's limited plain move: the limits text and each limit's window, amount and softness. */
export interface SqliteLimited {
  text: string;
  count: number;
  /** `l<i>p`, `l<i>z`, `l<i>s` (window start), `l<i>a` (amount), `l<i>f` (soft: 1 or 0). */
  args: Record<string, string | number>;
}

/** The limited move's arguments for the limits text `text` at `nowMs` (SQLite). */
export function sqliteLimited(text: string, nowMs: number): SqliteLimited {
  const args: Record<string, string | number> = {};
  const list = parseLimits(text);
  list.forEach((l, i) => {
    args[`l${i}p`] = l.period;
    args[`l${i}z`] = l.timeZone;
    args[`l${i}s`] = windowAt(nowMs, l.period, l.timeZone).startMs;
    args[`l${i}a`] = l.amountMicros;
    args[`l${i}f`] = l.soft ? 1 : 0;
  });
  return { text, count: list.length, args };
}

/**
 * SQLite's conditions of a limited plain debit on the account of a statement on `accounts`,
 * `n` limits named by the arguments of `SqliteLimited`: each limit stays strictly below its
 * amount after the write (spent + held + needed), or is soft and already reached: the same
 * conservative test as `ledger_plain_limited_debit` (migration 0011).
 */
export function underLimits(
  eb: ExpressionBuilder<DB, "accounts">,
  arg: (name: string) => unknown,
  n: number,
  nowMs: unknown,
  needed: unknown,
): Expression<SqlBool>[] {
  const held = heldExpression(eb, nowMs as number);
  return Array.from({ length: n }, (_, i) => {
    const spent = sql<number>`coalesce((SELECT sw.spent_micros FROM spend_windows sw WHERE sw.account_id = accounts.id AND sw.period = ${arg(`l${i}p`)} AND sw.time_zone = ${arg(`l${i}z`)} AND sw.window_start_ms = ${arg(`l${i}s`)}), 0)`;
    const amount = arg(`l${i}a`);
    return sql<SqlBool>`(${spent} + (${held}) + ${needed} < ${amount} OR (${arg(`l${i}f`)} = 1 AND ${spent} + (${held}) >= ${amount}))`;
  });
}
