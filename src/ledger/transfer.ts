/**
 * Transfers (docs/api.md#transfers): credits moved from one account of a project to another,
 * both funding themselves, in one write unit: a debit on the source, drawn as any debit
 * (docs/api.md#spending-order), and a credit on the destination, a grant of the given priority
 * (default 50) and expiry (default: the earliest expiry among the grants the debit drew from,
 * so that expiring credits never become lasting ones). Both halves carry the transfer's id. A
 * transfer is not spending: no limit refuses it and it counts in no window; it needs
 * `amount ≤ available` at the source and may fire `balance.low` there like any debit.
 *
 * On PostgreSQL both accounts are locked in the order of their ids, so that two transfers
 * between the same two accounts in opposite directions take turns instead of deadlocking.
 * Amounts in micro-credits.
 */
import type { Kysely, Transaction } from "kysely";
import { findAccount, findAccountWithBalance } from "../accounts/lookup.ts";
import { checkLowBalance } from "../accounts/low-balance.ts";
import { fundedByParent } from "../accounts/placement.ts";
import type { DB } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { newId } from "../ids.ts";
import { type PostedEntry, postEntry, requireAvailable } from "./core.ts";
import { bookDueExpiries, expiryAccount } from "./expiry.ts";
import { DEFAULT_PRIORITY, drawsOf } from "./grants.ts";

/** What a transfer request asks (validated; `amountMicros` > 0). */
export interface TransferInput {
  fromRef: string;
  toRef: string;
  amountMicros: number;
  /** The credit's grant priority (0–100; default 50). */
  priority?: number | undefined;
  /** The credit's grant expiry, epoch ms (default: the earliest of the grants drawn from). */
  expiresAtMs?: number | undefined;
  description?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
}

/** A transfer booked: its id, both halves, and both balances after it (micro-credits). */
export interface Transferred {
  transferId: string;
  debit: PostedEntry;
  credit: PostedEntry;
  fromBalanceMicros: number;
  toBalanceMicros: number;
}

/**
 * Books the transfer `input` of project `projectId` at `nowMs` in the write unit `trx`.
 * @throws ApiError ACCOUNT_NOT_FOUND; VALIDATION_ERROR (from an account to itself);
 *   FUNDED_BY_PARENT (either account); INSUFFICIENT_CREDITS (`amount > available` at the
 *   source); BALANCE_LIMIT_EXCEEDED (the destination past 9e9 credits)
 */
export async function transferCredits(
  trx: Transaction<DB>,
  projectId: string,
  input: TransferInput,
  nowMs: number,
): Promise<Transferred> {
  const from = await findAccount(trx, projectId, input.fromRef, { lock: false });
  const to = await findAccount(trx, projectId, input.toRef, { lock: false });
  if (from.id === to.id) {
    const message = "must name another account than fromAccountId";
    throw new ApiError("VALIDATION_ERROR", `Invalid body.toAccountId: ${message}`, [
      { path: "body.toAccountId", message },
    ]);
  }
  for (const account of [from, to]) {
    if (account.funding === "parent") throw fundedByParent(account, "its pool holds its credits");
  }
  // Both locks in id order, then the source with its balances under its lock.
  const [first, second] = from.id < to.id ? [from, to] : [to, from];
  await findAccount(trx, projectId, first.id);
  await findAccount(trx, projectId, second.id);
  const source = await findAccountWithBalance(trx, projectId, from.id, nowMs);
  const due = await bookDueExpiries(trx, expiryAccount(source), nowMs);
  requireAvailable(source.available - due.expiredMicros, input.amountMicros);
  const transferId = newId("trf");
  const half = {
    projectId,
    amountMicros: input.amountMicros,
    description: input.description ?? "",
    metadata: input.metadata ?? {},
    source: "transfer" as const,
    transferId,
    nowMs,
  };
  const debit = await postEntry(trx, {
    ...half,
    accountId: from.id,
    type: "debit",
    spendable: due.spendable,
  });
  const expiresAtMs = input.expiresAtMs ?? (await earliestExpiryDrawn(trx, debit));
  const destination = await findAccount(trx, projectId, to.id);
  await bookDueExpiries(trx, { projectId, accountId: destination.id }, nowMs);
  const credit = await postEntry(trx, {
    ...half,
    accountId: destination.id,
    type: "credit",
    grant: { priority: input.priority ?? DEFAULT_PRIORITY, expiresAtMs },
  });
  await checkLowBalance(trx, source.account, {
    nowMs,
    availableBeforeMicros: source.available,
    transactionId: debit.id,
  });
  return {
    transferId,
    debit,
    credit,
    fromBalanceMicros: debit.balance_after_micros,
    toBalanceMicros: credit.balance_after_micros,
  };
}

/** The earliest expiry (epoch ms) of the grants `debit` drew from; null when none expires. */
async function earliestExpiryDrawn(db: Kysely<DB>, debit: PostedEntry): Promise<number | null> {
  const draws = await drawsOf(db, debit);
  if (draws.length === 0) return null;
  const row = await db
    .selectFrom("credit_grants")
    .select((eb) => eb.fn.min<number | null>("expires_at_ms").as("earliest"))
    .where(
      "seq",
      "in",
      draws.map((d) => d.grantSeq),
    )
    .executeTakeFirst();
  return row?.earliest == null ? null : Number(row.earliest);
}
