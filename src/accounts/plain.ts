/**
 * The account's terms of the admission rule (src/admission/rule.ts,
 * docs/design.md#the-admission-rule) in a SQLite statement on `accounts`: the region (its spend
 * limits are none, or the text the statement checks with its own limit conditions; no grant
 * expiry due or held), `available` and the low-balance threshold. The plain statements built
 * from them are the debit's move (src/ledger/plain-move.ts) and the reservation's insert
 * (src/reservations/plain-reserve.ts). PostgreSQL reads the same terms in
 * `ledger_plain_account` (sql/postgres/functions/) and hands them to the rule's generated
 * functions (src/admission/postgres.ts).
 */
import { type ExpressionBuilder, sql } from "kysely";
import { grantWork } from "../admission/grant-work.ts";
import type { SqlCondition, SqlNumber } from "../admission/rule.ts";
import { heldExpression } from "../db/held.ts";
import type { DB } from "../db/schema.ts";

/** The account's terms of the rule (micro-credits), as expressions of its row. */
export interface AccountTerms {
  region: SqlCondition;
  /** The account's pending, unexpired holds. */
  held: SqlNumber;
  /** balance − held. */
  available: SqlNumber;
  threshold: SqlNumber;
}

/**
 * The terms of the account of a statement on `accounts` at `nowMs` (epoch ms). `limitsText`
 * (a parameter): the account's stored limits must be that text, whose limits the statement
 * checks itself (src/limits/plain.ts); without it the account must have none.
 */
export function accountTerms(
  eb: ExpressionBuilder<DB, "accounts">,
  nowMs: number,
  limitsText?: string | null,
): AccountTerms {
  const held = heldExpression(eb, nowMs);
  return {
    region: eb.and([
      limitsText === undefined
        ? eb("spend_limits", "is", null)
        : eb("spend_limits", "=", limitsText),
      eb.not(grantWork(eb, nowMs)),
    ]),
    held: sql<number>`(${held})`,
    available: eb(eb.ref("balance_micros"), "-", held),
    threshold: eb.ref("low_balance_threshold_micros"),
  };
}
