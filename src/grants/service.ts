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
      .where("exhausted", "=", 0)
      .where((eb) =>
        eb.or([eb("expires_at_ms", "is", null), eb("expires_at_ms", ">", options.nowMs)]),
      );
  }
  const page = await countedPage(base, (q) => q.orderBy("seq", "desc"), options);
  const remaining = await remainingOf(
    db,
    page.rows.map((g) => g.seq),
  );
  const rows = page.rows.map((grant): CreditGrantRow => {
    const left = remaining.get(grant.seq);
    if (left === undefined) throw new Error(`ledger invariant: grant ${grant.id} has no remaining`);
    return { ...grant, remaining_micros: left };
  });
  return { rows, totalCount: page.totalCount };
}

/** What remains of each of the grants `seqs` (micro-credits), by seq. */
async function remainingOf(db: Kysely<DB>, seqs: number[]): Promise<Map<number, number>> {
  if (seqs.length === 0) return new Map();
  const rows = await db
    .selectFrom("credit_grant_remaining")
    .select(["seq", "remaining_micros"])
    .where("seq", "in", seqs)
    .execute();
  return new Map(rows.map((r) => [Number(r.seq), Number(r.remaining_micros)]));
}
