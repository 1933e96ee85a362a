/**
 * The Stripe side of an automatic top-up attempt (docs/api.md#automatic-top-up): its
 * PaymentIntent's success grants the credits through the purchase key of section 25
 * (purchases.ts `applyPayment`), whichever comes first, the API's answer or the webhook, and
 * marks the attempt succeeded; its failure fails the attempt. The attempt names itself in the
 * PaymentIntent's `metadata.ledger_auto_topup`.
 */
import type { Transaction } from "kysely";
import { failAttempt, readAttempt, succeedAttempt } from "../accounts/auto-topup.ts";
import { findAccount } from "../accounts/lookup.ts";
import type { DB } from "../db/schema.ts";
import { fromMicros } from "../money.ts";
import type { PaymentFact } from "./objects.ts";
import type { Outcome } from "./payments.ts";
import { applyPayment } from "./purchases.ts";
import type { StripeConnection } from "./settings.ts";

/** The metadata key naming the attempt of a top-up's PaymentIntent. */
export const ATTEMPT_KEY = "ledger_auto_topup";

/** What the attempt's PaymentIntent is, as Stripe gave it. */
export interface SucceededIntent {
  id: string;
  amountReceived: number;
  createdSec: number;
}

/**
 * The purchase fact of attempt `attemptId`'s succeeded PaymentIntent: the attempt's account and
 * credits, as its metadata names them.
 */
export function attemptPayment(
  attempt: { id: string; account_id: string; credits_micros: number },
  intent: SucceededIntent,
): PaymentFact {
  return {
    kind: "payment",
    paymentIntentId: intent.id,
    accountRefs: [attempt.account_id],
    customerId: null,
    metadata: {
      ledger_account: attempt.account_id,
      ledger_credits: fromMicros(attempt.credits_micros).literal,
      [ATTEMPT_KEY]: attempt.id,
    },
    amountPaid: intent.amountReceived,
    currency: "usd",
    createdSec: intent.createdSec,
    checkoutSessionId: null,
    invoiceId: null,
  };
}

/**
 * After a payment event or answer granted (or found granted) the purchase of `fact`: when the
 * fact names an attempt, marks it succeeded with the purchase (once), with the paying
 * account's balance. An ignored grant (say the balance would pass 9e9) fails the attempt.
 */
export async function afterTopUpPayment(
  trx: Transaction<DB>,
  fact: PaymentFact,
  outcome: Outcome,
  nowMs: number,
): Promise<void> {
  const attemptId = fact.metadata[ATTEMPT_KEY];
  if (attemptId === undefined) return;
  const attempt = await readAttempt(trx, attemptId);
  if (attempt === undefined) return;
  const account = await findAccount(trx, attempt.project_id, attempt.account_id);
  if (outcome.purchaseId === null) {
    await failAttempt(trx, account, attempt, outcome.reason ?? "not_granted", nowMs);
    return;
  }
  await succeedAttempt(
    trx,
    account,
    attempt.id,
    {
      id: outcome.purchaseId,
      paymentIntentId: fact.paymentIntentId,
      creditsMicros: attempt.credits_micros,
    },
    Number(account.balance_micros),
    nowMs,
  );
}

/**
 * The attempt's PaymentIntent succeeded (the worker's answer): grants through the purchase key
 * and marks the attempt succeeded, in the caller's unit.
 */
export async function grantAttempt(
  trx: Transaction<DB>,
  connection: StripeConnection,
  attempt: { id: string; account_id: string; credits_micros: number },
  intent: SucceededIntent,
  nowMs: number,
): Promise<Outcome> {
  const fact = attemptPayment(attempt, intent);
  const outcome = await applyPayment(trx, connection, fact, nowMs);
  await afterTopUpPayment(trx, fact, outcome, nowMs);
  return outcome;
}
