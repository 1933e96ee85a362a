/**
 * The webhook delivery worker (docs/api.md#delivery, docs/design.md#webhook-delivery).
 *
 * Deliveries are rows of `webhook_deliveries`, written with their event in the transaction of
 * its cause (src/webhooks/outbox.ts). The worker runs beside the API, off the request path:
 *
 * 1. It looks for due rows with a plain read; only when there are some does it claim up to its
 *    free slots in one short write unit, setting `locked_until_ms` (a lease longer than one
 *    attempt) and a `lease_token` of its own. On PostgreSQL the rows are taken `FOR UPDATE SKIP
 *    LOCKED`, so two processes never claim one row, and a claimed row is not due again before its
 *    lease runs out: a delivery is attempted by at most one process at a time.
 * 2. It POSTs each claimed event outside any transaction, at most WEBHOOK_CONCURRENCY at once,
 *    signed with the endpoint's secret by the `standardwebhooks` library; a 2xx status within
 *    WEBHOOK_TIMEOUT_SECONDS is delivered, anything else (another status, a redirect, which is
 *    not followed, a timeout, a refused connection) is a failed attempt.
 * 3. It records the outcome in a second short write unit, guarded by its lease token: `delivered`;
 *    `pending` again after the next delay of WEBHOOK_RETRY_SECONDS; or `failed` after the last.
 *
 * A process that dies between 1 and 3 leaves the row pending under a lease that runs out, after
 * which any process attempts it again: delivery is at least once, across restarts and `kill -9`.
 */
import { randomUUID } from "node:crypto";
import type { Transaction } from "kysely";
import { Webhook } from "standardwebhooks";
import type { Database } from "../db/client.ts";
import { locksRows } from "../db/engine.ts";
import type { DB } from "../db/schema.ts";
import type { Clock, WriteQueue } from "../db/write-path.ts";
import type { Logger } from "../http/context.ts";
import type { DeliveryOutcome, Metrics } from "../metrics.ts";

/** How much longer than one attempt's timeout a claim holds a delivery, in milliseconds. */
export const LEASE_MARGIN_MS = 10_000;

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
  /** Most attempts on the wire at once (WEBHOOK_CONCURRENCY). */
  concurrency: number;
  /** Milliseconds between looks for due deliveries while there are none (WEBHOOK_POLL_MS). */
  pollMs: number;
}

export interface DeliveryWorker {
  /**
   * Stops claiming, aborts the attempts on the wire and hands their deliveries back (pending,
   * due at once, the attempt not counted); resolves when nothing of the worker runs any more.
   */
  stop(): Promise<void>;
}

/** A claimed delivery with what its attempt needs. */
interface Claimed {
  id: string;
  webhookId: string;
  eventId: string;
  attempts: number;
  url: string;
  secret: string;
  payload: string;
  token: string;
}

/** What one HTTP attempt gave: the status, if any answer came, and why it failed. */
interface AttemptResult {
  ok: boolean;
  statusCode: number | null;
  error: string | null;
}

/** Starts the worker's loop. @returns its handle */
export function startDeliveryWorker(opts: DeliveryWorkerOptions): DeliveryWorker {
  const inFlight = new Set<Promise<void>>();
  const abort = new AbortController();
  let stopped = false;
  let wake: (() => void) | undefined;
  let failingSince: number | undefined;

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      }
      wake = done;
    });

  const loop = async () => {
    while (!stopped) {
      const free = opts.concurrency - inFlight.size;
      let claimed: Claimed[] = [];
      if (free > 0) {
        try {
          claimed = await claimDue(opts, free);
          if (failingSince !== undefined) opts.logger.info({}, "webhook worker: database back");
          failingSince = undefined;
        } catch (err) {
          // The database is unavailable: try again at the next look, and say so once.
          if (failingSince === undefined) {
            opts.logger.warn({ err: errorText(err) }, "webhook worker: cannot claim deliveries");
          }
          failingSince ??= Date.now();
        }
      }
      for (const delivery of claimed) {
        if (stopped) break;
        const running: Promise<void> = attemptAndRecord(opts, delivery, abort.signal)
          .catch((err: unknown) => {
            opts.logger.warn(
              { deliveryId: delivery.id, err: errorText(err) },
              "webhook record failed",
            );
          })
          .finally(() => {
            inFlight.delete(running);
            wake?.();
          });
        inFlight.add(running);
      }
      // Claimed a full set: more may be due, look again once a slot is free.
      if (!stopped && (claimed.length === 0 || claimed.length < free)) await sleep(opts.pollMs);
      else if (!stopped && inFlight.size >= opts.concurrency) await sleep(opts.pollMs);
    }
  };
  const looping = loop();

  return {
    stop: async () => {
      stopped = true;
      wake?.();
      abort.abort();
      await looping;
      while (inFlight.size > 0) await Promise.all(inFlight);
    },
  };
}

/** Claims up to `limit` due deliveries for this process (none: no write transaction at all). */
async function claimDue(opts: DeliveryWorkerOptions, limit: number): Promise<Claimed[]> {
  const nowMs = opts.clock();
  const any = await opts.db.read
    .selectFrom("webhook_deliveries")
    .select("id")
    .where("status", "=", "pending")
    .where("next_attempt_at_ms", "<=", nowMs)
    .where((eb) => eb.or([eb("locked_until_ms", "is", null), eb("locked_until_ms", "<=", nowMs)]))
    .limit(1)
    .executeTakeFirst();
  if (!any) return [];
  const token = randomUUID();
  const leaseMs = opts.timeoutSeconds * 1000 + LEASE_MARGIN_MS;
  return opts.queue.run((trx, unitNowMs) => claimIn(trx, unitNowMs, limit, token, leaseMs));
}

/** The claim unit: takes due rows (skipping rows other transactions hold) under `token`. */
async function claimIn(
  trx: Transaction<DB>,
  nowMs: number,
  limit: number,
  token: string,
  leaseMs: number,
): Promise<Claimed[]> {
  const due = await trx
    .selectFrom("webhook_deliveries")
    .select("id")
    .where("status", "=", "pending")
    .where("next_attempt_at_ms", "<=", nowMs)
    .where((eb) => eb.or([eb("locked_until_ms", "is", null), eb("locked_until_ms", "<=", nowMs)]))
    .orderBy("next_attempt_at_ms")
    .limit(limit)
    .$if(locksRows(trx), (q) => q.forUpdate().skipLocked())
    .execute();
  if (due.length === 0) return [];
  await trx
    .updateTable("webhook_deliveries")
    .set({ locked_until_ms: nowMs + leaseMs, lease_token: token })
    .where(
      "id",
      "in",
      due.map((d) => d.id),
    )
    .execute();
  const rows = await trx
    .selectFrom("webhook_deliveries as d")
    .innerJoin("webhooks as w", "w.id", "d.webhook_id")
    .innerJoin("webhook_events as e", "e.id", "d.event_id")
    .select(["d.id", "d.webhook_id", "d.event_id", "d.attempts", "w.url", "w.secret", "e.payload"])
    .where("d.lease_token", "=", token)
    .execute();
  return rows.map((r) => ({
    id: r.id,
    webhookId: r.webhook_id,
    eventId: r.event_id,
    attempts: r.attempts,
    url: r.url,
    secret: r.secret,
    payload: r.payload,
    token,
  }));
}

/** One attempt of `delivery`, then its outcome recorded (or, when stopping, its lease freed). */
async function attemptAndRecord(
  opts: DeliveryWorkerOptions,
  delivery: Claimed,
  stopping: AbortSignal,
): Promise<void> {
  const result = await attempt(delivery, opts.timeoutSeconds * 1000, stopping);
  if (stopping.aborted && !result.ok) {
    await opts.queue.run((trx) => release(trx, delivery));
    return;
  }
  const attempts = delivery.attempts + 1;
  const delay = opts.retrySeconds[attempts - 1];
  const outcome: DeliveryOutcome = result.ok
    ? "delivered"
    : delay === undefined
      ? "failed"
      : "retried";
  const recorded = await opts.queue.run(async (trx, nowMs) => {
    const update = await trx
      .updateTable("webhook_deliveries")
      .set({
        status: outcome === "retried" ? "pending" : outcome,
        attempts,
        last_status_code: result.statusCode,
        last_error: result.error,
        next_attempt_at_ms: outcome === "retried" ? nowMs + Math.round((delay ?? 0) * 1000) : null,
        delivered_at_ms: outcome === "delivered" ? nowMs : null,
        locked_until_ms: null,
        lease_token: null,
      })
      .where("id", "=", delivery.id)
      .where("lease_token", "=", delivery.token)
      .where("status", "=", "pending")
      .executeTakeFirst();
    return Number(update.numUpdatedRows) > 0;
  });
  // Not recorded: the endpoint was deleted meanwhile, or the lease ran out and another
  // process owns the delivery now; its outcome is that process's to count.
  if (!recorded) return;
  opts.metrics?.observeWebhookDelivery(outcome);
  if (!result.ok) {
    opts.logger.info(
      {
        deliveryId: delivery.id,
        webhookId: delivery.webhookId,
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

/** Hands a claimed delivery back untried (pending, due at once, no attempt counted). */
async function release(trx: Transaction<DB>, delivery: Claimed): Promise<void> {
  await trx
    .updateTable("webhook_deliveries")
    .set({ locked_until_ms: null, lease_token: null })
    .where("id", "=", delivery.id)
    .where("lease_token", "=", delivery.token)
    .execute();
}

/**
 * POSTs the event to the endpoint, signed as Standard Webhooks says: `webhook-id` (the event
 * id), `webhook-timestamp` (Unix seconds now, by the wall clock, which the receiver checks
 * against its own) and `webhook-signature` (`v1,` + base64 HMAC-SHA256 of
 * `id.timestamp.payload` with the secret). Redirects are not followed; the answer's body is not
 * read.
 */
export async function attempt(
  delivery: Pick<Claimed, "url" | "secret" | "eventId" | "payload">,
  timeoutMs: number,
  stopping?: AbortSignal,
): Promise<AttemptResult> {
  const sentAt = new Date();
  const signature = new Webhook(delivery.secret).sign(delivery.eventId, sentAt, delivery.payload);
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = stopping ? AbortSignal.any([timeout, stopping]) : timeout;
  try {
    const res = await fetch(delivery.url, {
      method: "POST",
      redirect: "manual",
      signal,
      headers: {
        "content-type": "application/json",
        "user-agent": "credit-ledger-webhooks/1",
        "webhook-id": delivery.eventId,
        "webhook-timestamp": String(Math.floor(sentAt.getTime() / 1000)),
        "webhook-signature": signature,
      },
      body: delivery.payload,
    });
    await res.body?.cancel().catch(() => {});
    const ok = res.status >= 200 && res.status < 300;
    return { ok, statusCode: res.status, error: ok ? null : `HTTP ${res.status}` };
  } catch (err) {
    if (timeout.aborted)
      return { ok: false, statusCode: null, error: `timeout after ${timeoutMs} ms` };
    if (stopping?.aborted) return { ok: false, statusCode: null, error: "stopped" };
    return { ok: false, statusCode: null, error: networkError(err) };
  }
}

/**
 * Why a request got no answer, as its system error code (`ECONNREFUSED`, `ECONNRESET`, …) or
 * the error's name: never its message, which may quote the URL (and a token in it).
 */
function networkError(err: unknown): string {
  const cause = err instanceof Error ? (err.cause as { code?: unknown } | undefined) : undefined;
  if (cause && typeof cause.code === "string") return cause.code;
  return err instanceof Error ? err.name : "request failed";
}

/** A database error for the log: its message, shortened. */
function errorText(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).slice(0, 200);
}
