/**
 * The delivery worker's statements (docs/design.md#webhook-delivery): which endpoints get the
 * free slots, the claim of their due deliveries, and the recording of each outcome.
 *
 * Work is claimed per endpoint, not per delivery. A claim takes an endpoint (its
 * `busy_until_ms` lease, on PostgreSQL under `FOR UPDATE SKIP LOCKED`) together with its
 * oldest due deliveries: one while the endpoint is new or stalled (its last attempts got no
 * answer), up to `perEndpoint` once it answers. An endpoint is taken by one claim at a time
 * in the whole database, so a hanging endpoint holds at most that many attempts, and the next
 * claim of it waits until its current ones are over. Endpoints are served in turn: those not
 * stalled first, then by their oldest due delivery, so a healthy endpoint is never queued
 * behind the backlog of a dead one.
 */
import { type Kysely, sql, type Transaction } from "kysely";
import { forUpdateSkipLockedOnPostgres } from "../db/row-locks.ts";
import type { DB, DeliveryStatus } from "../db/schema.ts";

/** A claimed delivery with what its attempt sends. */
export interface ClaimedDelivery {
  id: string;
  eventId: string;
  attempts: number;
  payload: string;
}

/** An endpoint claimed with some of its due deliveries, under one lease token. */
export interface ClaimedBatch {
  webhookId: string;
  url: string;
  secret: string;
  token: string;
  deliveries: ClaimedDelivery[];
}

/** How an endpoint's standing changes once a batch is over. */
export type Standing = "answered" | "stalled" | "unchanged";

/** How much a claim may take. */
export interface ClaimLimits {
  /** Most deliveries in all (the worker's free slots). */
  deliveries: number;
  /** Most deliveries of one endpoint that answers (a new or stalled one: 1). */
  perEndpoint: number;
  /** The lease: until when the claim holds what it took, epoch ms. */
  leaseUntilMs: number;
  token: string;
}

/** The endpoints with a due delivery and no claim on them, in the order they are served. */
function endpointsDue(db: Kysely<DB>, nowMs: number, limit: number) {
  return (
    db
      .selectFrom("webhooks as w")
      .select(["w.id", "w.url", "w.secret", "w.answered_at_ms", "w.stalled_at_ms"])
      .where("w.deleted_at_ms", "is", null)
      // A paused endpoint's deliveries wait (docs/api.md#managing-webhook-endpoints).
      .where("w.paused_at_ms", "is", null)
      .where((eb) => eb.or([eb("w.busy_until_ms", "is", null), eb("w.busy_until_ms", "<=", nowMs)]))
      .where((eb) =>
        eb.exists(
          eb
            .selectFrom("webhook_deliveries as d")
            .select("d.id")
            .whereRef("d.webhook_id", "=", "w.id")
            .where("d.status", "=", "pending")
            .where("d.next_attempt_at_ms", "<=", nowMs),
        ),
      )
      .orderBy(sql`case when w.stalled_at_ms is null then 0 else 1 end`)
      .orderBy((eb) =>
        eb
          .selectFrom("webhook_deliveries as d")
          .select("d.next_attempt_at_ms")
          .whereRef("d.webhook_id", "=", "w.id")
          .where("d.status", "=", "pending")
          .orderBy("d.next_attempt_at_ms")
          .limit(1),
      )
      .orderBy("w.id")
      .limit(limit)
  );
}

/**
 * Whether any endpoint has a delivery to claim now: plain reads, so that an idle worker opens
 * no write transaction. The first is one probe of the due index; only when some delivery is due
 * are the endpoints looked at (it may be one of an endpoint already claimed).
 */
export async function anyDue(db: Kysely<DB>, nowMs: number): Promise<boolean> {
  const due = await db
    .selectFrom("webhook_deliveries")
    .select("id")
    .where("status", "=", "pending")
    .where("next_attempt_at_ms", "<=", nowMs)
    .limit(1)
    .executeTakeFirst();
  if (!due) return false;
  return (await endpointsDue(db, nowMs, 1).executeTakeFirst()) !== undefined;
}

/**
 * The claim unit: takes endpoints in turn and their oldest due deliveries, at most
 * `limits.deliveries` in all, leasing both until `limits.leaseUntilMs` under `limits.token`.
 * @returns the batches claimed (none when nothing is due)
 */
export async function claimBatches(
  trx: Transaction<DB>,
  nowMs: number,
  limits: ClaimLimits,
): Promise<ClaimedBatch[]> {
  const endpoints = await endpointsDue(trx, nowMs, limits.deliveries)
    .$call((q) => forUpdateSkipLockedOnPostgres(trx, q))
    .execute();
  const batches: ClaimedBatch[] = [];
  let left = limits.deliveries;
  for (const endpoint of endpoints) {
    if (left <= 0) break;
    const answers = endpoint.answered_at_ms !== null && endpoint.stalled_at_ms === null;
    const take = Math.min(left, answers ? limits.perEndpoint : 1);
    const deliveries = await dueDeliveries(trx, endpoint.id, nowMs, take);
    if (deliveries.length === 0) continue;
    left -= deliveries.length;
    batches.push({
      webhookId: endpoint.id,
      url: endpoint.url,
      secret: endpoint.secret,
      token: limits.token,
      deliveries,
    });
  }
  if (batches.length === 0) return [];
  await trx
    .updateTable("webhooks")
    .set({ busy_until_ms: limits.leaseUntilMs, busy_token: limits.token })
    .where(
      "id",
      "in",
      batches.map((b) => b.webhookId),
    )
    .execute();
  await trx
    .updateTable("webhook_deliveries")
    .set({ locked_until_ms: limits.leaseUntilMs, lease_token: limits.token })
    .where(
      "id",
      "in",
      batches.flatMap((b) => b.deliveries.map((d) => d.id)),
    )
    .where("status", "=", "pending")
    .execute();
  return batches;
}

/** The oldest `limit` due deliveries of one endpoint, with their events' text. */
async function dueDeliveries(
  trx: Transaction<DB>,
  webhookId: string,
  nowMs: number,
  limit: number,
): Promise<ClaimedDelivery[]> {
  const rows = await trx
    .selectFrom("webhook_deliveries as d")
    .innerJoin("webhook_events as e", "e.id", "d.event_id")
    .select(["d.id", "d.event_id", "d.attempts", "e.payload"])
    .where("d.webhook_id", "=", webhookId)
    .where("d.status", "=", "pending")
    .where("d.next_attempt_at_ms", "<=", nowMs)
    .where((eb) =>
      eb.or([eb("d.locked_until_ms", "is", null), eb("d.locked_until_ms", "<=", nowMs)]),
    )
    .orderBy("d.next_attempt_at_ms")
    .orderBy("d.id")
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    id: r.id,
    eventId: r.event_id,
    attempts: r.attempts,
    payload: r.payload,
  }));
}

/** One attempt's outcome, as stored. */
export interface RecordedOutcome {
  status: DeliveryStatus;
  attempts: number;
  statusCode: number | null;
  error: string | null;
  /** When the next attempt is due (a pending delivery), epoch ms. */
  nextAttemptAtMs: number | null;
}

/**
 * Records an attempt of a claimed delivery, if the claim still holds it (the same lease token,
 * still pending). A delivered or failed delivery gets its `ended_at_ms`, from which retention
 * counts.
 * @returns false when the delivery was no longer this claim's (its endpoint was deleted, or its
 *   lease ran out and another claim took it)
 */
export async function recordAttempt(
  trx: Transaction<DB>,
  nowMs: number,
  delivery: { id: string; token: string },
  outcome: RecordedOutcome,
): Promise<boolean> {
  const ended = outcome.status !== "pending";
  const update = await trx
    .updateTable("webhook_deliveries")
    .set({
      status: outcome.status,
      attempts: outcome.attempts,
      last_status_code: outcome.statusCode,
      last_error: outcome.error,
      next_attempt_at_ms: outcome.nextAttemptAtMs,
      delivered_at_ms: outcome.status === "delivered" ? nowMs : null,
      ended_at_ms: ended ? nowMs : null,
      locked_until_ms: null,
      lease_token: null,
    })
    .where("id", "=", delivery.id)
    .where("lease_token", "=", delivery.token)
    .where("status", "=", "pending")
    .executeTakeFirst();
  return Number(update.numUpdatedRows) > 0;
}

/** Hands a claimed delivery back untried (pending, due as before, no attempt counted). */
export async function handBack(
  trx: Transaction<DB>,
  delivery: { id: string; token: string },
): Promise<void> {
  await trx
    .updateTable("webhook_deliveries")
    .set({ locked_until_ms: null, lease_token: null })
    .where("id", "=", delivery.id)
    .where("lease_token", "=", delivery.token)
    .execute();
}

/**
 * Ends a batch's claim of its endpoint (if still this claim's) and records how the endpoint
 * behaved: `answered` (some attempt got an HTTP answer), `stalled` (none did: timeouts,
 * refused connections or addresses), or `unchanged` (the worker stopped).
 */
export async function releaseEndpoint(
  trx: Transaction<DB>,
  nowMs: number,
  batch: { webhookId: string; token: string },
  standing: Standing,
): Promise<void> {
  await trx
    .updateTable("webhooks")
    .set((eb) => ({
      busy_until_ms: null,
      busy_token: null,
      ...(standing === "answered" ? { answered_at_ms: nowMs, stalled_at_ms: null } : {}),
      ...(standing === "stalled"
        ? { stalled_at_ms: eb.fn.coalesce("stalled_at_ms", eb.val(nowMs)) }
        : {}),
    }))
    .where("id", "=", batch.webhookId)
    .where("busy_token", "=", batch.token)
    .execute();
}
