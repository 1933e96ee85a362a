/**
 * The plain region's grant condition (docs/design.md#the-admission-rule): whether an account has
 * grant expiry work at an instant (docs/api.md#expiry-of-grants), a grant past its expiresAt
 * whose expiry is not booked yet, or a booked one with something left (held). A write on such an
 * account books expiries first, so it takes the general path. Written once as a Kysely
 * expression: SQLite's statements and the general path's account read use it as it is, and
 * PostgreSQL's plain functions call `ledger_grant_work`, generated from it (postgres.ts).
 */
import { type Expression, type ExpressionBuilder, sql } from "kysely";
import type { DB } from "../db/schema.ts";

/**
 * The account `accountId` (default: the `accounts` row of the statement) has grant expiry work at
 * `nowMs` (epoch ms). Its literals (0, 1) stay in the SQL text so that the grants' partial
 * indexes match (docs/design.md#grant-indexes).
 */
export function grantWork(
  eb: ExpressionBuilder<DB, "accounts">,
  nowMs: number | Expression<number>,
  accountId: Expression<string> = eb.ref("accounts.id"),
) {
  return eb.or([
    eb.exists(
      eb
        .selectFrom("credit_grants as d")
        .select(sql.lit(1).as("one"))
        .where("d.account_id", "=", accountId)
        .where("d.exhausted", "=", sql.lit(0))
        .where("d.expiry_booked", "=", sql.lit(0))
        .where("d.expires_at_ms", "is not", null)
        .where("d.expires_at_ms", "<=", nowMs),
    ),
    eb.exists(
      eb
        .selectFrom("credit_grants as h")
        .select(sql.lit(1).as("one"))
        .where("h.account_id", "=", accountId)
        .where("h.exhausted", "=", sql.lit(0))
        .where("h.expiry_booked", "=", sql.lit(1)),
    ),
  ]);
}
