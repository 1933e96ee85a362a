/**
 * The record each Stripe payment keeps (docs/design.md#stripe-purchases): its `stripe_payments`
 * row, which every event of one PaymentIntent locks first, and its purchase once granted; what
 * an event did (`Outcome`); and the account a purchase's credits go to.
 */
import type { Kysely, Transaction } from "kysely";
import { findAccount } from "../accounts/lookup.ts";
import { poolIdOf } from "../accounts/placement.ts";
import { pathUp } from "../accounts/spending.ts";
import { forUpdateOnPostgres } from "../db/row-locks.ts";
import type { AccountRow, DB, PurchasesTable, StripePaymentsTable } from "../db/schema.ts";

/** What an event did (`stripe_events.outcome`), with its reason and purchase. */
export interface Outcome {
  outcome: "applied" | "duplicate" | "pending" | "ignored";
  reason: string | null;
  purchaseId: string | null;
}

export type PaymentRow = StripePaymentsTable;
export type PurchaseRow = PurchasesTable;

/** The reason of a refund or dispute whose payment was ignored. */
export const PAYMENT_IGNORED = "payment_ignored";

/**
 * The `stripe_payments` row of `paymentIntentId`, created when new and locked (on PostgreSQL)
 * until the unit ends: every event of one payment takes its turn here.
 */
export async function lockPayment(
  trx: Transaction<DB>,
  projectId: string,
  paymentIntentId: string,
): Promise<PaymentRow> {
  await trx
    .insertInto("stripe_payments")
    .values({
      project_id: projectId,
      payment_intent_id: paymentIntentId,
      purchase_id: null,
      ignored_reason: null,
      charge_refunded: null,
      charge_refunded_at: null,
    })
    .onConflict((oc) => oc.columns(["project_id", "payment_intent_id"]).doNothing())
    .execute();
  const query = trx
    .selectFrom("stripe_payments")
    .selectAll()
    .where("project_id", "=", projectId)
    .where("payment_intent_id", "=", paymentIntentId);
  return forUpdateOnPostgres(trx, query).executeTakeFirstOrThrow();
}

/** The purchase `id`, its numbers as numbers. */
export function readPurchase(trx: Transaction<DB>, id: string): Promise<PurchaseRow> {
  return trx.selectFrom("purchases").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
}

/**
 * The account whose ledger a credit for `account` goes to (locked, with `account`'s path on
 * PostgreSQL): its own, or its pool's when its parent funds it (docs/api.md#pools-and-members).
 */
export async function payerOf(trx: Transaction<DB>, account: AccountRow): Promise<AccountRow> {
  if (account.funding === "own") return account;
  await pathUp(trx, account);
  return findAccount(trx, account.project_id, await poolIdOf(trx, account));
}

/**
 * Each purchase's credits taken back (micro-credits): what its credit and restores have had
 * reversed (by clawbacks or by hand), less what its restores gave back; one grouped query.
 */
export async function clawedBackOf(
  db: Kysely<DB> | Transaction<DB>,
  purchaseIds: string[],
): Promise<Map<string, number>> {
  const back = new Map<string, number>();
  if (purchaseIds.length === 0) return back;
  const rows = await db
    .selectFrom("purchase_credits as pc")
    .leftJoin("transactions as r", "r.reversal_of", "pc.transaction_id")
    .select(["pc.purchase_id", "pc.transaction_id", "pc.credits_micros", "pc.restored"])
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>("r.amount_micros"), eb.lit(0)).as("reversed"))
    .where("pc.purchase_id", "in", purchaseIds)
    .groupBy(["pc.purchase_id", "pc.transaction_id", "pc.credits_micros", "pc.restored"])
    .execute();
  for (const r of rows) {
    const restored = Number(r.restored) === 1 ? Number(r.credits_micros) : 0;
    back.set(r.purchase_id, (back.get(r.purchase_id) ?? 0) + Number(r.reversed) - restored);
  }
  return back;
}
