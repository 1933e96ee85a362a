/**
 * Purchases through Stripe (docs/api.md#selling-credits-through-stripe,
 * docs/design.md#stripe-purchases): a paid PaymentIntent that names the ledger grants credits
 * once, and its refunds and disputes take them back, inside the write unit of the event that
 * brings them.
 *
 * - Exactly once: every event of one PaymentIntent locks its `stripe_payments` row first
 *   (`lockPayment`; on SQLite the one writer serialises them anyway), so a purchase is booked by
 *   the first event that can book it and every other one finds it. Its unique key (project,
 *   PaymentIntent) is written in the grant's own transaction.
 * - Refunds and disputes are kept as state (the newest Charge's `amount_refunded`, each Refund's
 *   status, each Dispute's withdrawal and reinstatement), whatever their order and however often
 *   they come. A purchase's target is floor(min(1, (refunded + withdrawn and not reinstated) ÷
 *   amountPaid) × credits); `settle` moves what it has taken back and left uncollected to it:
 *   a rise reverses the purchase's credit and then its restores (newest first), each as far as
 *   it may be reversed (src/ledger/reversal.ts `reverseAtMost`), the rest uncollected; a fall
 *   first cancels the uncollected part, then books a restore. State that arrives before its
 *   grant is applied when the grant is booked.
 *
 * Credits in micro-credits; Stripe amounts in the currency's smallest unit.
 */
import { z } from "@hono/zod-openapi";
import type { Transaction } from "kysely";
import { findAccount } from "../accounts/lookup.ts";
import { poolIdOf } from "../accounts/placement.ts";
import { pathUp } from "../accounts/spending.ts";
import { forUpdateOnPostgres } from "../db/row-locks.ts";
import type { AccountRow, DB, PurchasesTable, StripePaymentsTable } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { ex } from "../http/examples.ts";
import { newId } from "../ids.ts";
import { postEntry } from "../ledger/core.ts";
import { bookDueExpiries } from "../ledger/expiry.ts";
import { reverseAtMost, reversedMicros } from "../ledger/reversal.ts";
import { fromMicros, literalToMicros, MAX_AMOUNT_MICROS, MAX_BALANCE_MICROS } from "../money.ts";
import { defineEvent } from "../webhooks/outbox.ts";
import type { AdjustmentFact, PaymentFact } from "./objects.ts";
import type { StripeConnection } from "./settings.ts";

/** What an event did (`stripe_events.outcome`), with its reason and purchase. */
export interface Outcome {
  outcome: "applied" | "duplicate" | "pending" | "ignored";
  reason: string | null;
  purchaseId: string | null;
}

type PaymentRow = StripePaymentsTable;
type PurchaseRow = PurchasesTable;

const DAY_MS = 86_400_000;
/** A `ledger_credits` value: digits, at most 6 decimals. */
const CREDITS_TEXT = /^[0-9]+(\.[0-9]{1,6})?$/;

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
async function readPurchase(trx: Transaction<DB>, id: string): Promise<PurchaseRow> {
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

/** The reason of a refund or dispute whose payment was ignored. */
const PAYMENT_IGNORED = "payment_ignored";

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
 * The account whose ledger a credit for `account` goes to (locked, with `account`'s path on
 * PostgreSQL): its own, or its pool's when its parent funds it (docs/api.md#pools-and-members).
 */
async function payerOf(trx: Transaction<DB>, account: AccountRow): Promise<AccountRow> {
  if (account.funding === "own") return account;
  await pathUp(trx, account);
  return findAccount(trx, account.project_id, await poolIdOf(trx, account));
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
  if (Number(payer.balance_micros) + terms.creditsMicros > MAX_BALANCE_MICROS) {
    return refuse("balance_limit");
  }
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
  const purchase: PurchaseRow = {
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
    transaction_id: row.id,
    priority: terms.priority,
    expires_at_ms: terms.expiresAtMs,
    created_at_ms: nowMs,
  };
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

/**
 * A refund or dispute event: its state is recorded; with a purchase, `settle` moves it to the
 * new target (`applied`, or `duplicate` when it moved nothing); without one it waits
 * (`pending`), or is `ignored` when its payment was.
 */
export async function applyAdjustment(
  trx: Transaction<DB>,
  connection: StripeConnection,
  fact: AdjustmentFact,
  nowMs: number,
): Promise<Outcome> {
  const { projectId } = connection;
  const pi = fact.paymentIntentId;
  const payment = await lockPayment(trx, projectId, pi);
  if (fact.kind === "charge_refunded") {
    const newer =
      payment.charge_refunded_at === null ||
      fact.createdSec > payment.charge_refunded_at ||
      (fact.createdSec === payment.charge_refunded_at &&
        fact.amountRefunded > (payment.charge_refunded ?? 0));
    if (newer) {
      payment.charge_refunded = fact.amountRefunded;
      payment.charge_refunded_at = fact.createdSec;
      await trx
        .updateTable("stripe_payments")
        .set({ charge_refunded: fact.amountRefunded, charge_refunded_at: fact.createdSec })
        .where("project_id", "=", projectId)
        .where("payment_intent_id", "=", pi)
        .execute();
    }
    for (const refund of fact.refunds) await seeRefund(trx, projectId, pi, refund, fact.createdSec);
  } else if (fact.kind === "refund_updated") {
    await seeRefund(trx, projectId, pi, fact.refund, fact.createdSec);
  } else {
    await trx
      .insertInto("stripe_disputes")
      .values({
        project_id: projectId,
        dispute_id: fact.disputeId,
        payment_intent_id: pi,
        amount: fact.amount,
        withdrawn: fact.change === "withdrawn" ? 1 : 0,
        reinstated: fact.change === "reinstated" ? 1 : 0,
      })
      .onConflict((oc) =>
        oc
          .columns(["project_id", "dispute_id"])
          .doUpdateSet(fact.change === "withdrawn" ? { withdrawn: 1 } : { reinstated: 1 }),
      )
      .execute();
  }
  if (payment.purchase_id === null) {
    return payment.ignored_reason === null
      ? { outcome: "pending", reason: null, purchaseId: null }
      : { outcome: "ignored", reason: PAYMENT_IGNORED, purchaseId: null };
  }
  const purchase = await readPurchase(trx, payment.purchase_id);
  const account = await findAccount(trx, projectId, purchase.account_id);
  const moved = await settle(trx, payment, purchase, account, nowMs);
  return { outcome: moved ? "applied" : "duplicate", reason: null, purchaseId: purchase.id };
}

/**
 * Records a Refund's amount and status: a `failed` or `canceled` status is final; otherwise the
 * status seen with the newest event (`seenAt`, seconds) wins.
 */
async function seeRefund(
  trx: Transaction<DB>,
  projectId: string,
  paymentIntentId: string,
  refund: { id: string; amount: number; status: string },
  seenAt: number,
) {
  const known = await trx
    .selectFrom("stripe_refunds")
    .select(["status", "seen_at"])
    .where("project_id", "=", projectId)
    .where("refund_id", "=", refund.id)
    .executeTakeFirst();
  if (known === undefined) {
    await trx
      .insertInto("stripe_refunds")
      .values({
        project_id: projectId,
        refund_id: refund.id,
        payment_intent_id: paymentIntentId,
        amount: refund.amount,
        status: refund.status,
        seen_at: seenAt,
      })
      .execute();
    return;
  }
  if (FAILED_REFUND.has(known.status)) return;
  if (!FAILED_REFUND.has(refund.status) && seenAt < Number(known.seen_at)) return;
  await trx
    .updateTable("stripe_refunds")
    .set({ amount: refund.amount, status: refund.status, seen_at: seenAt })
    .where("project_id", "=", projectId)
    .where("refund_id", "=", refund.id)
    .execute();
}

const FAILED_REFUND = new Set(["failed", "canceled"]);

/**
 * What a payment has had refunded and withdrawn by disputes (not reinstated), in the currency's
 * smallest unit: the refunds are the greater of the Refunds seen that did not fail and the
 * newest Charge's `amount_refunded` less the Refunds that failed after it.
 */
async function takenBack(trx: Transaction<DB>, payment: PaymentRow) {
  const refunds = await trx
    .selectFrom("stripe_refunds")
    .select(["amount", "status", "seen_at"])
    .where("project_id", "=", payment.project_id)
    .where("payment_intent_id", "=", payment.payment_intent_id)
    .execute();
  let okSum = 0;
  let failedLater = 0;
  for (const r of refunds) {
    if (!FAILED_REFUND.has(r.status)) okSum += Number(r.amount);
    else if (payment.charge_refunded_at !== null && Number(r.seen_at) >= payment.charge_refunded_at)
      failedLater += Number(r.amount);
  }
  const fromCharge =
    payment.charge_refunded === null ? 0 : Math.max(0, payment.charge_refunded - failedLater);
  const disputes = await trx
    .selectFrom("stripe_disputes")
    .select(["amount", "withdrawn", "reinstated"])
    .where("project_id", "=", payment.project_id)
    .where("payment_intent_id", "=", payment.payment_intent_id)
    .execute();
  const withdrawn = disputes
    .filter((d) => Number(d.withdrawn) === 1 && Number(d.reinstated) === 0)
    .reduce((sum, d) => sum + Number(d.amount), 0);
  return { refunded: Math.max(okSum, fromCharge), withdrawn };
}

/**
 * The credits a purchase has taken back so far (micro-credits): what its credit and restores
 * have had reversed (by clawbacks or by hand), less what its restores gave back; with those
 * credits, newest first (the purchase's own credit first, then its restores newest first).
 */
export async function clawedBack(trx: Transaction<DB>, purchaseId: string) {
  const credits = await trx
    .selectFrom("purchase_credits")
    .select(["transaction_id", "credits_micros", "restored"])
    .where("purchase_id", "=", purchaseId)
    .execute();
  let micros = 0;
  for (const c of credits) {
    micros += await reversedMicros(trx, c.transaction_id);
    if (Number(c.restored) === 1) micros -= Number(c.credits_micros);
  }
  const restores = credits.filter((c) => Number(c.restored) === 1).map((c) => c.transaction_id);
  const original = credits.filter((c) => Number(c.restored) === 0).map((c) => c.transaction_id);
  // Restore ids are time-ordered (ULIDs): newest first is descending.
  restores.sort((a, b) => (a < b ? 1 : a > b ? -1 : 0));
  return { micros, order: [...original, ...restores] };
}

/**
 * Moves a purchase to its target (module docstring): reversals of its credits or a restore,
 * `creditsUncollected`, `amountRefunded` and `status`, with their events.
 * @returns whether anything moved (credits, the uncollected part, the refunded amount or status)
 */
async function settle(
  trx: Transaction<DB>,
  payment: PaymentRow,
  purchase: PurchaseRow,
  account: AccountRow,
  nowMs: number,
): Promise<boolean> {
  const { refunded, withdrawn } = await takenBack(trx, payment);
  const paid = purchase.amount_paid;
  const credits = purchase.credits_micros;
  const share = Math.min(paid, refunded + withdrawn);
  const target =
    paid === 0
      ? share > 0
        ? credits
        : 0
      : Number((BigInt(share) * BigInt(credits)) / BigInt(paid));
  const back = await clawedBack(trx, purchase.id);
  let uncollected = purchase.credits_uncollected_micros;
  const current = back.micros + uncollected;
  let moved = false;
  if (target > current) {
    let need = target - current;
    const reversals: { transactionId: string; micros: number; balanceMicros: number }[] = [];
    for (const transactionId of back.order) {
      if (need === 0) break;
      const done = await takeBack(trx, purchase, transactionId, need, nowMs);
      if (done === undefined) continue;
      reversals.push(done);
      need -= done.micros;
    }
    uncollected += need;
    for (const [i, r] of reversals.entries()) {
      await creditsClawedBack.emit(trx, {
        projectId: purchase.project_id,
        nowMs,
        data: {
          accountId: account.id,
          externalId: account.external_id,
          purchaseId: purchase.id,
          transactionId: r.transactionId,
          credits: fromMicros(r.micros),
          creditsUncollected: fromMicros(i === reversals.length - 1 ? need : 0),
          balance: fromMicros(r.balanceMicros),
        },
      });
    }
    if (need > 0) {
      await clawbackIncomplete.emit(trx, {
        projectId: purchase.project_id,
        nowMs,
        data: {
          accountId: account.id,
          externalId: account.external_id,
          purchaseId: purchase.id,
          creditsUncollected: fromMicros(need),
          creditsUncollectedTotal: fromMicros(uncollected),
        },
      });
    }
    moved = true;
  } else if (target < current) {
    const fall = current - target;
    const cancelled = Math.min(fall, uncollected);
    uncollected -= cancelled;
    const rest = fall - cancelled;
    if (rest > 0) await restore(trx, purchase, account, rest, nowMs);
    moved = true;
  }
  const status: PurchaseRow["status"] =
    withdrawn > 0
      ? "disputed"
      : paid > 0 && refunded >= paid
        ? "refunded"
        : refunded > 0
          ? "partially_refunded"
          : "paid";
  const refundedNow = Math.min(refunded, paid);
  if (
    moved ||
    status !== purchase.status ||
    refundedNow !== purchase.amount_refunded ||
    uncollected !== purchase.credits_uncollected_micros
  ) {
    await trx
      .updateTable("purchases")
      .set({ status, amount_refunded: refundedNow, credits_uncollected_micros: uncollected })
      .where("id", "=", purchase.id)
      .execute();
    return true;
  }
  return false;
}

/**
 * Reverses up to `micros` of one of a purchase's credits (a clawback); nothing when none of it
 * may be reversed, also when its account is now funded by its parent (FUNDED_BY_PARENT: that
 * part stays uncollected).
 */
async function takeBack(
  trx: Transaction<DB>,
  purchase: PurchaseRow,
  transactionId: string,
  micros: number,
  nowMs: number,
) {
  try {
    const done = await reverseAtMost(
      trx,
      purchase.project_id,
      {
        transactionId,
        amountMicros: micros,
        description: "Stripe refund or dispute",
        metadata: { reason: "purchase_clawback", purchaseId: purchase.id },
      },
      nowMs,
    );
    return done === undefined
      ? undefined
      : {
          transactionId: done.row.id,
          micros: done.row.amount_micros,
          balanceMicros: done.balanceMicros,
        };
  } catch (err) {
    if (err instanceof ApiError && err.code === "FUNDED_BY_PARENT") return undefined;
    throw err;
  }
}

/**
 * Gives `micros` of a purchase back as a restore: a new credit with the purchase's priority and
 * expiry (expired at once when that is past), on the account or its pool.
 */
async function restore(
  trx: Transaction<DB>,
  purchase: PurchaseRow,
  account: AccountRow,
  micros: number,
  nowMs: number,
) {
  const payer = await payerOf(trx, account);
  const projectId = purchase.project_id;
  await bookDueExpiries(trx, { projectId, accountId: payer.id }, nowMs);
  const row = await postEntry(trx, {
    projectId,
    accountId: payer.id,
    type: "credit",
    amountMicros: micros,
    description: "Stripe refund or dispute reversed",
    metadata: {
      reason: "purchase_restored",
      purchaseId: purchase.id,
      stripe: { paymentIntentId: purchase.payment_intent_id },
    },
    source: "purchase",
    nowMs,
    grant: { priority: purchase.priority, expiresAtMs: purchase.expires_at_ms },
    onBehalfOf: payer.id === account.id ? null : account.id,
  });
  const after = await bookDueExpiries(trx, { projectId, accountId: payer.id }, nowMs);
  await trx
    .insertInto("purchase_credits")
    .values({
      purchase_id: purchase.id,
      transaction_id: row.id,
      credits_micros: micros,
      restored: 1,
    })
    .execute();
  await creditsPurchased.emit(trx, {
    projectId,
    nowMs,
    data: {
      accountId: account.id,
      externalId: account.external_id,
      purchaseId: purchase.id,
      transactionId: row.id,
      credits: fromMicros(micros),
      balance: fromMicros(row.balance_after_micros - after.expiredMicros),
      restored: true,
    },
  });
}

const credit = (example: number) => z.number().openapi({ example });

/** The `data` of `credits.purchased` (docs/api.md#event-types). */
export const creditsPurchasedData = z
  .object({
    accountId: z.string().openapi({ example: ex.accountId }),
    externalId: z.string().openapi({ example: ex.externalId }),
    purchaseId: z.string().openapi({ example: "pur_01M7YKB3F8Q2W6E4R0T9Y1U3I5" }),
    transactionId: z.string().openapi({ example: ex.addTxnId }),
    credits: credit(1000),
    balance: credit(1250),
    restored: z.boolean().openapi({ description: "A restore after a refund or dispute fell" }),
  })
  .openapi("CreditsPurchasedData");

/** The `data` of `credits.clawed_back`. */
export const creditsClawedBackData = z
  .object({
    accountId: z.string().openapi({ example: ex.accountId }),
    externalId: z.string().openapi({ example: ex.externalId }),
    purchaseId: z.string().openapi({ example: "pur_01M7YKB3F8Q2W6E4R0T9Y1U3I5" }),
    transactionId: z.string().openapi({ description: "The reversal", example: ex.addTxnId }),
    credits: credit(300),
    creditsUncollected: credit(0),
    balance: credit(950),
  })
  .openapi("CreditsClawedBackData");

/** The `data` of `purchase.clawback_incomplete`. */
export const clawbackIncompleteData = z
  .object({
    accountId: z.string().openapi({ example: ex.accountId }),
    externalId: z.string().openapi({ example: ex.externalId }),
    purchaseId: z.string().openapi({ example: "pur_01M7YKB3F8Q2W6E4R0T9Y1U3I5" }),
    creditsUncollected: credit(200),
    creditsUncollectedTotal: credit(200),
  })
  .openapi("PurchaseClawbackIncompleteData");

export const creditsPurchased = defineEvent("credits.purchased", creditsPurchasedData);
export const creditsClawedBack = defineEvent("credits.clawed_back", creditsClawedBackData);
export const clawbackIncomplete = defineEvent(
  "purchase.clawback_incomplete",
  clawbackIncompleteData,
);
