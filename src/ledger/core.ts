/**
 * The ledger's arithmetic and invariants (docs/api.md#amounts-and-money, docs/api.md#balance-adjustments-and-transactions). Every credit movement of the
 * service goes through `postEntry`, inside a write unit:
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
import type { Engine } from "../db/engine.ts";
import { prepared } from "../db/prepared.ts";
import type { DB, TransactionRow, TransactionSource, TransactionType } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { newId } from "../ids.ts";
import { stringifyJson } from "../json.ts";
import { fromMicros, MAX_BALANCE_MICROS } from "../money.ts";
import {
  DEFAULT_PRIORITY,
  drawDown,
  type GrantTerms,
  makeGrant,
  type Spendable,
  takeFrom,
} from "./grants.ts";

/**
 * Throws 402 INSUFFICIENT_CREDITS unless `requestedMicros` ≤ `availableMicros` (docs/api.md#balance-adjustments-and-transactions).
 * `details` gives both in credits.
 */
export function requireAvailable(availableMicros: number, requestedMicros: number): void {
  if (requestedMicros > availableMicros) {
    throw new ApiError("INSUFFICIENT_CREDITS", "Insufficient available credits", {
      available: fromMicros(availableMicros),
      requested: fromMicros(requestedMicros),
    });
  }
}

export interface EntryInput {
  projectId: string;
  accountId: string;
  type: TransactionType;
  amountMicros: number;
  description: string;
  metadata: Record<string, unknown>;
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
  /** A debit that removes what is left of one grant (an expiry): that grant's `seq`. */
  fromGrantSeq?: number | undefined;
}

/** A stored ledger entry, with the id of the grant a credit made (null for a debit). */
export type PostedEntry = TransactionRow & { grantId: string | null };

/**
 * Appends one ledger entry and moves the account's balance with it. A credit makes a grant; a
 * debit draws the account's grants down in the spending order (docs/api.md#spending-order), or
 * takes from the one grant `fromGrantSeq` names.
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
  const move = input.type === "credit" ? creditBalance : debitBalance;
  const { rows } = await trx.executeQuery(
    move(trx, { accountId: input.accountId, amountMicros: input.amountMicros, nowMs: input.nowMs }),
  );
  const moved = rows[0];
  if (moved === undefined) throw await refusedEntry(trx, input);
  const row = {
    id: newId("txn"),
    project_id: input.projectId,
    account_id: input.accountId,
    type: input.type,
    amount_micros: input.amountMicros,
    balance_after_micros: moved.balance_micros,
    description: input.description,
    metadata: stringifyJson(input.metadata),
    source: input.source,
    reservation_id: input.reservationId ?? null,
    account_plan_id: input.accountPlanId ?? null,
    created_at_ms: moved.updated_at_ms,
  };
  const inserted = await trx.executeQuery(insertTransaction(trx, row));
  const seq = inserted.rows[0]?.seq;
  if (seq === undefined) throw new Error("ledger invariant: the entry's insert returned no seq");
  let grantId: string | null = null;
  if (input.type === "credit") {
    const credit = {
      projectId: input.projectId,
      accountId: input.accountId,
      transactionId: row.id,
      accountPlanId: input.source === "plan_grant" ? (input.accountPlanId ?? null) : null,
      amountMicros: input.amountMicros,
      createdAtMs: row.created_at_ms,
    };
    grantId = await makeGrant(trx, credit, input.grant ?? NO_TERMS);
  } else if (input.fromGrantSeq !== undefined) {
    await takeFrom(trx, input.fromGrantSeq, input.amountMicros);
  } else {
    await drawDown(trx, input.accountId, input.amountMicros, input.spendable);
  }
  return { ...row, seq: Number(seq), grantId };
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
type Moved = { balance_micros: number; updated_at_ms: number };

/**
 * The account's new `updated_at_ms`, which is also its entry's `created_at_ms`. On PostgreSQL
 * units of several processes take turns on an account in lock order, not clock order, so the
 * time never goes back from the account's last move: its entries stay in time order along their
 * balanceAfter chain (the transaction list's newest first). SQLite's queue runs units in clock
 * order already.
 */
function movedAt(eb: ExpressionBuilder<DB, "accounts">, nowMs: number, engine: Engine) {
  return engine === "postgres"
    ? eb.fn<number>("greatest", [eb.ref("updated_at_ms"), eb.val(nowMs)])
    : eb.val(nowMs);
}

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
        updated_at_ms: movedAt(eb, arg("nowMs"), engine),
      }))
      .where("id", "=", arg("accountId"))
      .where((eb) => allowed(eb, arg("amountMicros")))
      .returning(["balance_micros", "updated_at_ms"]),
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
    })
    .returning("seq"),
);
