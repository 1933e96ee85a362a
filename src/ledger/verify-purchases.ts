/**
 * `ledger verify`'s checks of the purchases made through Stripe
 * (docs/api.md#selling-credits-through-stripe):
 *
 * - each purchase's credit, and each of its restores, is a credit of the purchase's amount
 *   (the restore's own), booked by a purchase, on the purchase's account or, on its behalf, on
 *   its pool;
 * - what a purchase has taken back (its credits' reversals less its restores) is at least 0,
 *   and with what it left uncollected at most its credits;
 * - a payment's record names the purchase of its own PaymentIntent.
 *
 * Amounts in micro-credits.
 */
import { type Kysely, sql } from "kysely";
import type { DB } from "../db/schema.ts";
import { fromMicros } from "../money.ts";

/** The problems found, one sentence each (empty when every check holds). */
export async function purchaseProblems(db: Kysely<DB>): Promise<string[]> {
  const problems: string[] = [];
  const credits = await db
    .selectFrom("purchase_credits as pc")
    .innerJoin("purchases as p", "p.id", "pc.purchase_id")
    .leftJoin("transactions as t", "t.id", "pc.transaction_id")
    .select([
      "pc.purchase_id",
      "pc.transaction_id",
      "pc.credits_micros",
      "p.account_id",
      "t.account_id as booked_on",
      "t.on_behalf_of",
      "t.type",
      "t.source",
      "t.amount_micros",
    ])
    .execute();
  for (const c of credits) {
    const onItsAccount =
      c.booked_on === c.account_id ? c.on_behalf_of === null : c.on_behalf_of === c.account_id;
    if (
      c.type !== "credit" ||
      c.source !== "purchase" ||
      Number(c.amount_micros) !== Number(c.credits_micros) ||
      !onItsAccount
    ) {
      problems.push(
        `purchase ${c.purchase_id}: ${c.transaction_id} is not its credit of ${fromMicros(Number(c.credits_micros))} on its account`,
      );
    }
  }
  problems.push(...(await standingProblems(db)));
  const payments = await db
    .selectFrom("stripe_payments as s")
    .leftJoin("purchases as p", "p.id", "s.purchase_id")
    .select(["s.payment_intent_id", "s.purchase_id", "p.payment_intent_id as purchased"])
    .where("s.purchase_id", "is not", null)
    .execute();
  for (const s of payments) {
    if (s.purchased !== s.payment_intent_id) {
      problems.push(`payment ${s.payment_intent_id}: names purchase ${s.purchase_id} of another`);
    }
  }
  return problems;
}

/** Purchases that took back more than they granted, or less than nothing. */
async function standingProblems(db: Kysely<DB>): Promise<string[]> {
  const problems: string[] = [];
  const standing = await db
    .selectFrom("purchases as p")
    .innerJoin("purchase_credits as pc", "pc.purchase_id", "p.id")
    .leftJoin("transactions as r", "r.reversal_of", "pc.transaction_id")
    .select([
      "p.id",
      "p.credits_micros",
      "p.credits_uncollected_micros",
      sql<number>`coalesce(sum(r.amount_micros), 0)`.as("reversed"),
    ])
    .groupBy(["p.id", "p.credits_micros", "p.credits_uncollected_micros"])
    .execute();
  // Restores counted once each, whether reversed or not.
  const restores = await db
    .selectFrom("purchase_credits")
    .select(["purchase_id", sql<number>`sum(credits_micros)`.as("restored")])
    .where("restored", "=", 1)
    .groupBy("purchase_id")
    .execute();
  const restoredOf = new Map(restores.map((r) => [r.purchase_id, Number(r.restored)]));
  for (const p of standing) {
    const back = Number(p.reversed) - (restoredOf.get(p.id) ?? 0);
    const uncollected = Number(p.credits_uncollected_micros);
    if (back < 0 || back + uncollected > Number(p.credits_micros)) {
      problems.push(
        `purchase ${p.id}: took back ${fromMicros(back)} and left ${fromMicros(uncollected)} uncollected of ${fromMicros(Number(p.credits_micros))}`,
      );
    }
  }
  return problems;
}
