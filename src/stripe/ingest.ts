/**
 * One accepted Stripe event, recorded and applied in one write unit
 * (docs/api.md#selling-credits-through-stripe): its `stripe_events` row (once by its Stripe id,
 * counting deliveries), then what its object asks (src/stripe/purchases.ts). A redelivered event
 * is applied again, which changes nothing that it already did; its listed outcome stays the
 * first one, unless the new delivery applied something (a payment ignored while its account did
 * not exist, say).
 */
import type { Transaction } from "kysely";
import { failAttempt, readAttempt } from "../accounts/auto-topup.ts";
import { findAccount } from "../accounts/lookup.ts";
import type { DB } from "../db/schema.ts";
import { applyAdjustment } from "./clawback.ts";
import type { EventFact, IntentFailedFact, PaymentFact, StripeEvent } from "./objects.ts";
import { lockPayment, type Outcome } from "./payments.ts";
import { applyIgnoredPayment, applyPayment } from "./purchases.ts";
import type { StripeConnection } from "./settings.ts";
import { afterTopUpPayment } from "./topup.ts";

/** What the webhook answers: the event's listed outcome after this delivery. */
export interface Ingested extends Outcome {
  eventId: string;
  deliveries: number;
}

/**
 * Records `event` (its facts `fact`, an invoice's PaymentIntent already resolved) and applies it.
 * @returns the event's outcome as listed after this delivery
 */
export async function ingestEvent(
  trx: Transaction<DB>,
  connection: StripeConnection,
  event: StripeEvent,
  fact: Exclude<EventFact, { kind: "invoice_without_intent" }>,
  nowMs: number,
): Promise<Ingested> {
  const { projectId } = connection;
  const paymentIntentId = fact.paymentIntentId;
  // The payment's row first, then the event's: a grant, under the payment's lock, marks the
  // payment's pending events applied, so a delivery holding its event's row while it waited for
  // the payment would deadlock with it. One order for every event of a payment: the payment,
  // then event rows (deliveries of one event take turns on its row).
  if (paymentIntentId !== null && fact.kind !== "intent_failed") {
    await lockPayment(trx, projectId, paymentIntentId);
  }
  const recorded = await trx
    .insertInto("stripe_events")
    .values({
      project_id: projectId,
      id: event.id,
      type: event.type,
      received_at_ms: nowMs,
      deliveries: 1,
      outcome: "pending",
      reason: null,
      purchase_id: null,
      payment_intent_id: paymentIntentId,
    })
    .onConflict((oc) =>
      oc
        .columns(["project_id", "id"])
        .doUpdateSet((eb) => ({ deliveries: eb("stripe_events.deliveries", "+", 1) })),
    )
    .returning(["deliveries", "outcome", "reason", "purchase_id"])
    .executeTakeFirstOrThrow();
  const deliveries = Number(recorded.deliveries);
  const outcome = await apply(trx, connection, fact, nowMs);
  const first = deliveries === 1;
  const keep = !first && !(outcome.outcome === "applied" && recorded.outcome !== "applied");
  const listed: Outcome = keep
    ? {
        outcome: recorded.outcome,
        reason: recorded.reason,
        purchaseId: recorded.purchase_id ?? outcome.purchaseId,
      }
    : outcome;
  // A redelivery of a pending event that its grant applied meanwhile reads back `applied`.
  const row = await trx
    .updateTable("stripe_events")
    .set({ outcome: listed.outcome, reason: listed.reason, purchase_id: listed.purchaseId })
    .where("project_id", "=", projectId)
    .where("id", "=", event.id)
    .returning(["outcome", "reason", "purchase_id"])
    .executeTakeFirstOrThrow();
  return {
    eventId: event.id,
    deliveries,
    outcome: row.outcome,
    reason: row.reason,
    purchaseId: row.purchase_id,
  };
}

async function apply(
  trx: Transaction<DB>,
  connection: StripeConnection,
  fact: Exclude<EventFact, { kind: "invoice_without_intent" }>,
  nowMs: number,
): Promise<Outcome> {
  switch (fact.kind) {
    case "payment": {
      const outcome = await applyPayment(trx, connection, fact, nowMs);
      await afterTopUpPayment(trx, fact, outcome, nowMs);
      return outcome;
    }
    case "intent_failed":
      return failedIntent(trx, fact, nowMs);
    case "ignored":
      return fact.paymentIntentId === null
        ? { outcome: "ignored", reason: fact.reason, purchaseId: null }
        : applyIgnoredPayment(trx, connection.projectId, fact.paymentIntentId, fact.reason);
    default:
      return applyAdjustment(trx, connection, fact, nowMs);
  }
}

/**
 * A failed or canceled PaymentIntent of an automatic top-up attempt: fails the attempt while it
 * is pending (`applied`); else it moved nothing (`duplicate`).
 */
async function failedIntent(
  trx: Transaction<DB>,
  fact: IntentFailedFact,
  nowMs: number,
): Promise<Outcome> {
  const attempt = await readAttempt(trx, fact.attemptId);
  if (attempt === undefined)
    return { outcome: "ignored", reason: "unknown_attempt", purchaseId: null };
  const account = await findAccount(trx, attempt.project_id, attempt.account_id);
  const failed = await failAttempt(trx, account, attempt, fact.reason, nowMs);
  return { outcome: failed ? "applied" : "duplicate", reason: null, purchaseId: null };
}

/** An invoice's payment fact once its PaymentIntent is known. */
export function withIntent(
  payment: Omit<PaymentFact, "paymentIntentId">,
  paymentIntentId: string,
): PaymentFact {
  return { ...payment, paymentIntentId };
}
