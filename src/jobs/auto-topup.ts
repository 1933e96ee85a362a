/**
 * The automatic top-up worker (docs/api.md#automatic-top-up, docs/design.md#automatic-top-up).
 * Attempts are rows of `auto_topup_attempts`, queued in the transaction of the write that calls
 * for them (src/accounts/auto-topup.ts). The worker runs beside the API in every serving
 * process, off the request path:
 *
 * 1. Every poll it reads the pending attempts that are due and claims each by moving its
 *    `next_try_at_ms` one lease ahead, guarded by the value it read (one process wins).
 * 2. Outside any transaction it reads the customer's default payment method and creates and
 *    confirms an off-session PaymentIntent, with the attempt's id as Stripe's Idempotency-Key
 *    and the same parameters every time: a retry after a crash, a timeout or a lease that ran
 *    out returns the same PaymentIntent and never charges twice.
 * 3. It records the answer in a short unit: a success grants through the purchase key
 *    (src/stripe/topup.ts, once, whether the webhook came first or not); a decline fails the
 *    attempt; `processing` waits for the webhook (an hour at most); no answer (a network error,
 *    a timeout, a 429, a 5xx, `idempotency_key_in_use`) retries later with the same key, for
 *    an hour from the first, then fails as `unreachable`.
 *
 * A process killed between 2 and 3 leaves the attempt pending under a lease that runs out,
 * after which any process retries it with the same key.
 */
import type { Transaction } from "kysely";
import type Stripe from "stripe";
import { failAttempt, readAttempt } from "../accounts/auto-topup.ts";
import { findAccount } from "../accounts/lookup.ts";
import type { Database } from "../db/client.ts";
import type { AutoTopupAttemptsTable, DB } from "../db/schema.ts";
import type { Clock, WriteQueue } from "../db/write-path.ts";
import type { Logger } from "../logger.ts";
import { fromMicros } from "../money.ts";
import { stripeClient } from "../stripe/api.ts";
import { readConnection, type StripeConnection } from "../stripe/settings.ts";
import { ATTEMPT_KEY, grantAttempt } from "../stripe/topup.ts";

/** How long Stripe may go unanswered (or a PaymentIntent stay `processing`) before `unreachable`. */
export const UNANSWERED_MS = 3_600_000;

export interface AutoTopupWorkerOptions {
  db: Database;
  queue: WriteQueue;
  clock: Clock;
  logger: Logger;
  /** Milliseconds between two looks for due attempts. */
  pollMs: number;
  /** Seconds a claim keeps other processes off an attempt. */
  leaseSeconds: number;
  /** `STRIPE_API_URL`. */
  apiUrl: string;
}

export interface AutoTopupWorker {
  /** Looks for due attempts now (a test's shortcut; the loop looks every poll anyway). */
  runOnce(): Promise<number>;
  stop(): Promise<void>;
}

type Attempt = AutoTopupAttemptsTable;

/** Starts the worker's loop. */
export function startAutoTopupWorker(opts: AutoTopupWorkerOptions): AutoTopupWorker {
  const state = { stopped: false };
  let wake: (() => void) | undefined;
  const loop = (async () => {
    while (!state.stopped) {
      try {
        await runDue(opts);
      } catch (err) {
        opts.logger.warn({ err: String(err) }, "auto top-up: a look for due attempts failed");
      }
      if (state.stopped) break;
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, opts.pollMs).unref?.();
      });
    }
  })();
  return {
    runOnce: () => runDue(opts),
    stop: async () => {
      state.stopped = true;
      wake?.();
      await loop;
    },
  };
}

/** Claims and runs the due attempts. @returns how many it ran */
async function runDue(opts: AutoTopupWorkerOptions): Promise<number> {
  const nowMs = opts.clock();
  const due = await opts.db.read
    .selectFrom("auto_topup_attempts")
    .select(["id", "next_try_at_ms"])
    .where("status", "=", "pending")
    .where("next_try_at_ms", "<=", nowMs)
    .orderBy("next_try_at_ms")
    .limit(20)
    .execute();
  let ran = 0;
  for (const row of due) {
    const claimed = await opts.queue.run(async (trx, now) => {
      const done = await trx
        .updateTable("auto_topup_attempts")
        .set({ next_try_at_ms: now + opts.leaseSeconds * 1000 })
        .where("id", "=", row.id)
        .where("status", "=", "pending")
        .where("next_try_at_ms", "=", row.next_try_at_ms)
        .executeTakeFirst();
      return Number(done.numUpdatedRows) === 1 ? await readAttempt(trx, row.id) : undefined;
    });
    if (claimed === undefined) continue;
    ran++;
    try {
      await runAttempt(opts, claimed);
    } catch (err) {
      opts.logger.warn(
        { attemptId: claimed.id, err: String(err) },
        "auto top-up attempt failed to run",
      );
    }
  }
  return ran;
}

/** What the attempt's try came to. */
type TryResult =
  | { kind: "succeeded"; intent: Stripe.PaymentIntent }
  | { kind: "failed"; reason: string }
  | { kind: "processing"; intentId: string }
  | { kind: "unanswered" };

/** One try of a claimed attempt, and its record. */
async function runAttempt(opts: AutoTopupWorkerOptions, attempt: Attempt): Promise<void> {
  const connection = await readConnection(opts.db.read, attempt.project_id);
  const account = await findAccount(opts.db.read, attempt.project_id, attempt.account_id, {
    lock: false,
  });
  const secretKey = connection?.secretKey ?? null;
  let result: TryResult;
  if (connection === null || secretKey === null || account.stripe_customer_id === null) {
    result = { kind: "failed", reason: "not_configured" };
  } else {
    result = await tryStripe(
      stripeClient(secretKey, opts.apiUrl),
      attempt,
      account.stripe_customer_id,
    );
  }
  await opts.queue.run((trx, nowMs) => recordTry(trx, attempt, connection, result, nowMs));
}

/**
 * Records a try's result in the attempt's unit: a success grants (also for an attempt the
 * webhook settled meanwhile: the purchase key grants once); a failure fails it; `processing`
 * waits an hour at most; no answer is retried after a growing pause, for an hour at most.
 */
async function recordTry(
  trx: Transaction<DB>,
  attempt: Attempt,
  connection: StripeConnection | null,
  result: TryResult,
  nowMs: number,
): Promise<void> {
  const now = await readAttempt(trx, attempt.id);
  if (now === undefined || now.status !== "pending") {
    // The webhook settled it meanwhile; a late success still grants through the purchase key.
    if (result.kind === "succeeded" && connection !== null && now !== undefined) {
      await grantAttempt(trx, connection, now, intentOf(result.intent), nowMs);
    }
    return;
  }
  const held = await findAccount(trx, attempt.project_id, attempt.account_id);
  switch (result.kind) {
    case "succeeded":
      if (connection !== null) {
        await grantAttempt(trx, connection, now, intentOf(result.intent), nowMs);
      }
      return;
    case "failed":
      await failAttempt(trx, held, now, result.reason, nowMs);
      return;
    case "processing": {
      const since = now.processing_since_ms ?? nowMs;
      if (nowMs - since >= UNANSWERED_MS) {
        await failAttempt(trx, held, now, "unreachable", nowMs);
        return;
      }
      await trx
        .updateTable("auto_topup_attempts")
        .set({
          payment_intent_id: result.intentId,
          processing_since_ms: since,
          next_try_at_ms: nowMs + 60_000,
        })
        .where("id", "=", now.id)
        .execute();
      return;
    }
    case "unanswered": {
      const first = now.first_unanswered_at_ms ?? nowMs;
      if (nowMs - first >= UNANSWERED_MS) {
        await failAttempt(trx, held, now, "unreachable", nowMs);
        return;
      }
      const tries = Math.max(0, Math.round((nowMs - first) / 5000));
      await trx
        .updateTable("auto_topup_attempts")
        .set({
          first_unanswered_at_ms: first,
          next_try_at_ms: nowMs + Math.min(60_000, 1000 * 2 ** Math.min(tries, 6)),
        })
        .where("id", "=", now.id)
        .execute();
      return;
    }
  }
}

function intentOf(intent: Stripe.PaymentIntent) {
  return { id: intent.id, amountReceived: intent.amount_received, createdSec: intent.created };
}

/**
 * Reads the customer's default payment method and creates and confirms the PaymentIntent, the
 * attempt's id as its Idempotency-Key.
 */
async function tryStripe(stripe: Stripe, attempt: Attempt, customerId: string): Promise<TryResult> {
  try {
    const customer = await stripe.customers.retrieve(customerId);
    const method =
      "deleted" in customer && customer.deleted
        ? null
        : ((customer as Stripe.Customer).invoice_settings?.default_payment_method ?? null);
    if (method === null) return { kind: "failed", reason: "no_payment_method" };
    const intent = await stripe.paymentIntents.create(
      {
        customer: customerId,
        payment_method: typeof method === "string" ? method : method.id,
        amount: attempt.amount_cents,
        currency: "usd",
        confirm: true,
        off_session: true,
        automatic_payment_methods: { enabled: true, allow_redirects: "never" },
        metadata: {
          ledger_account: attempt.account_id,
          ledger_credits: fromMicros(attempt.credits_micros).literal,
          [ATTEMPT_KEY]: attempt.id,
        },
      },
      { idempotencyKey: attempt.id },
    );
    switch (intent.status) {
      case "succeeded":
        return { kind: "succeeded", intent };
      case "processing":
        return { kind: "processing", intentId: intent.id };
      case "requires_action":
        return { kind: "failed", reason: "requires_action" };
      default: {
        const error = intent.last_payment_error;
        return { kind: "failed", reason: error?.decline_code || error?.code || intent.status };
      }
    }
  } catch (err) {
    return failureOf(err);
  }
}

/**
 * A Stripe error as a try's result: no answer (network, timeout, 429, 5xx, a concurrent request
 * with the same key) retries; a card error or another refusal fails with its `decline_code`,
 * else its `code`.
 */
function failureOf(err: unknown): TryResult {
  const e = err as {
    type?: string;
    statusCode?: number;
    code?: string;
    decline_code?: string;
    raw?: { decline_code?: string };
  };
  const status = e.statusCode ?? 0;
  if (
    e.type === "StripeConnectionError" ||
    e.type === "StripeRateLimitError" ||
    e.type === "StripeAPIError" ||
    status === 429 ||
    status >= 500 ||
    status === 0 ||
    e.code === "idempotency_key_in_use"
  ) {
    return { kind: "unanswered" };
  }
  // The library sets a card error's missing decline_code to "": an empty code is none.
  return {
    kind: "failed",
    reason: e.decline_code || e.raw?.decline_code || e.code || "stripe_error",
  };
}
