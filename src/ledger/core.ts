/**
 * The general ledger: its arithmetic and invariants (docs/api.md#amounts-and-money,
 * docs/api.md#balance-adjustments-and-transactions). Every credit movement of the service goes
 * through `postEntry`, inside a write unit, but for the plain debit (plain-move.ts on SQLite,
 * which ends with this module's `appendEntry`; PostgreSQL's plain functions,
 * docs/design.md#plain-writes):
 *
 * - balance = Σ credits − Σ debits of the account, and each row's balanceAfter = the previous
 *   row's balanceAfter ± its amount (the row is written with the balance it produces);
 * - 0 ≤ balance ≤ 9e9 credits (a credit past it is 409 BALANCE_LIMIT_EXCEEDED);
 * - debits are checked against `available` = balance − reserved by the callers that must
 *   (deduct, manual debit, confirm overage); `postEntry` itself refuses any debit below zero;
 * - balance = Σ remaining of the account's grants: a credit makes a grant, a debit draws grants
 *   down in the spending order (grants.ts, docs/api.md#spending-order), in the same unit.
 *
 * The database repeats these as CHECK constraints, so a bug here fails the unit instead of
 * storing a broken ledger.
 */
import type { Expression, ExpressionBuilder, SqlBool, Transaction } from "kysely";
import { covers, numbers } from "../admission/rule.ts";
import { moveTime } from "../db/move-time.ts";
import { prepared } from "../db/prepared.ts";
import type { DB, TransactionRow, TransactionSource, TransactionType } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { newId } from "../ids.ts";
import { JsonText, stringifyJson } from "../json.ts";
import { fromMicros, MAX_BALANCE_MICROS } from "../money.ts";
import {
  DEFAULT_PRIORITY,
  type Draw,
  drawDown,
  type GrantTerms,
  giveBack,
  makeGrant,
  recordDraws,
  type Spendable,
  takeFrom,
} from "./grants.ts";

/**
 * Throws 402 INSUFFICIENT_CREDITS unless `availableMicros` covers `requestedMicros` (the
 * admission rule's `covers`, src/admission/rule.ts; docs/api.md#balance-adjustments-and-transactions).
 * `details` gives both in credits, and names `pool` (the account whose credits fall short, for
 * a spender in a tree: docs/api.md#pools-and-members) when given.
 */
export function requireAvailable(
  availableMicros: number,
  requestedMicros: number,
  pool?: { id: string; external_id: string },
): void {
  if (!covers(numbers, availableMicros, requestedMicros)) {
    throw new ApiError("INSUFFICIENT_CREDITS", "Insufficient available credits", {
      available: fromMicros(availableMicros),
      requested: fromMicros(requestedMicros),
      ...(pool === undefined ? {} : { accountId: pool.id, externalId: pool.external_id }),
    });
  }
}

export interface EntryInput {
  projectId: string;
  accountId: string;
  type: TransactionType;
  amountMicros: number;
  description: string;
  /** The metadata, or its text as written earlier (a confirm's, stored with its hold). */
  metadata: Record<string, unknown> | JsonText;
  source: TransactionSource;
  reservationId?: string | null;
  accountPlanId?: string | null;
  nowMs: number;
  /** A credit: its grant's priority and expiry (default: priority 50, no expiry). */
  grant?: GrantTerms | undefined;
  /**
   * A debit: the account's spendable grants as read earlier in this unit, after its due
   * expiries were booked (saves the read; see expiry.ts `bookDueExpiries`).
   */
  spendable?: Spendable | undefined;
  /**
   * A debit that takes from one grant only (an expiry removing what is left of it, a credit's
   * reversal taking back from the credit's grant): that grant's `seq`.
   */
  fromGrantSeq?: number | undefined;
  /** A reversal: the id of the transaction it reverses (docs/api.md#reversals). */
  reversalOf?: string | undefined;
  /**
   * A debit booked on a pool for a member below it, or its reversal: the member
   * (docs/api.md#pools-and-members).
   */
  onBehalfOf?: string | null | undefined;
  /** Either half of a transfer: the transfer's id (docs/api.md#transfers). */
  transferId?: string | undefined;
  /**
   * A credit that gives its amount back to grants a debit drew from (a debit's reversal),
   * instead of making a grant: how much to each grant, summing to the amount.
   */
  returns?: readonly GrantReturn[] | undefined;
}

/** Micro-credits a debit's reversal gives back to one grant. */
export interface GrantReturn {
  grantSeq: number;
  micros: number;
}

/** A stored ledger entry, with the id of the grant a credit made (null for a debit). */
export type PostedEntry = TransactionRow & { grantId: string | null };

/**
 * Appends one ledger entry and moves the account's balance with it: with `appendEntry`, the
 * only code that moves a balance on SQLite and on PostgreSQL but for the plain debit's database
 * functions (docs/design.md#plain-writes). A credit makes a grant; a debit draws the account's
 * grants down in the spending order (docs/api.md#spending-order), or takes from the one grant
 * `fromGrantSeq` names.
 * @returns the stored transaction row and the credit's grant id
 * @throws ApiError BALANCE_LIMIT_EXCEEDED when a credit would pass 9e9 credits;
 *   Error (a bug: callers check `available` first) when a debit would go below zero or past
 *   what the grants hold
 */
export async function postEntry(trx: Transaction<DB>, input: EntryInput): Promise<PostedEntry> {
  if (!Number.isSafeInteger(input.amountMicros) || input.amountMicros < 0) {
    throw new Error(`ledger invariant: entry amount ${input.amountMicros}`);
  }
  // One statement moves the balance and returns the new one; its WHERE refuses a balance past
  // the limit (credit) or below zero (debit), so no row comes back in those cases.
  const args = { accountId: input.accountId, amountMicros: input.amountMicros, nowMs: input.nowMs };
  const move = (input.type === "credit" ? creditBalance : debitBalance)(trx, args);
  const moved = (await trx.executeQuery(move)).rows[0];
  if (moved === undefined) throw await refusedEntry(trx, input);
  return appendEntry(trx, input, moved);
}

/**
 * The rest of an entry whose balance move is made (`moved`: the account after it): the ledger
 * row with the balance it produced, and its grants side (a credit's grant, a debit's drawdown).
 * `postEntry` and the plain move (plain-move.ts) both end with it.
 * @returns the stored transaction row and the credit's grant id
 * @throws Error (a broken invariant) when the grants hold less than a debit takes
 */
export async function appendEntry(
  trx: Transaction<DB>,
  input: EntryInput,
  moved: Moved,
): Promise<PostedEntry> {
  const txnId = newId("txn");
  // A debit's grants side comes first, so that its entry names the grant it drew from.
  const draws = input.type === "debit" ? await debitDraws(trx, input, moved.id) : [];
  const [only] = draws;
  const row = entryRow({ ...input, accountId: moved.id }, txnId, {
    balanceAfterMicros: moved.balance_micros,
    createdAtMs: moved.updated_at_ms,
    grantSeq: draws.length === 1 && only !== undefined ? only.grantSeq : null,
  });
  const inserted = await trx.executeQuery(insertTransaction(trx, row));
  const seq = inserted.rows[0]?.seq;
  if (seq === undefined) throw new Error("ledger invariant: the entry's insert returned no seq");
  if (draws.length > 1) await recordDraws(trx, txnId, draws);
  const grantId = input.type === "credit" ? await creditGrants(trx, input, row) : null;
  return { ...row, seq: Number(seq), grantId };
}

/**
 * The stored text of an entry's metadata: the one form both paths of a write store
 * (PostgreSQL's plain debit gets it as a parameter); text written earlier stays as it is.
 */
export function entryMetadata(input: Pick<EntryInput, "metadata">): string {
  return input.metadata instanceof JsonText ? input.metadata.text : stringifyJson(input.metadata);
}

/**
 * The ledger row of `input` as stored with the id `txnId`, the balance after it, its time (the
 * balance move's, src/db/move-time.ts) and the one grant a debit drew from (`grantSeq`).
 */
export function entryRow(
  input: EntryInput,
  txnId: string,
  moved: { balanceAfterMicros: number; createdAtMs: number; grantSeq?: number | null },
): Omit<TransactionRow, "seq"> {
  return {
    id: txnId,
    project_id: input.projectId,
    account_id: input.accountId,
    type: input.type,
    amount_micros: input.amountMicros,
    balance_after_micros: moved.balanceAfterMicros,
    description: input.description,
    metadata: entryMetadata(input),
    source: input.source,
    reservation_id: input.reservationId ?? null,
    account_plan_id: input.accountPlanId ?? null,
    created_at_ms: moved.createdAtMs,
    reversal_of: input.reversalOf ?? null,
    grant_seq: moved.grantSeq ?? null,
    on_behalf_of: input.onBehalfOf ?? null,
    transfer_id: input.transferId ?? null,
  };
}

/**
 * A debit's grants side: takes its amount from the one grant `fromGrantSeq` names, or draws the
 * account's grants down in spending order.
 * @returns what it took from each grant, in order
 */
async function debitDraws(
  trx: Transaction<DB>,
  input: EntryInput,
  accountId: string,
): Promise<Draw[]> {
  if (input.amountMicros === 0) return [];
  if (input.fromGrantSeq === undefined) {
    return drawDown(trx, accountId, input.amountMicros, input.spendable);
  }
  await takeFrom(trx, input.fromGrantSeq, input.amountMicros);
  return [{ grantSeq: input.fromGrantSeq, takenMicros: input.amountMicros }];
}

/**
 * A credit's grants side: its grant (@returns its id), or, for a debit's reversal (`returns`),
 * the credits given back to the grants the debit drew from (@returns null).
 */
async function creditGrants(
  trx: Transaction<DB>,
  input: EntryInput,
  row: { id: string; account_id: string; created_at_ms: number },
): Promise<string | null> {
  if (input.returns !== undefined) {
    for (const back of input.returns) await giveBack(trx, back.grantSeq, back.micros);
    return null;
  }
  const credit = {
    projectId: input.projectId,
    accountId: row.account_id,
    transactionId: row.id,
    accountPlanId: input.source === "plan_grant" ? (input.accountPlanId ?? null) : null,
    amountMicros: input.amountMicros,
    createdAtMs: row.created_at_ms,
  };
  return makeGrant(trx, credit, input.grant ?? NO_TERMS);
}

/** A credit's grant terms when none are given (docs/api.md#grants). */
const NO_TERMS: GrantTerms = { priority: DEFAULT_PRIORITY, expiresAtMs: null };

/** Why an entry's balance move matched no row: the limit (409), or a bug. */
async function refusedEntry(trx: Transaction<DB>, input: EntryInput): Promise<Error> {
  const account = await trx
    .selectFrom("accounts")
    .select("balance_micros")
    .where("id", "=", input.accountId)
    .executeTakeFirst();
  if (account && input.type === "credit") {
    return new ApiError("BALANCE_LIMIT_EXCEEDED", "The balance would exceed 9e9 credits", {
      balance: fromMicros(account.balance_micros),
      requested: fromMicros(input.amountMicros),
    });
  }
  return new Error(
    `ledger invariant: ${input.type} of ${input.amountMicros} refused for account ${input.accountId} (balance ${account?.balance_micros})`,
  );
}

type MoveArgs = { accountId: string; amountMicros: number; nowMs: number };
/** An account moved: its new balance and `updated_at_ms`. */
export type Moved = {
  id: string;
  external_id: string;
  balance_micros: number;
  updated_at_ms: number;
};

/**
 * The prepared move of an account's balance by the `amountMicros` argument: `+` a credit, `-` a
 * debit. It updates only when `allowed(eb, amountMicros)` holds of the account's row
 * before the move, and returns the new balance and `updated_at_ms` (no row when refused).
 */
function balanceMove(
  op: "+" | "-",
  allowed: (eb: ExpressionBuilder<DB, "accounts">, amountMicros: number) => Expression<SqlBool>,
) {
  return prepared<MoveArgs, Moved>((db, arg, engine) =>
    db
      .updateTable("accounts")
      .set((eb) => ({
        balance_micros: eb("balance_micros", op, arg("amountMicros")),
        updated_at_ms: moveTime(eb, arg("nowMs"), engine),
      }))
      .where("id", "=", arg("accountId"))
      .where((eb) => allowed(eb, arg("amountMicros")))
      .returning(["id", "external_id", "balance_micros", "updated_at_ms"]),
  );
}

/** A credit, refused past the balance limit (9e9 credits). */
const creditBalance = balanceMove("+", (eb, amountMicros) =>
  eb(eb("balance_micros", "+", amountMicros), "<=", MAX_BALANCE_MICROS),
);

/** A debit, refused below zero; which grants it spends is decided by `postEntry` (grants.ts). */
const debitBalance = balanceMove("-", (eb, amountMicros) =>
  eb("balance_micros", ">=", amountMicros),
);

/** Both engines return the new row's `seq` (SQLite's rowid, PostgreSQL's identity). */
export const insertTransaction = prepared<Omit<TransactionRow, "seq">, { seq: number }>((db, arg) =>
  db
    .insertInto("transactions")
    .values({
      id: arg("id"),
      project_id: arg("project_id"),
      account_id: arg("account_id"),
      type: arg("type"),
      amount_micros: arg("amount_micros"),
      balance_after_micros: arg("balance_after_micros"),
      description: arg("description"),
      metadata: arg("metadata"),
      source: arg("source"),
      reservation_id: arg("reservation_id"),
      account_plan_id: arg("account_plan_id"),
      created_at_ms: arg("created_at_ms"),
      reversal_of: arg("reversal_of"),
      grant_seq: arg("grant_seq"),
      on_behalf_of: arg("on_behalf_of"),
      transfer_id: arg("transfer_id"),
    })
    .returning("seq"),
);
