/**
 * The account's terms of the admission rule (src/admission/rule.ts,
 * docs/design.md#the-admission-rule) in a SQLite statement on `accounts`: the region (its spend
 * limits are none, or the text the statement checks with its own limit conditions; the account
 * in no tree, docs/api.md#pools-and-members; no automatic top-up enabled,
 * docs/api.md#automatic-top-up; no grant expiry due or held), `available` and the
 * low-balance threshold. The plain statements built
 * from them are the debit's move (src/ledger/plain-move.ts) and the reservation's insert
 * (src/reservations/plain-reserve.ts). PostgreSQL reads the same terms in
 * `ledger_plain_account` (sql/postgres/functions/) and hands them to the rule's generated
 * functions (src/admission/postgres.ts).
 */
import { expressionBuilder, type Kysely, sql } from "kysely";
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
 * checks itself (src/limits/plain.ts); without it the account must have none. `held`: the
 * account's holds as the statement has them already (a column of a one-row table it joins,
 * `heldOf`, so that they are summed once however often the rule reads them); by default a
 * subquery of the row, summed where it is read.
 */
export function accountTerms(
  nowMs: number,
  limitsText?: string | null,
  held?: SqlNumber,
): AccountTerms {
  const eb = expressionBuilder<DB, "accounts">();
  const holds = held ?? sql<number>`(${heldExpression(eb, nowMs)})`;
  return {
    region: eb.and([
      limitsText === undefined
        ? eb("accounts.spend_limits", "is", null)
        : eb("accounts.spend_limits", "=", limitsText),
      // In no tree: a member's pool pays and every level's limits apply (its own plain debit,
      // src/ledger/plain-member.ts, or the general path).
      eb("accounts.tree_links", "=", 0),
      // No automatic top-up: a crossing of its threshold queues an attempt (the general path).
      eb("accounts.auto_topup_threshold_micros", "is", null),
      eb.not(grantWork(eb, nowMs)),
    ]),
    held: holds,
    available: sql<number>`(${eb.ref("accounts.balance_micros")} - ${holds})`,
    threshold: eb.ref("accounts.low_balance_threshold_micros"),
  };
}

/**
 * The holds of the account whose `column` is `ref` in project `projectId` at `nowMs`, as a
 * one-row table of one column `held` (micro-credits): for a statement on that account to join
 * (SQLite's plain move, src/ledger/plain-move.ts), which then reads them as often as the rule
 * needs for the cost of one sum.
 */
export function heldOf(
  db: Kysely<DB>,
  column: "id" | "external_id",
  account: { projectId: string; ref: string; nowMs: number },
) {
  return db
    .selectFrom("reservations")
    .select((r) =>
      r.fn.coalesce(r.fn.sum<number>("reservations.amount_micros"), r.lit(0)).as("held"),
    )
    .where("reservations.account_id", "=", (eb) =>
      eb
        .selectFrom("accounts as ha")
        .select("ha.id")
        .where("ha.project_id", "=", account.projectId)
        .where(`ha.${column}`, "=", account.ref),
    )
    .where("reservations.status", "=", "pending")
    .where("reservations.expires_at_ms", ">", account.nowMs);
}
