/**
 * Purchases through Stripe (docs/api.md#selling-credits-through-stripe,
 * docs/design.md#stripe-purchases): a paid PaymentIntent that names the ledger grants credits
 * once, inside the write unit of the event that brings it. Every event of one PaymentIntent
 * locks its `stripe_payments` row first (payments.ts `lockPayment`; on SQLite the one writer
 * serialises them anyway), so a purchase is booked by the first event that can book it and
 * every other one finds it; its unique key (project, PaymentIntent) is written in the grant's
 * own transaction. Refunds and disputes seen before the grant are applied with it
 * (clawback.ts `settle`).
 *
 * Credits in micro-credits; Stripe amounts in the currency's smallest unit.
 */
import type { Transaction } from "kysely";
import { findAccount } from "../accounts/lookup.ts";
import type { AccountRow, DB } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { newId } from "../ids.ts";
import { postEntry } from "../ledger/core.ts";
import { bookDueExpiries } from "../ledger/expiry.ts";
import { fromMicros, literalToMicros, MAX_AMOUNT_MICROS, MAX_BALANCE_MICROS } from "../money.ts";
import { settle } from "./clawback.ts";
import type { PaymentFact } from "./objects.ts";
import {
  lockPayment,
  type Outcome,
  PAYMENT_IGNORED,
  type PurchaseRow,
  payerOf,
} from "./payments.ts";
import { creditsPurchased } from "./purchase-events.ts";
import type { StripeConnection } from "./settings.ts";

const DAY_MS = 86_400_000;
/** A `ledger_credits` value: digits, at most 6 decimals. */
const CREDITS_TEXT = /^[0-9]+(\.[0-9]{1,6})?$/;

/**
 * A payment event of `paymentIntentId` that grants nothing (`reason`), its payment row locked:
 * `duplicate` when another event of the payment granted it; else `ignored`, and the payment is
 * marked ignored, so that its refunds and disputes are listed `ignored` too (their state is
 * kept: should another event of the payment grant it later, they are applied then).
 */
async function markIgnored(
  trx: Transaction<DB>,
  projectId: string,
  paymentIntentId: string,
  reason: string,
): Promise<Outcome> {
  await trx
    .updateTable("stripe_payments")
    .set({ ignored_reason: reason })
    .where("project_id", "=", projectId)
    .where("payment_intent_id", "=", paymentIntentId)
    .execute();
  await trx
    .updateTable("stripe_events")
    .set({ outcome: "ignored", reason: PAYMENT_IGNORED })
    .where("project_id", "=", projectId)
    .where("payment_intent_id", "=", paymentIntentId)
    .where("outcome", "=", "pending")
    .execute();
  return { outcome: "ignored", reason, purchaseId: null };
}

/**
 * An event of a payment that asks nothing of the ledger (an unpaid session, a PaymentIntent
 * that does not name the ledger): `duplicate` when the payment has a purchase, else `ignored`
 * as `markIgnored` marks it.
 */
export async function applyIgnoredPayment(
  trx: Transaction<DB>,
  projectId: string,
  paymentIntentId: string,
  reason: string,
): Promise<Outcome> {
  const payment = await lockPayment(trx, projectId, paymentIntentId);
  if (payment.purchase_id !== null) {
    return { outcome: "duplicate", reason: null, purchaseId: payment.purchase_id };
  }
  return markIgnored(trx, projectId, paymentIntentId, reason);
}

/**
 * The grant's terms a payment event asks for, or the reason it grants nothing: the credits
 * (`metadata.ledger_credits`, else the USD paid × the credit price, rounded down to the
 * micro-credit), `ledger_priority` (0–100, default 50) and `ledger_expires_in_days` (1–3653,
 * from the Stripe object's `created`).
 */
export function purchaseTerms(
  fact: PaymentFact,
  creditsPerUsdMicros: number | null,
): { creditsMicros: number; priority: number; expiresAtMs: number | null } | { reason: string } {
  const m = fact.metadata;
  let creditsMicros: number;
  const text = m.ledger_credits;
  if (text !== undefined) {
    const micros = CREDITS_TEXT.test(text) ? literalToMicros(text) : null;
    if (micros === null || micros <= 0 || micros > MAX_AMOUNT_MICROS) {
      return { reason: "invalid_ledger_credits" };
    }
    creditsMicros = micros;
  } else {
    if (fact.currency !== "usd") return { reason: "currency_not_usd" };
    if (creditsPerUsdMicros === null) return { reason: "no_credit_price" };
    const micros = (BigInt(fact.amountPaid) * BigInt(creditsPerUsdMicros)) / 100n;
    if (micros <= 0n) return { reason: "no_credits" };
    if (micros > BigInt(MAX_AMOUNT_MICROS)) return { reason: "balance_limit" };
    creditsMicros = Number(micros);
  }
  if (creditsMicros > MAX_AMOUNT_MICROS) return { reason: "balance_limit" };
  let priority = 50;
  if (m.ledger_priority !== undefined) {
    const p = /^[0-9]{1,3}$/.test(m.ledger_priority) ? Number(m.ledger_priority) : -1;
    if (p < 0 || p > 100) return { reason: "invalid_ledger_priority" };
    priority = p;
  }
  let expiresAtMs: number | null = null;
  if (m.ledger_expires_in_days !== undefined) {
    const d = /^[0-9]{1,4}$/.test(m.ledger_expires_in_days) ? Number(m.ledger_expires_in_days) : 0;
    if (d < 1 || d > 3653) return { reason: "invalid_ledger_expires_in_days" };
    expiresAtMs = fact.createdSec * 1000 + d * DAY_MS;
  }
  return { creditsMicros, priority, expiresAtMs };
}

/**
 * The account a payment names (locked): the first of its references (`client_reference_id`,
 * `metadata.ledger_account`, each an id or an externalId) present, else the account whose
 * `stripeCustomerId` is the object's customer; undefined when that names no account.
 */
async function namedAccount(
  trx: Transaction<DB>,
  projectId: string,
  fact: PaymentFact,
): Promise<AccountRow | undefined> {
  const ref = fact.accountRefs[0];
  if (ref !== undefined) {
    try {
      return await findAccount(trx, projectId, ref);
    } catch (err) {
      if (err instanceof ApiError && err.code === "ACCOUNT_NOT_FOUND") return undefined;
      throw err;
    }
  }
  if (fact.customerId === null) return undefined;
  const row = await trx
    .selectFrom("accounts")
    .select("id")
    .where("project_id", "=", projectId)
    .where("stripe_customer_id", "=", fact.customerId)
    .executeTakeFirst();
  return row === undefined ? undefined : findAccount(trx, projectId, row.id);
}

/**
 * A payment event: books the purchase unless the payment has one (`duplicate`), or says why it
 * grants nothing (`ignored`; a payment named for the ledger that cannot grant marks its
 * payment, so that its refunds are ignored too). A grant applies the refunds and disputes
 * already seen (`settle`) and turns their pending events into applied ones.
 */
export async function applyPayment(
  trx: Transaction<DB>,
  connection: StripeConnection,
  fact: PaymentFact,
  nowMs: number,
): Promise<Outcome> {
  const { projectId } = connection;
  const payment = await lockPayment(trx, projectId, fact.paymentIntentId);
  if (payment.purchase_id !== null) {
    return { outcome: "duplicate", reason: null, purchaseId: payment.purchase_id };
  }
  const refuse = (reason: string) => markIgnored(trx, projectId, fact.paymentIntentId, reason);
  const terms = purchaseTerms(fact, connection.creditsPerUsdMicros);
  if ("reason" in terms) return refuse(terms.reason);
  const account = await namedAccount(trx, projectId, fact);
  if (account === undefined) return refuse("account_not_found");
  const payer = await payerOf(trx, account);
  if (payer.balance_micros + terms.creditsMicros > MAX_BALANCE_MICROS) {
    return refuse("balance_limit");
  }
  const purchase = await bookPurchase(trx, fact, terms, account, payer, nowMs);
  const purchaseId = purchase.id;
  await settle(trx, { ...payment, purchase_id: purchaseId }, purchase, account, nowMs);
  // The refunds and disputes that waited for this grant (or were ignored with their payment
  // until another of its events granted it) are now applied.
  await trx
    .updateTable("stripe_events")
    .set({ outcome: "applied", reason: null, purchase_id: purchaseId })
    .where("project_id", "=", projectId)
    .where("payment_intent_id", "=", fact.paymentIntentId)
    .where((eb) =>
      eb.or([
        eb("outcome", "=", "pending"),
        eb.and([eb("outcome", "=", "ignored"), eb("reason", "=", PAYMENT_IGNORED)]),
      ]),
    )
    .execute();
  return { outcome: "applied", reason: null, purchaseId };
}

/** The grant's terms, as `purchaseTerms` gives them. */
type PurchaseTerms = Exclude<ReturnType<typeof purchaseTerms>, { reason: string }>;

/**
 * Books a purchase: the credit on `payer` (the account, or its pool on its behalf) with its
 * grant terms (expired at once when its expiry is past), the purchase row and its key, and
 * `credits.purchased`.
 * @returns the purchase
 */
async function bookPurchase(
  trx: Transaction<DB>,
  fact: PaymentFact,
  terms: PurchaseTerms,
  account: AccountRow,
  payer: AccountRow,
  nowMs: number,
): Promise<PurchaseRow> {
  const projectId = account.project_id;
  const purchaseId = newId("pur");
  const stripe = {
    paymentIntentId: fact.paymentIntentId,
    checkoutSessionId: fact.checkoutSessionId,
    invoiceId: fact.invoiceId,
    amountPaid: fact.amountPaid,
    currency: fact.currency,
  };
  await bookDueExpiries(trx, { projectId, accountId: payer.id }, nowMs);
  const row = await postEntry(trx, {
    projectId,
    accountId: payer.id,
    type: "credit",
    amountMicros: terms.creditsMicros,
    description: "Stripe purchase",
    metadata: { reason: "purchase", stripe },
    source: "purchase",
    nowMs,
    grant: { priority: terms.priority, expiresAtMs: terms.expiresAtMs },
    onBehalfOf: payer.id === account.id ? null : account.id,
  });
  // A grant whose expiry is already past is granted and expired at once.
  const after = await bookDueExpiries(trx, { projectId, accountId: payer.id }, nowMs);
  const purchase = purchaseRow(purchaseId, fact, terms, account, row.id, nowMs);
  await trx.insertInto("purchases").values(purchase).execute();
  await trx
    .insertInto("purchase_credits")
    .values({
      purchase_id: purchaseId,
      transaction_id: row.id,
      credits_micros: terms.creditsMicros,
      restored: 0,
    })
    .execute();
  await trx
    .updateTable("stripe_payments")
    .set({ purchase_id: purchaseId, ignored_reason: null })
    .where("project_id", "=", projectId)
    .where("payment_intent_id", "=", fact.paymentIntentId)
    .execute();
  await creditsPurchased.emit(trx, {
    projectId,
    nowMs,
    data: {
      accountId: account.id,
      externalId: account.external_id,
      purchaseId,
      transactionId: row.id,
      credits: fromMicros(terms.creditsMicros),
      balance: fromMicros(row.balance_after_micros - after.expiredMicros),
      restored: false,
    },
  });
  return purchase;
}

/** The purchase row of a grant: its credit `transactionId`, nothing refunded yet. */
function purchaseRow(
  purchaseId: string,
  fact: PaymentFact,
  terms: PurchaseTerms,
  account: AccountRow,
  transactionId: string,
  nowMs: number,
): PurchaseRow {
  const projectId = account.project_id;
  return {
    id: purchaseId,
    project_id: projectId,
    account_id: account.id,
    payment_intent_id: fact.paymentIntentId,
    checkout_session_id: fact.checkoutSessionId,
    invoice_id: fact.invoiceId,
    credits_micros: terms.creditsMicros,
    amount_paid: fact.amountPaid,
    currency: fact.currency,
    amount_refunded: 0,
    credits_uncollected_micros: 0,
    status: "paid",
    transaction_id: transactionId,
    priority: terms.priority,
    expires_at_ms: terms.expiresAtMs,
    created_at_ms: nowMs,
  };
}
