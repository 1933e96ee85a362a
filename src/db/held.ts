/**
 * An account's held micro-credits as a SQL expression (docs/api.md#reservations): the sum of its
 * reservations that are pending and unexpired at the instant given. Used inside statements on
 * `accounts` by the plain conditions (src/accounts/plain.ts) and the limited plain debit
 * (src/limits/plain.ts), on both engines.
 */
import type { ExpressionBuilder } from "kysely";
import type { DB } from "./schema.ts";

/** The micro-credits held by the account's pending holds unexpired at `nowMs`. */
export function heldExpression(eb: ExpressionBuilder<DB, "accounts">, nowMs: number) {
  return eb
    .selectFrom("reservations")
    .select((r) => r.fn.coalesce(r.fn.sum<number>("amount_micros"), r.lit(0)).as("held"))
    .whereRef("reservations.account_id", "=", "accounts.id")
    .where("reservations.status", "=", "pending")
    .where("reservations.expires_at_ms", ">", nowMs);
}
