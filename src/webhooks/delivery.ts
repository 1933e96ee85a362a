/**
 * The webhook delivery worker (docs/api.md#delivery, docs/design.md#webhook-delivery).
 *
 * Deliveries are rows of `webhook_deliveries`, written with their event in the transaction of
 * its cause (src/webhooks/outbox.ts). The worker runs beside the API, off the request path:
 *
 * 1. It looks for endpoints with due deliveries with a plain read; only when there are some
 *    does it claim, in one short write unit, endpoints in turn with their oldest due deliveries
 *    (src/webhooks/claim.ts): a lease on the endpoint and on each delivery, under a token of its
 *    own. An endpoint is in one claim at a time, across processes.
 * 2. It resolves the endpoint's host once, checks every address (src/webhooks/targets.ts), and
 *    POSTs each claimed event to the checked address outside any transaction
 *    (src/webhooks/send.ts); a 2xx within WEBHOOK_TIMEOUT_SECONDS is delivered, anything else
 *    is a failed attempt.
 * 3. It records each outcome in a short write unit guarded by its lease token: `delivered`;
 *    `pending` again after the next delay of WEBHOOK_RETRY_SECONDS; or `failed` after the last.
 *    When the batch is over, the last record also frees the endpoint and notes whether it
 *    answered.
 *
 * Slots: WEBHOOK_CONCURRENCY bounds the attempts in their first SLOT_HOLD_MS. An attempt still
 * waiting after that gives its slot back (it keeps running until its timeout), so endpoints
 * that hang can hold sockets but never the slots: a healthy endpoint's due delivery is claimed
 * within SLOT_HOLD_MS and a poll of being due, however many endpoints hang.
 *
 * A process that dies between 1 and 3 leaves its rows pending under leases that run out, after
 * which any process attempts them again: delivery is at least once, across `kill -9`.
 */
import { randomUUID } from "node:crypto";
import type { Database } from "../db/client.ts";
import type { Clock, WriteQueue } from "../db/write-path.ts";
import type { Logger } from "../logger.ts";
import type { DeliveryOutcome, Metrics } from "../metrics.ts";
import {
  anyDue,
  type ClaimedBatch,
  type ClaimedDelivery,
  claimBatches,
  handBack,
  recordAttempt,
  releaseEndpoint,
  type Standing,
} from "./claim.ts";
import { type AttemptResult, postEvent } from "./send.ts";
import { type CheckedTarget, resolveTarget, type TargetPolicy, TargetRefused } from "./targets.ts";

/** How much longer than one attempt's timeout a claim holds a delivery, in milliseconds. */
export const LEASE_MARGIN_MS = 10_000;

/** How long an attempt holds one of the WEBHOOK_CONCURRENCY slots at most, in milliseconds. */
export const SLOT_HOLD_MS = 250;

/** Most deliveries of one answering endpoint in one claim (a new or stalled endpoint: 1). */
export const PER_ENDPOINT = 4;

export interface DeliveryWorkerOptions {
  db: Database;
  queue: WriteQueue;
  /** The ledger's clock: due times, leases and `deliveredAt` (epoch ms). */
  clock: Clock;
  logger: Logger;
  metrics?: Metrics;
  /** Delays before each retry, in seconds (WEBHOOK_RETRY_SECONDS). */
  retrySeconds: readonly number[];
  /** Seconds an endpoint has to answer (WEBHOOK_TIMEOUT_SECONDS). */
  timeoutSeconds: number;
  /** Most attempts starting at once (WEBHOOK_CONCURRENCY); see SLOT_HOLD_MS. */
  concurrency: number;
  /** Milliseconds between looks for due deliveries while there are none (WEBHOOK_POLL_MS). */
  pollMs: number;
  /** Which addresses may be reached (WEBHOOK_ALLOW_PRIVATE, and the resolver). */
  targets: TargetPolicy;
}

export interface DeliveryWorker {
  /**
   * Stops claiming, aborts the attempts on the wire and hands their deliveries back (pending,
   * due at once, the attempt not counted); resolves when nothing of the worker runs any more.
   */
  stop(): Promise<void>;
}

/** Starts the worker's loop. @returns its handle */
export function startDeliveryWorker(opts: DeliveryWorkerOptions): DeliveryWorker {
  const abort = new AbortController();
  const pause = nudgeableSleep();
  const slots = attemptSlots(pause.nudge);
  const state = { stopped: false };
  const looping = deliveryLoop(opts, state, pause, slots, abort.signal);
  return {
    stop: async () => {
      state.stopped = true;
      pause.interrupt();
      abort.abort();
      await looping;
      await slots.drain();
    },
  };
}

/** The loop's sleep between looks, which a freed slot or a stop ends early. */
type NudgeableSleep = ReturnType<typeof nudgeableSleep>;

/** A sleep that `nudge` ends now, or, when none is running, makes the next one end at once. */
function nudgeableSleep() {
  let wake: (() => void) | undefined;
  let nudged = false;
  return {
    nudge(): void {
      if (wake) wake();
      else nudged = true;
    },
    /** Ends the running sleep, if any (a stop). */
    interrupt(): void {
      wake?.();
    },
    sleep(ms: number): Promise<void> {
      return new Promise<void>((resolve) => {
        if (nudged) {
          nudged = false;
          resolve();
          return;
        }
        const timer = setTimeout(done, ms);
        function done() {
          clearTimeout(timer);
          wake = undefined;
          resolve();
        }
        wake = done;
      });
    },
  };
}

/** The attempts on the wire, and the slots they hold. */
type AttemptSlots = ReturnType<typeof attemptSlots>;

/**
 * The attempts running: each holds a slot until it ends or SLOT_HOLD_MS has passed, and
 * `onFree` is called whenever a slot is given back or an attempt ends.
 */
function attemptSlots(onFree: () => void) {
  const inFlight = new Set<Promise<void>>();
  let holding = 0;
  return {
    holding: () => holding,
    /** Runs one attempt, holding a slot. */
    track(work: () => Promise<void>): void {
      holding++;
      let held = true;
      const giveBack = () => {
        if (!held) return;
        held = false;
        holding--;
        onFree();
      };
      const timer = setTimeout(giveBack, SLOT_HOLD_MS);
      const running: Promise<void> = work().finally(() => {
        clearTimeout(timer);
        giveBack();
        inFlight.delete(running);
        onFree();
      });
      inFlight.add(running);
    },
    /** Resolves when no attempt runs any more. */
    async drain(): Promise<void> {
      while (inFlight.size > 0) await Promise.all(inFlight);
    },
  };
}

/**
 * Claims due deliveries while slots are free and starts their attempts, sleeping `pollMs`
 * between looks when it took fewer than it could; ends when `state.stopped`.
 */
async function deliveryLoop(
  opts: DeliveryWorkerOptions,
  state: { stopped: boolean },
  pause: NudgeableSleep,
  slots: AttemptSlots,
  signal: AbortSignal,
): Promise<void> {
  const health: { failingSince?: number } = {};
  while (!state.stopped) {
    const free = opts.concurrency - slots.holding();
    const claimed = free > 0 ? await claimReporting(opts, free, health) : [];
    // Claimed while stopping: run anyway, so the aborted attempts hand their rows back now.
    for (const batch of claimed) runBatch(opts, batch, signal, slots.track);
    const took = claimed.reduce((n, b) => n + b.deliveries.length, 0);
    // Claimed all it could: more may be due, look again at once (or once a slot is free).
    if (state.stopped) break;
    if (took === 0 || took < free || opts.concurrency - slots.holding() <= 0) {
      await pause.sleep(opts.pollMs);
    }
  }
}

/**
 * `claimDue`, but a database that is unavailable claims nothing: the next look tries again, and
 * the worker says so once (and once more when it is back).
 */
async function claimReporting(
  opts: DeliveryWorkerOptions,
  free: number,
  health: { failingSince?: number },
): Promise<ClaimedBatch[]> {
  try {
    const claimed = await claimDue(opts, free);
    if (health.failingSince !== undefined) opts.logger.info({}, "webhook worker: database back");
    health.failingSince = undefined;
    return claimed;
  } catch (err) {
    if (health.failingSince === undefined) {
      opts.logger.warn({ err: errorText(err) }, "webhook worker: cannot claim deliveries");
    }
    health.failingSince ??= Date.now();
    return [];
  }
}

/** Claims up to `limit` due deliveries for this process (none due: no write unit at all). */
async function claimDue(opts: DeliveryWorkerOptions, limit: number): Promise<ClaimedBatch[]> {
  if (!(await anyDue(opts.db.read, opts.clock()))) return [];
  const token = randomUUID();
  const leaseMs = opts.timeoutSeconds * 1000 + LEASE_MARGIN_MS;
  return opts.queue.run((trx, nowMs) =>
    claimBatches(trx, nowMs, {
      deliveries: limit,
      perEndpoint: PER_ENDPOINT,
      leaseUntilMs: nowMs + leaseMs,
      token,
    }),
  );
}

/**
 * Attempts every delivery of a batch, each in a slot of its own (`track`), to the address its
 * host resolved to once for the batch; the last one to finish frees the endpoint.
 */
function runBatch(
  opts: DeliveryWorkerOptions,
  batch: ClaimedBatch,
  stopping: AbortSignal,
  track: (work: () => Promise<void>) => void,
): void {
  const timeoutMs = opts.timeoutSeconds * 1000;
  const target = checkTarget(batch.url, opts.targets, timeoutMs);
  let left = batch.deliveries.length;
  let answered = false;
  let unanswered = false;
  for (const delivery of batch.deliveries) {
    track(async () => {
      const checked = await target;
      const result =
        "refused" in checked
          ? checked.refused
          : await postEvent(
              checked,
              { eventId: delivery.eventId, payload: delivery.payload, secret: batch.secret },
              timeoutMs,
              stopping,
            );
      const stopped = stopping.aborted && !result.ok;
      if (!stopped) {
        if (result.statusCode === null) unanswered = true;
        else answered = true;
      }
      left--;
      const standing: Standing | undefined =
        left > 0 ? undefined : answered ? "answered" : unanswered ? "stalled" : "unchanged";
      await settle(opts, batch, delivery, result, stopped, standing).catch((err: unknown) => {
        opts.logger.warn({ deliveryId: delivery.id, err: errorText(err) }, "webhook record failed");
      });
    });
  }
}

/** The checked target of `url`, or the failed attempt its refusal or resolution error is. */
async function checkTarget(
  url: string,
  policy: TargetPolicy,
  timeoutMs: number,
): Promise<CheckedTarget | { refused: AttemptResult }> {
  try {
    return await resolveTarget(new URL(url), policy, timeoutMs);
  } catch (err) {
    const error =
      err instanceof TargetRefused ? err.message : (codeOf(err) ?? "cannot resolve the host");
    return { refused: { ok: false, statusCode: null, error } };
  }
}

/**
 * Records one attempt (or, when stopping, hands the delivery back untried) and, with
 * `standing`, frees the endpoint in the same write unit; then counts and logs the outcome.
 */
async function settle(
  opts: DeliveryWorkerOptions,
  batch: ClaimedBatch,
  delivery: ClaimedDelivery,
  result: AttemptResult,
  stopped: boolean,
  standing: Standing | undefined,
): Promise<void> {
  const lease = { id: delivery.id, token: batch.token };
  const attempts = delivery.attempts + 1;
  const delay = opts.retrySeconds[attempts - 1];
  const outcome: DeliveryOutcome = result.ok
    ? "delivered"
    : delay === undefined
      ? "failed"
      : "retried";
  const recorded = await opts.queue.run(async (trx, nowMs) => {
    let done = false;
    if (stopped) await handBack(trx, lease);
    else {
      done = await recordAttempt(trx, nowMs, lease, {
        status: outcome === "retried" ? "pending" : outcome,
        attempts,
        statusCode: result.statusCode,
        error: result.error,
        nextAttemptAtMs: outcome === "retried" ? nowMs + Math.round((delay ?? 0) * 1000) : null,
      });
    }
    if (standing !== undefined) await releaseEndpoint(trx, nowMs, batch, standing);
    return done;
  });
  // Not recorded: stopping, the endpoint was deleted meanwhile, or the lease ran out and another
  // process owns the delivery now; its outcome is that process's to count.
  if (!recorded) return;
  opts.metrics?.observeWebhookDelivery(outcome);
  if (!result.ok) {
    opts.logger.info(
      {
        deliveryId: delivery.id,
        webhookId: batch.webhookId,
        eventId: delivery.eventId,
        attempts,
        statusCode: result.statusCode,
        error: result.error,
        outcome,
      },
      "webhook attempt failed",
    );
  }
}

/** A system error's code (`ENOTFOUND`, `EAI_AGAIN`, …), if it has one. */
function codeOf(err: unknown): string | undefined {
  const code = err instanceof Error ? (err as { code?: unknown }).code : undefined;
  return typeof code === "string" ? code : undefined;
}

/** A database error for the log: its message, shortened. */
function errorText(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).slice(0, 200);
}
