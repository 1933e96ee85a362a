/**
 * The grant expiry job (docs/api.md#expiry-of-grants, docs/design.md#grant-expiry-job): books
 * the expiry of every grant past its expiresAt that no write on its account has booked yet, and
 * removes what is left of expired grants as far as `available` allows (a hold that ran out). Runs on
 * `EXPIRE_CRON` (every 5 seconds by default), in bounded batches of accounts through the write
 * path; each account in its own savepoint, so one that fails does not stop the others.
 *
 * Every process runs it. On PostgreSQL each account is handled under its row lock, taken with
 * SKIP LOCKED: an account another transaction holds (a request, which books the account's due
 * expiries itself, or this job in another process) is left to it or to the next run.
 */
import { sql, type Transaction } from "kysely";
import { checkLowBalance } from "../accounts/low-balance.ts";
import { tryLockAccount } from "../db/locks.ts";
import { inSavepoint } from "../db/savepoint.ts";
import type { DB } from "../db/schema.ts";
import { bookDueExpiries } from "../ledger/expiry.ts";
import { type BatchedRun, batches } from "./batches.ts";

/** Largest number of accounts handled in one write unit. */
export const EXPIRE_GRANTS_BATCH = 200;

export interface ExpireGrantsResult {
  /** Expiry transactions booked. */
  expiries: number;
  /** Accounts whose expiries failed (retried at the next run). */
  failed: number;
}

type Which = "due" | "held";

/**
 * Accounts after `afterId` (in id order) with a grant past expiresAt whose expiry is not booked
 * (`due`, index `credit_grants_due`), or with something left of a booked one (`held`, index
 * `credit_grants_held`).
 */
async function accountsWith(
  trx: Transaction<DB>,
  which: Which,
  nowMs: number,
  afterId: string,
  limit: number,
) {
  let query = trx
    .selectFrom("credit_grants")
    .select(["account_id", "project_id"])
    .distinct()
    .where("exhausted", "=", sql.lit(0))
    .where("account_id", ">", afterId);
  query =
    which === "due"
      ? query
          .where("expiry_booked", "=", sql.lit(0))
          .where("expires_at_ms", "is not", null)
          .where("expires_at_ms", "<=", nowMs)
      : query.where("expiry_booked", "=", sql.lit(1));
  return query.orderBy("account_id").limit(limit).execute();
}

async function runBatch(
  trx: Transaction<DB>,
  which: Which,
  nowMs: number,
  afterId: string,
  batch: number,
) {
  const accounts = await accountsWith(trx, which, nowMs, afterId, batch);
  const result = { expiries: 0, failed: 0, seen: accounts.length, lastId: afterId };
  for (const { account_id: accountId, project_id: projectId } of accounts) {
    result.lastId = accountId;
    if (!(await tryLockAccount(trx, accountId))) continue;
    const booked = await inSavepoint(trx, "expire_grants", async () => {
      const { expiries, expiredMicros } = await bookDueExpiries(
        trx,
        { projectId, accountId },
        nowMs,
      );
      const lowered = {
        nowMs,
        loweredByMicros: expiredMicros,
        transactionId: expiries.at(-1)?.id ?? null,
      };
      await checkLowBalance(trx, { id: accountId, project_id: projectId }, lowered);
      return expiries.length;
    });
    if (booked.ok) result.expiries += booked.value;
    else result.failed++;
  }
  return result;
}

/**
 * Runs the grant expiry job at `nowMs` over every account that has something to expire (each
 * seen once per run, in account id order).
 * @returns how many expiries were booked, and how many accounts failed
 */
export async function runExpireGrants(run: BatchedRun): Promise<ExpireGrantsResult> {
  const total: ExpireGrantsResult = { expiries: 0, failed: 0 };
  for (const which of ["due", "held"] as const) {
    let afterId = "";
    const units = batches(run, EXPIRE_GRANTS_BATCH, (trx, batch) =>
      runBatch(trx, which, run.nowMs, afterId, batch),
    );
    for await (const r of units) {
      total.expiries += r.expiries;
      total.failed += r.failed;
      afterId = r.lastId;
    }
  }
  return total;
}
