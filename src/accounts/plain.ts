/**
 * When a write is plain (docs/design.md#plain-writes): the conditions under which a debit or a
 * reservation may skip the general path, as the WHERE of a SQLite statement on `accounts`. The
 * write lowers `available` by `neededMicros` (a debit's amount beyond the hold it settles, or a
 * reservation's amount); it is plain when `available` covers that, it keeps the low-balance event
 * out of it (no threshold, already below, or still at or above it after), no grant expiry is
 * due or held, and the account has no spend limits (docs/design.md#spend-limits: those are
 * enforced on the general path, and recognised by the limited plain debit, src/limits/plain.ts).
 * PostgreSQL decides the same in `ledger_plain_account` and `ledger_no_crossing`
 * (sql/postgres/functions/).
 */
import type { ExpressionBuilder } from "kysely";
import { heldExpression } from "../db/held.ts";
import type { DB } from "../db/schema.ts";
import { grantWork } from "./lookup.ts";

/**
 * The plain conditions of a write on the account of a statement on `accounts`, at `nowMs`
 * (epoch ms), lowering `available` by `neededMicros`. With `limitsText`, an account whose
 * stored limits are that text also qualifies (SQLite's limited plain debit, src/limits/plain.ts,
 * which adds the limits' own conditions).
 */
export function plainAccount(
  eb: ExpressionBuilder<DB, "accounts">,
  nowMs: number,
  neededMicros: number,
  limitsText?: string,
) {
  const held = heldExpression(eb, nowMs);
  const available = eb(eb.ref("balance_micros"), "-", held);
  const threshold = eb.ref("low_balance_threshold_micros");
  return eb.and([
    limitsText === undefined ? eb("spend_limits", "is", null) : eb("spend_limits", "=", limitsText),
    eb(available, ">=", neededMicros),
    eb.or([
      eb(threshold, "is", null),
      eb(available, "<", threshold),
      eb(eb(available, "-", neededMicros), ">=", threshold),
    ]),
    eb.not(grantWork(eb, nowMs)),
  ]);
}
