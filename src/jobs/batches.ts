/**
 * The loop of a batched job: one write unit per batch through the write path, until a batch
 * finds fewer rows than it may take (nothing more is due).
 */
import type { Transaction } from "kysely";
import type { DB } from "../db/schema.ts";
import type { UnitRunner } from "../db/write-path.ts";

/** How a batched job is run. */
export interface BatchedRun {
  /** The write path each batch runs through, one write unit a batch. */
  queue: UnitRunner;
  /** The run's time, epoch ms. */
  nowMs: number;
  /** Most rows one write unit handles; default: the job's own batch size. */
  batchSize?: number;
}

/**
 * Runs `unit(trx, batch)` as one write unit after another and yields each unit's result once it
 * committed, until a unit has `seen` fewer than `batch` rows.
 * @param defaultBatch the batch size when `run.batchSize` is left out
 * @throws whatever a unit, or its commit, throws (the units before it stay committed)
 */
export async function* batches<R extends { seen: number }>(
  run: BatchedRun,
  defaultBatch: number,
  unit: (trx: Transaction<DB>, batch: number) => Promise<R>,
): AsyncGenerator<R, void, undefined> {
  const batch = run.batchSize ?? defaultBatch;
  for (;;) {
    const result = await run.queue.run((trx) => unit(trx, batch));
    yield result;
    if (result.seen < batch) return;
  }
}
