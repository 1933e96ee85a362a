/**
 * The record each Stripe payment keeps (docs/design.md#stripe-purchases): its `stripe_payments`
 * row, which every event of one PaymentIntent locks first, and its purchase once granted; what
 * an event did (`Outcome`); and the account a purchase's credits go to.
 */
import type { Transaction } from "kysely";
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
  const row = await forUpdateOnPostgres(trx, query).executeTakeFirstOrThrow();
  return {
    ...row,
    charge_refunded: row.charge_refunded === null ? null : Number(row.charge_refunded),
    charge_refunded_at: row.charge_refunded_at === null ? null : Number(row.charge_refunded_at),
  };
}

/** The purchase `id`, its numbers as numbers. */
export async function readPurchase(trx: Transaction<DB>, id: string): Promise<PurchaseRow> {
  const row = await trx
    .selectFrom("purchases")
    .selectAll()
    .where("id", "=", id)
    .executeTakeFirstOrThrow();
  return purchaseNumbers(row);
}

/** A purchase row with its integer columns as numbers (PostgreSQL's BIGINT may come as text). */
export function purchaseNumbers(row: PurchaseRow): PurchaseRow {
  return {
    ...row,
    credits_micros: Number(row.credits_micros),
    amount_paid: Number(row.amount_paid),
    amount_refunded: Number(row.amount_refunded),
    credits_uncollected_micros: Number(row.credits_uncollected_micros),
    priority: Number(row.priority),
    expires_at_ms: row.expires_at_ms === null ? null : Number(row.expires_at_ms),
    created_at_ms: Number(row.created_at_ms),
  };
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
