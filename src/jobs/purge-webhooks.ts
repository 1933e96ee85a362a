/**
 * The retention of webhook data (docs/design.md#webhook-retention): deliveries that ended
 * (delivered or failed) more than WEBHOOK_RETENTION_DAYS ago are deleted, with each event once
 * none of its deliveries is left, and then deleted endpoints with no delivery left. Pending
 * deliveries, their events and active endpoints are never touched, nor is any ledger row
 * (transactions, grants, reservations, usage records).
 *
 * Each batch is one write unit of at most `batchSize` deliveries (or endpoints). On PostgreSQL
 * a batch first takes an advisory lock, so the batches of several processes take turns: each
 * sees what the previous one deleted, and an event whose deliveries two processes delete at once
 * is not left behind.
 */
import type { Transaction } from "kysely";
import { lockKey } from "../db/locks.ts";
import { forUpdateSkipLockedOnPostgres } from "../db/row-locks.ts";
import type { DB } from "../db/schema.ts";
import { type BatchedRun, batches } from "./batches.ts";

/** Most deliveries (or endpoints) one write unit deletes. */
export const PURGE_BATCH = 500;

const DAY_MS = 86_400_000;

/** What one run deleted. */
export interface PurgeResult {
  deliveries: number;
  events: number;
  webhooks: number;
}

/** The retention cutoff: data that ended before it is deleted. @returns epoch ms */
export function retentionCutoffMs(nowMs: number, retentionDays: number): number {
  return nowMs - Math.max(1, Math.round(retentionDays * DAY_MS));
}

/**
 * Deletes what ended before `nowMs` − `retentionDays`, batch by batch.
 * @param retentionDays WEBHOOK_RETENTION_DAYS (a positive number, fractions allowed)
 * @returns how many deliveries, events and endpoints were deleted
 * @throws whatever a batch throws (the batches before it stay committed)
 */
export async function runPurgeWebhooks(
  run: BatchedRun & { retentionDays: number },
): Promise<PurgeResult> {
  const cutoffMs = retentionCutoffMs(run.nowMs, run.retentionDays);
  const result: PurgeResult = { deliveries: 0, events: 0, webhooks: 0 };
  for await (const batch of batches(run, PURGE_BATCH, (trx, size) =>
    purgeDeliveries(trx, cutoffMs, size),
  )) {
    result.deliveries += batch.seen;
    result.events += batch.events;
  }
  for await (const batch of batches(run, PURGE_BATCH, (trx, size) =>
    purgeWebhooks(trx, cutoffMs, size),
  )) {
    result.webhooks += batch.seen;
  }
  return result;
}

/** One batch: ended deliveries older than the cutoff, and the events they leave empty. */
async function purgeDeliveries(trx: Transaction<DB>, cutoffMs: number, size: number) {
  await lockKey(trx, "webhook-retention", "");
  const rows = await trx
    .selectFrom("webhook_deliveries")
    .select(["id", "event_id"])
    .where("ended_at_ms", "<", cutoffMs)
    .where("status", "in", ["delivered", "failed"])
    .orderBy("ended_at_ms")
    .limit(size)
    .$call((q) => forUpdateSkipLockedOnPostgres(trx, q))
    .execute();
  if (rows.length === 0) return { seen: 0, events: 0 };
  await trx
    .deleteFrom("webhook_deliveries")
    .where(
      "id",
      "in",
      rows.map((r) => r.id),
    )
    .execute();
  const events = await trx
    .deleteFrom("webhook_events as e")
    .where("e.id", "in", [...new Set(rows.map((r) => r.event_id))])
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom("webhook_deliveries as d")
            .select("d.id")
            .whereRef("d.event_id", "=", "e.id"),
        ),
      ),
    )
    .executeTakeFirst();
  return { seen: rows.length, events: Number(events.numDeletedRows) };
}

/** One batch: deleted endpoints (deleted before the cutoff) with no delivery left. */
async function purgeWebhooks(trx: Transaction<DB>, cutoffMs: number, size: number) {
  await lockKey(trx, "webhook-retention", "");
  const rows = await trx
    .selectFrom("webhooks as w")
    .select("w.id")
    .where("w.deleted_at_ms", "<", cutoffMs)
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom("webhook_deliveries as d")
            .select("d.id")
            .whereRef("d.webhook_id", "=", "w.id"),
        ),
      ),
    )
    .orderBy("w.deleted_at_ms")
    .limit(size)
    .execute();
  if (rows.length === 0) return { seen: 0 };
  await trx
    .deleteFrom("webhooks")
    .where(
      "id",
      "in",
      rows.map((r) => r.id),
    )
    .execute();
  return { seen: rows.length };
}
