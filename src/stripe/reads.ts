/**
 * The reads of purchases and Stripe events (docs/api.md#selling-credits-through-stripe): pages,
 * newest first.
 */
import type { Kysely } from "kysely";
import { countedPage } from "../db/paging.ts";
import type { DB } from "../db/schema.ts";
import type { Page } from "../http/handlers.ts";
import { clawedBackOf } from "./payments.ts";
import { purchaseJson, stripeEventJson } from "./schemas.ts";

/**
 * A page of the project's purchases (of `accountId` only, when given), newest first, each with
 * its account's externalId and the credits its credits have had taken back (reversals, less its
 * restores), read for the page in one query.
 */
export async function listPurchases(
  db: Kysely<DB>,
  projectId: string,
  accountId: string | undefined,
  page: Page,
) {
  let base = db.selectFrom("purchases").where("purchases.project_id", "=", projectId);
  if (accountId !== undefined) base = base.where("purchases.account_id", "=", accountId);
  const rows = await base
    .innerJoin("accounts", "accounts.id", "purchases.account_id")
    .selectAll("purchases")
    .select("accounts.external_id")
    .orderBy("purchases.created_at_ms", "desc")
    .orderBy("purchases.id", "desc")
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  const { count } = await base
    .select((eb) => eb.fn.countAll<number>().as("count"))
    .executeTakeFirstOrThrow();
  const back = await clawedBackOf(
    db,
    rows.map((r) => r.id),
  );
  return {
    rows: rows.map((r) => purchaseJson(r, r.external_id, back.get(r.id) ?? 0)),
    totalCount: Number(count),
  };
}

/** A page of the project's Stripe events, newest first (by first delivery). */
export async function listStripeEvents(db: Kysely<DB>, projectId: string, page: Page) {
  const base = db.selectFrom("stripe_events").where("project_id", "=", projectId);
  const { rows, totalCount } = await countedPage(
    base,
    (q) => q.orderBy("received_at_ms", "desc").orderBy("id", "desc"),
    page,
  );
  return { rows: rows.map(stripeEventJson), totalCount };
}
