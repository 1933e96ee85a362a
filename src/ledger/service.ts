/**
 * Balance adjustments (docs/api.md#endpoints, docs/api.md#balance-adjustments-and-transactions):
 * add, deduct and the manual transaction, each one ledger entry inside a write unit (`trx`).
 */
import type { Transaction } from "kysely";
import { findAccount, findAccountWithBalance } from "../accounts/lookup.ts";
import { checkLowBalance } from "../accounts/low-balance.ts";
import { parseDateParam } from "../dates.ts";
import type { AccountRow, DB, TransactionSource, TransactionType } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { type PostedEntry, postEntry, requireAvailable } from "./core.ts";
import { bookDueExpiries, expiryAccount } from "./expiry.ts";
import { DEFAULT_PRIORITY, type GrantTerms, type Spendable } from "./grants.ts";
import { type PlainOption, plainDebit } from "./plain-debit.ts";

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
 * Credits or debits an account (add, deduct, manual transaction), after booking the account's
 * due grant expiries (docs/api.md#expiry-of-grants). A credit makes a grant; a debit needs
 * `amount ≤ available` (docs/api.md#balance-adjustments-and-transactions) and spends grants in
 * the spending order (docs/api.md#spending-order).
 *
 * A debit first tries the plain debit (plain-debit.ts: one statement on PostgreSQL, three on
 * SQLite), which applies when nothing but the balance move, the entry and one grant's draw is
 * needed, unless `options.plainTried` says the route's statement already found it not plain.
 * Otherwise, and for every credit, the general path: the account (locked on PostgreSQL) with its
 * holds and whether an expiry is due or held, the expiries, the balance update, the ledger row,
 * the grants drawn from, the low-balance check.
 * @returns the account (its id and externalId) and the stored entry (with `grantId` for a
 *   credit)
 * @throws ApiError ACCOUNT_NOT_FOUND, INSUFFICIENT_CREDITS, BALANCE_LIMIT_EXCEEDED
 */
export async function moveCredits(
  trx: Transaction<DB>,
  projectId: string,
  input: MoveInput,
  nowMs: number,
  options: PlainOption = { plainTried: false },
): Promise<{ account: Pick<AccountRow, "id" | "external_id">; row: PostedEntry }> {
  const { source } = input;
  if (
    input.type === "debit" &&
    (source === "deduct" || source === "manual") &&
    !options.plainTried
  ) {
    const plain = await plainDebit(trx, {
      projectId,
      accountRef: input.accountRef,
      amountMicros: input.amountMicros,
      description: input.description ?? "",
      metadata: input.metadata ?? {},
      source,
      nowMs,
    });
    if (plain) return plain;
  }
  let account: AccountRow;
  let spendable: Spendable | undefined;
  let availableBeforeMicros: number | undefined;
  if (input.type === "debit") {
    const found = await findAccountWithBalance(trx, projectId, input.accountRef, nowMs);
    account = found.account;
    availableBeforeMicros = found.available;
    const due = await bookDueExpiries(trx, expiryAccount(found), nowMs);
    requireAvailable(found.available - due.expiredMicros, input.amountMicros);
    spendable = due.spendable;
  } else {
    account = await findAccount(trx, projectId, input.accountRef);
    const accountRef = { projectId, accountId: account.id, balanceMicros: account.balance_micros };
    await bookDueExpiries(trx, accountRef, nowMs);
  }
  const row = await postEntry(trx, {
    projectId,
    accountId: account.id,
    type: input.type,
    amountMicros: input.amountMicros,
    description: input.description ?? "",
    metadata: input.metadata ?? {},
    source: input.source,
    nowMs,
    grant: input.grant,
    spendable,
  });
  if (availableBeforeMicros !== undefined) {
    await checkLowBalance(trx, account, {
      nowMs,
      availableBeforeMicros,
      transactionId: row.id,
    });
  }
  return { account, row };
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
