/**
 * The plan grant job (contract §8; issue 3): grants every period that is due at `nowMs`, in
 * order (periods missed while the service was down are caught up), and ends assignments whose
 * last period is over. Runs in bounded batches through the serial write path; each assignment
 * in its own savepoint, so one that fails (a balance at its limit) does not stop the others.
 */
import { sql, type Transaction } from "kysely";
import type { DB } from "../db/schema.ts";
import type { WriteQueue } from "../db/write-queue.ts";
import { settleDue } from "../plans/grants.ts";

/** Largest number of assignments handled in one write unit. */
export const GRANT_BATCH = 100;

export interface GrantRunResult {
  grants: number;
  completed: number;
  failed: number;
}

async function runBatch(trx: Transaction<DB>, nowMs: number, batch: number, skip: Set<string>) {
  const due = await trx
    .selectFrom("account_plans")
    .selectAll()
    .where("active", "=", 1)
    .where((eb) => eb.or([eb("next_grant_at_ms", "<=", nowMs), eb("expires_at_ms", "<=", nowMs)]))
    .$if(skip.size > 0, (q) => q.where("id", "not in", [...skip]))
    .orderBy("next_grant_at_ms")
    .limit(batch)
    .execute();
  const result: GrantRunResult & { seen: number } = {
    grants: 0,
    completed: 0,
    failed: 0,
    seen: due.length,
  };
  for (const ap of due) {
    await sql.raw("SAVEPOINT grant_one").execute(trx);
    try {
      const r = await settleDue(trx, ap, nowMs);
      await sql.raw("RELEASE grant_one").execute(trx);
      result.grants += r.grants;
      if (r.completed) result.completed++;
    } catch {
      await sql.raw("ROLLBACK TO grant_one").execute(trx);
      await sql.raw("RELEASE grant_one").execute(trx);
      skip.add(ap.id);
      result.failed++;
    }
  }
  return result;
}

/**
 * Runs the grant job at `nowMs` until nothing more is due (assignments that failed are retried
 * on the next run).
 */
export async function runGrantPlans(opts: {
  queue: WriteQueue;
  nowMs: number;
  batchSize?: number;
}): Promise<GrantRunResult> {
  const batch = opts.batchSize ?? GRANT_BATCH;
  const total: GrantRunResult = { grants: 0, completed: 0, failed: 0 };
  const skip = new Set<string>();
  for (;;) {
    const r = await opts.queue.run((trx) => runBatch(trx, opts.nowMs, batch, skip));
    total.grants += r.grants;
    total.completed += r.completed;
    total.failed += r.failed;
    if (r.seen < batch) return total;
  }
}
