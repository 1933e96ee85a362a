/**
 * Refunds and disputes of purchases through Stripe (docs/api.md#refunds-and-disputes,
 * docs/design.md#stripe-purchases): kept as state (the newest Charge's `amount_refunded`, each
 * Refund's status, each Dispute's withdrawal and reinstatement), whatever their order and
 * however often they come. A purchase's target is floor(min(1, (refunded + withdrawn and not
 * reinstated) ÷ amountPaid) × credits); `settle` moves what it has taken back and left
 * uncollected to it: a rise reverses the purchase's credit and then its restores (newest first),
 * each as far as it may be reversed (src/ledger/reversal.ts `reverseAtMost`), the rest
 * uncollected; a fall first cancels the uncollected part, then books a restore.
 *
 * Credits in micro-credits; Stripe amounts in the currency's smallest unit.
 */
import type { Transaction } from "kysely";
import { findAccount } from "../accounts/lookup.ts";
import type { AccountRow, DB } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { postEntry } from "../ledger/core.ts";
import { bookDueExpiries } from "../ledger/expiry.ts";
import { reverseAtMost } from "../ledger/reversal.ts";
import { fromMicros } from "../money.ts";
import type { AdjustmentFact } from "./objects.ts";
import {
  clawedBackOf,
  lockPayment,
  type Outcome,
  PAYMENT_IGNORED,
  type PaymentRow,
  type PurchaseRow,
  payerOf,
  readPurchase,
} from "./payments.ts";
import { clawbackIncomplete, creditsClawedBack, creditsPurchased } from "./purchase-events.ts";
import type { StripeConnection } from "./settings.ts";

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
  if (!FAILED_REFUND.has(refund.status) && seenAt < known.seen_at) return;
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
    if (!FAILED_REFUND.has(r.status)) okSum += r.amount;
    else if (payment.charge_refunded_at !== null && r.seen_at >= payment.charge_refunded_at)
      failedLater += r.amount;
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
    .filter((d) => d.withdrawn === 1 && d.reinstated === 0)
    .reduce((sum, d) => sum + d.amount, 0);
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
    .select(["transaction_id", "restored"])
    .where("purchase_id", "=", purchaseId)
    // The purchase's credit first, then its restores newest first (their ids are ULIDs).
    .orderBy("restored")
    .orderBy("transaction_id", "desc")
    .execute();
  const micros = (await clawedBackOf(trx, [purchaseId])).get(purchaseId) ?? 0;
  return { micros, order: credits.map((c) => c.transaction_id) };
}

/**
 * Moves a purchase to its target (module docstring): reversals of its credits or a restore,
 * `creditsUncollected`, `amountRefunded` and `status`, with their events.
 * @returns whether anything moved (credits, the uncollected part, the refunded amount or status)
 */
export async function settle(
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
    uncollected += await rise(trx, purchase, account, back.order, target - current, nowMs);
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
 * A rise of the target by `micros`: reversals of the purchase's credits in `order`, each as far
 * as it may be reversed, with their `credits.clawed_back`, and `purchase.clawback_incomplete`
 * for what none could take back.
 * @returns the micro-credits left uncollected
 */
async function rise(
  trx: Transaction<DB>,
  purchase: PurchaseRow,
  account: AccountRow,
  order: readonly string[],
  micros: number,
  nowMs: number,
): Promise<number> {
  let need = micros;
  const reversals: { transactionId: string; micros: number; balanceMicros: number }[] = [];
  for (const transactionId of order) {
    if (need === 0) break;
    const done = await takeBack(trx, purchase, transactionId, need, nowMs);
    if (done === undefined) continue;
    reversals.push(done);
    need -= done.micros;
  }
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
        creditsUncollectedTotal: fromMicros(purchase.credits_uncollected_micros + need),
      },
    });
  }
  return need;
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
