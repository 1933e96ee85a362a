/**
 * The plan grant job (docs/api.md#plans-and-grants): grants every period that is due at `nowMs`, in
 * order (periods missed while the service was down are caught up), and ends assignments whose
 * last period is over. Runs in bounded batches through the write path; each assignment in its
 * own savepoint, so one that fails (a balance at its limit) does not stop the others.
 *
 * Every process runs it. On PostgreSQL each assignment is granted under its account's row lock,
 * taken with SKIP LOCKED, and read again under it, so two processes never grant one period
 * twice (`plan_grants` refuses it anyway) and never wait on each other; see docs/operations.md.
 */
import type { Transaction } from "kysely";
import { tryLockAccount } from "../db/locks.ts";
import { inSavepoint } from "../db/savepoint.ts";
import type { AccountPlanRow, DB } from "../db/schema.ts";
import { settleDue } from "../plans/settlement.ts";
import { type BatchedRun, batches } from "./batches.ts";

/** Largest number of assignments handled in one write unit. */
export const GRANT_BATCH = 100;

export interface GrantRunResult {
  grants: number;
  completed: number;
  failed: number;
}

/** Whether the assignment is active with a grant due, or past its end, at `nowMs`. */
function isDue(ap: AccountPlanRow, nowMs: number): boolean {
  const grantDue = ap.next_grant_at_ms !== null && ap.next_grant_at_ms <= nowMs;
  const ended = ap.expires_at_ms !== null && ap.expires_at_ms <= nowMs;
  return ap.active === 1 && (grantDue || ended);
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
  for (const candidate of due) {
    // Requests lock an account before its assignments; the job does the same. On PostgreSQL an
    // account another transaction holds (a request, or this job in another process) is left to
    // that process or to the next run rather than waited for; SQLite's queue never holds one.
    if (!(await tryLockAccount(trx, candidate.account_id))) {
      skip.add(candidate.id);
      continue;
    }
    // Read again under the lock: another process may have granted or ended it meanwhile.
    const ap = await trx
      .selectFrom("account_plans")
      .selectAll()
      .where("id", "=", candidate.id)
      .executeTakeFirst();
    if (!ap || !isDue(ap, nowMs)) continue;
    const settled = await inSavepoint(trx, "grant_one", () => settleDue(trx, ap, nowMs));
    if (settled.ok) {
      result.grants += settled.value.grants;
      if (settled.value.completed) result.completed++;
    } else {
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
export async function runGrantPlans(run: BatchedRun): Promise<GrantRunResult> {
  const skip = new Set<string>();
  const units = batches(run, GRANT_BATCH, (trx, batch) => runBatch(trx, run.nowMs, batch, skip));
  const total: GrantRunResult = { grants: 0, completed: 0, failed: 0 };
  for await (const r of units) {
    total.grants += r.grants;
    total.completed += r.completed;
    total.failed += r.failed;
  }
  return total;
}
