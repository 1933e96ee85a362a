/**
 * The reservation sweeper (docs/api.md#reservations): marks pending holds past their expiresAt as `expired`,
 * in bounded batches through the serial write path. Their credits stopped counting at expiresAt
 * already; this records the ending.
 */
import { expireReservations } from "../reservations/service.ts";
import { type BatchedRun, batches } from "./batches.ts";

/** Largest number of holds marked in one write unit. */
export const EXPIRE_BATCH = 500;

/** Runs the sweep at `nowMs`. @returns how many holds were marked expired */
export async function runExpireReservations(run: BatchedRun): Promise<number> {
  const sweep = batches(run, EXPIRE_BATCH, async (trx, batch) => ({
    seen: await expireReservations(trx, run.nowMs, batch),
  }));
  let total = 0;
  for await (const { seen } of sweep) total += seen;
  return total;
}
