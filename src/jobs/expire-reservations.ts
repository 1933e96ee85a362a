/**
 * The reservation sweeper (docs/api.md#reservations): marks pending holds past their expiresAt as `expired`,
 * in bounded batches through the serial write path. Their credits stopped counting at expiresAt
 * already; this records the ending.
 */
import type { WriteQueue } from "../db/write-queue.ts";
import { expireReservations } from "../reservations/service.ts";

/** Largest number of holds marked in one write unit. */
export const EXPIRE_BATCH = 500;

/** Runs the sweep at `nowMs`. @returns how many holds were marked expired */
export async function runExpireReservations(opts: {
  queue: WriteQueue;
  nowMs: number;
  batchSize?: number;
}): Promise<number> {
  const batch = opts.batchSize ?? EXPIRE_BATCH;
  let total = 0;
  for (;;) {
    const marked = await opts.queue.run((trx) => expireReservations(trx, opts.nowMs, batch));
    total += marked;
    if (marked < batch) return total;
  }
}
