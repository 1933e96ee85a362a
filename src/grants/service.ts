/** The grant list (docs/api.md#grant-list): an account's credit grants, newest first. */
import type { Kysely } from "kysely";
import type { AccountListOptions } from "../db/account-list.ts";
import { countedPage } from "../db/paging.ts";
import type { CreditGrantRow, DB } from "../db/schema.ts";
import { iso } from "../http/dates.ts";
import type { WireOf } from "../http/respond.ts";
import { fromMicros } from "../money.ts";
import type { grantSchema } from "./schemas.ts";

export type GrantStatus = "active" | "expired" | "spent";

/**
 * A grant's status at `nowMs`: `expired` once past its expiresAt (whatever remains), else
 * `active` while something remains, else `spent`.
 */
export function grantStatus(grant: CreditGrantRow, nowMs: number): GrantStatus {
  if (grant.expires_at_ms !== null && grant.expires_at_ms <= nowMs) return "expired";
  return grant.remaining_micros > 0 ? "active" : "spent";
}

/** The API's Grant object at `nowMs`. */
export function grantJson(grant: CreditGrantRow, nowMs: number): WireOf<typeof grantSchema> {
  return {
    id: grant.id,
    accountId: grant.account_id,
    transactionId: grant.transaction_id,
    amount: fromMicros(grant.amount_micros),
    remaining: fromMicros(grant.remaining_micros),
    priority: grant.priority,
    expiresAt: grant.expires_at_ms === null ? null : iso(grant.expires_at_ms),
    createdAt: iso(grant.created_at_ms),
    status: grantStatus(grant, nowMs),
  };
}

/**
 * A page of the account's grants, newest first (ledger order, index `credit_grants_account`),
 * with the total; `activeOnly`: only those `active` at `nowMs`.
 */
export async function listGrants(db: Kysely<DB>, accountId: string, options: AccountListOptions) {
  let base = db.selectFrom("credit_grants").where("account_id", "=", accountId);
  if (options.activeOnly) {
    base = base
      .where("remaining_micros", ">", 0)
      .where((eb) =>
        eb.or([eb("expires_at_ms", "is", null), eb("expires_at_ms", ">", options.nowMs)]),
      );
  }
  return countedPage(base, (q) => q.orderBy("seq", "desc"), options);
}
