/**
 * Balance adjustments (docs/api.md#endpoints, docs/api.md#balance-adjustments-and-transactions):
 * add, deduct and the manual transaction, each one ledger entry inside a write unit (`trx`).
 */
import type { Transaction } from "kysely";
import { findAccount } from "../accounts/lookup.ts";
import { checkLowBalance } from "../accounts/low-balance.ts";
import { fundedByParent } from "../accounts/placement.ts";
import {
  findSpender,
  inTree,
  namedPool,
  recordSpendLevels,
  spendingOf,
  spendLevels,
} from "../accounts/spending.ts";
import { parseDateParam } from "../dates.ts";
import type { AccountRow, DB, TransactionSource, TransactionType } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { limitDebit } from "../limits/enforce.ts";
import { type PostedEntry, postEntry, requireAvailable } from "./core.ts";
import { type Debit, debitEntry, neededMicros, settleHold, type UnheldDebit } from "./debit.ts";
import { bookDueExpiries, expiryAccount } from "./expiry.ts";
import { DEFAULT_PRIORITY, type GrantTerms } from "./grants.ts";

export interface MoveInput {
  accountRef: string;
  type: TransactionType;
  amountMicros: number;
  description?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
  source: TransactionSource;
  /** A credit: its grant's priority and expiry (docs/api.md#grants). */
  grant?: GrantTerms | undefined;
}

/**
 * Credits or debits an account (add, deduct, manual transaction) on the general path, after
 * booking the account's due grant expiries (docs/api.md#expiry-of-grants). A credit makes a
 * grant (and raises the low-balance event when the expiries it booked first took `available`
 * below the threshold and the credit did not bring it back: docs/api.md#low-balance-threshold);
 * a debit (`generalDebit`) needs `amount ≤ available`
 * (docs/api.md#balance-adjustments-and-transactions), spends grants in the spending order
 * (docs/api.md#spending-order) and may raise the low-balance event. A debit's plain path
 * (plain-debit.ts) is the route's, tried by the write path before this runs.
 * @returns the account named (its id and externalId) and the stored entry (with `grantId` for a
 *   credit; a member's debit is its pool's entry, docs/api.md#pools-and-members)
 * @throws ApiError ACCOUNT_NOT_FOUND, INSUFFICIENT_CREDITS, BALANCE_LIMIT_EXCEEDED,
 *   SPEND_LIMIT_EXCEEDED, FUNDED_BY_PARENT (a credit to an account its parent funds)
 */
export async function moveCredits(
  trx: Transaction<DB>,
  projectId: string,
  input: MoveInput,
  nowMs: number,
): Promise<{ account: Pick<AccountRow, "id" | "external_id">; row: PostedEntry }> {
  const { source } = input;
  if (input.type === "debit") {
    if (source !== "deduct" && source !== "manual") throw new Error(`a ${source} debit`);
    const debit = debitOf(projectId, { ...input, source });
    const { account, row, found, spending } = await generalDebit(trx, debit, nowMs);
    await checkLowBalance(trx, account, {
      nowMs,
      availableBeforeMicros: found.available,
      transactionId: row.id,
      onBehalfOf: spending.onBehalfOf,
    });
    // The answer names the account the request named; its balance is its pool's.
    return { account: spending.spender, row };
  }
  const account = await findAccount(trx, projectId, input.accountRef);
  if (account.funding === "parent") throw fundedByParent(account, "credits go to its pool");
  const accountRef = { projectId, accountId: account.id, balanceMicros: account.balance_micros };
  const due = await bookDueExpiries(trx, accountRef, nowMs);
  const row = await postEntry(trx, {
    projectId,
    accountId: account.id,
    type: "credit",
    amountMicros: input.amountMicros,
    description: input.description ?? "",
    metadata: input.metadata ?? {},
    source,
    nowMs,
    grant: input.grant,
  });
  // The expiries booked first may take `available` below the threshold, and the credit may not
  // bring it back: the unit as a whole lowered it by what expired less what was credited.
  const expiry = due.expiries.at(-1);
  if (expiry !== undefined) {
    await checkLowBalance(trx, account, {
      nowMs,
      loweredByMicros: due.expiredMicros - input.amountMicros,
      transactionId: expiry.id,
    });
  }
  return { account, row };
}

/** The debit a deduction or a manual debit `input` makes (debit.ts). */
export function debitOf(
  projectId: string,
  input: MoveInput & { source: "deduct" | "manual" },
): UnheldDebit {
  return {
    projectId,
    accountRef: input.accountRef,
    amountMicros: input.amountMicros,
    description: input.description ?? "",
    metadata: input.metadata ?? {},
    source: input.source,
  };
}

/**
 * The general path of a debit (a deduction, a manual debit, a confirm whose hold the unit has
 * locked): the spender (locked on PostgreSQL) and, for a spender in a tree, its path up to the
 * root (locked) and its pool, which pays (src/accounts/spending.ts,
 * docs/api.md#pools-and-members); the payer's due expiries booked, the check of what it needs
 * of `available` (debit.ts), the entry on the payer (`postEntry`, which draws the grants down in
 * spending order; `onBehalfOf` the member), for a confirm the hold settled, and the spend limits
 * of every level (src/limits/enforce.ts: window counters, a refusal, `spend_limit.reached`).
 * The caller then checks the low-balance threshold of `account` (the payer) against
 * `found.available`.
 * @returns the payer, the stored entry, the payer as found, its expiries booked and the spending
 * @throws ApiError ACCOUNT_NOT_FOUND, INSUFFICIENT_CREDITS, SPEND_LIMIT_EXCEEDED
 */
export async function generalDebit(trx: Transaction<DB>, debit: Debit, nowMs: number) {
  const spender = await findSpender(trx, debit.projectId, debit.accountRef, nowMs);
  const spending = await spendingOf(trx, spender, nowMs);
  const found = spending.payer;
  const due = await bookDueExpiries(trx, expiryAccount(found), nowMs);
  const needed = neededMicros(debit);
  if (needed > 0) {
    requireAvailable(found.available - due.expiredMicros, needed, namedPool(spending));
  }
  const entry = debitEntry(debit, found.account.id, nowMs, due.spendable);
  const row = await postEntry(trx, { ...entry, onBehalfOf: spending.onBehalfOf });
  await settleHold(trx, debit, row.id, nowMs);
  await recordSpendLevels(trx, spending, row);
  await limitDebit(trx, spendLevels(spending), {
    amountMicros: debit.amountMicros,
    neededMicros: needed,
    atMs: row.created_at_ms,
    transactionId: row.id,
    nowMs,
    onBehalfOf: spending.onBehalfOf,
    inTree: inTree(spending),
  });
  return { account: found.account, row, found, due, spending };
}

/** The furthest a credit may expire: 3,653 days (ten years) after the write, in ms. */
const MAX_EXPIRY_MS = 3653 * 86_400_000;

/**
 * The grant terms of a credit request (docs/api.md#grants): `priority` (validated 0–100,
 * default 50) and `expiresAt` (a validated date-time), which must lie after `nowMs` and at most
 * 3,653 days after it.
 * @throws ApiError VALIDATION_ERROR on `body.expiresAt` otherwise
 */
export function grantTerms(
  body: { priority?: number | undefined; expiresAt?: string | undefined },
  nowMs: number,
): GrantTerms {
  const priority = body.priority ?? DEFAULT_PRIORITY;
  if (body.expiresAt === undefined) return { priority, expiresAtMs: null };
  const parsed = parseDateParam(body.expiresAt);
  if (parsed === null) throw new Error(`expiresAt ${body.expiresAt} was not validated`);
  const problem =
    parsed.ms <= nowMs
      ? "must be in the future"
      : parsed.ms > nowMs + MAX_EXPIRY_MS
        ? "must be at most 3653 days ahead"
        : undefined;
  if (problem !== undefined) {
    throw new ApiError("VALIDATION_ERROR", `Invalid body.expiresAt: ${problem}`, [
      { path: "body.expiresAt", message: problem },
    ]);
  }
  return { priority, expiresAtMs: parsed.ms };
}
