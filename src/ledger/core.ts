/**
 * The ledger's arithmetic and invariants (docs/api.md#amounts-and-money, docs/api.md#balance-adjustments-and-transactions). Every credit movement of the
 * service goes through `postEntry`, inside a write unit (on PostgreSQL, the plain debit's
 * database function too, docs/design.md#plain-writes):
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
import { plainAccount } from "../accounts/plain.ts";
import type { Engine } from "../db/engine.ts";
import { prepared } from "../db/prepared.ts";
import type { DB, TransactionRow, TransactionSource, TransactionType } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { newId } from "../ids.ts";
import { JsonText, stringifyJson } from "../json.ts";
import { type SqliteLimited, shapeOf, underLimits } from "../limits/plain.ts";
import { slotSets } from "../limits/slots.ts";
import { fromMicros, MAX_BALANCE_MICROS } from "../money.ts";
import {
  DEFAULT_PRIORITY,
  drawDown,
  firstGrantRemaining,
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
  /** A debit that removes what is left of one grant (an expiry): that grant's `seq`. */
  fromGrantSeq?: number | undefined;
}

/** A stored ledger entry, with the id of the grant a credit made (null for a debit). */
export type PostedEntry = TransactionRow & { grantId: string | null };

/**
 * A plain debit's move on SQLite (docs/design.md#plain-writes): `postEntry` then names the
 * account by the entry's `accountId` read as a reference (its internal id, or its externalId
 * when `byExternalId`), and moves the balance only when the debit is plain: the plain conditions
 * (accounts/plain.ts) lowering `available` by `neededMicros`, and the first grant in spending
 * order covering the amount (grants.ts).
 */
export interface PlainMove {
  byExternalId: boolean;
  neededMicros: number;
  /** An account known to have these limits (src/limits/plain.ts): the limited plain move. */
  limited?: SqliteLimited | undefined;
  /** A further condition of the write the debit is part of (see `MoveGuard`). */
  guard?: MoveGuard | undefined;
}

/**
 * A condition that the plain move also requires, in the same statement, so that the debit and
 * what its caller read earlier stay one decision: the usage charge's "the prices are still those
 * it was priced at" (src/usage/plain-charge.ts). The condition's SQL is fixed per `key` (one
 * prepared statement each); its values are `args`, whose names start with `g_`.
 */
export interface MoveGuard {
  key: string;
  condition: (
    eb: ExpressionBuilder<DB, "accounts">,
    arg: (name: string) => unknown,
  ) => Expression<SqlBool>;
  args: Record<`g_${string}`, string | number | null>;
}

/** A plain debit posted: the entry and the account's externalId. */
export type PlainPosted = PostedEntry & { externalId: string };

/**
 * Appends one ledger entry and moves the account's balance with it: the only function that
 * moves a balance on SQLite but for `plainRunMove` (a batch's run of plain debits, with the same
 * move statement), and on PostgreSQL but for the plain debit's database functions
 * (docs/design.md#plain-writes). A credit makes a grant; a debit draws the account's grants down
 * in the spending order (docs/api.md#spending-order), or takes from the one grant `fromGrantSeq`
 * names. With `plain` (SQLite's plain debit) it moves nothing and answers null unless the
 * debit is plain.
 * @returns the stored transaction row and the credit's grant id
 * @throws ApiError BALANCE_LIMIT_EXCEEDED when a credit would pass 9e9 credits;
 *   Error (a bug: callers check `available` first) when a debit would go below zero or past
 *   what the grants hold
 */
export function postEntry(trx: Transaction<DB>, input: EntryInput): Promise<PostedEntry>;
export function postEntry(
  trx: Transaction<DB>,
  input: EntryInput,
  plain: PlainMove,
): Promise<PlainPosted | null>;
export async function postEntry(
  trx: Transaction<DB>,
  input: EntryInput,
  plain?: PlainMove,
): Promise<PostedEntry | PlainPosted | null> {
  if (!Number.isSafeInteger(input.amountMicros) || input.amountMicros < 0) {
    throw new Error(`ledger invariant: entry amount ${input.amountMicros}`);
  }
  // One statement moves the balance and returns the new one; its WHERE refuses a balance past
  // the limit (credit) or below zero (debit), or a debit that is not plain (`plain`), so no row
  // comes back in those cases.
  const moved = (await trx.executeQuery(moveStatement(trx, input, plain))).rows[0];
  if (moved === undefined) {
    if (plain) return null;
    throw await refusedEntry(trx, input);
  }
  const row = entryRow({ ...input, accountId: moved.id }, newId("txn"), {
    balanceAfterMicros: moved.balance_micros,
    createdAtMs: moved.updated_at_ms,
  });
  const inserted = await trx.executeQuery(insertTransaction(trx, row));
  const seq = inserted.rows[0]?.seq;
  if (seq === undefined) throw new Error("ledger invariant: the entry's insert returned no seq");
  const grantId = await bookGrants(trx, input, row);
  const posted = { ...row, seq: Number(seq), grantId };
  return plain ? { ...posted, externalId: moved.external_id } : posted;
}

/**
 * SQLite's plain move of a run of debits on one account (docs/design.md#batches): the account
 * named by `ref` (its internal id, or its externalId when `byExternalId`) gives `totalMicros`,
 * the sum of the run's debits, only when that sum is plain (see `PlainMove`: a sum of debits is
 * plain only when each of them, applied in order, is), and its first grant in spending order
 * gives it too. The run's entries are inserted by the caller, one per debit (plain-run.ts).
 * @returns the account and its balance after the whole sum, or null (nothing changed) when the
 *   sum is not plain
 */
export async function plainRunMove(
  trx: Transaction<DB>,
  run: { projectId: string; ref: string; byExternalId: boolean; totalMicros: number },
  nowMs: number,
): Promise<Moved | null> {
  const { projectId, ref, byExternalId, totalMicros } = run;
  const move = debitMove(byExternalId ? "external_id" : "id", "");
  const args = { accountId: ref, amountMicros: totalMicros, neededMicros: totalMicros, nowMs };
  const moved = (await trx.executeQuery(move(trx, { ...args, projectId }))).rows[0];
  if (moved === undefined) return null;
  await drawDown(trx, moved.id, totalMicros);
  return moved;
}

/**
 * The stored text of an entry's metadata: the one form both paths of a write store
 * (PostgreSQL's plain debit gets it as a parameter); text written earlier stays as it is.
 */
export function entryMetadata(input: Pick<EntryInput, "metadata">): string {
  return input.metadata instanceof JsonText ? input.metadata.text : stringifyJson(input.metadata);
}

/**
 * The ledger row of `input` as stored with the id `txnId`, the balance after it and its time
 * (the balance move's, see `movedAt`).
 */
export function entryRow(
  input: EntryInput,
  txnId: string,
  moved: { balanceAfterMicros: number; createdAtMs: number },
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
  };
}

/** The balance move of `input`'s entry (see `postEntry`). */
function moveStatement(trx: Transaction<DB>, input: EntryInput, plain: PlainMove | undefined) {
  const args = { accountId: input.accountId, amountMicros: input.amountMicros, nowMs: input.nowMs };
  if (plain === undefined)
    return (input.type === "credit" ? creditBalance : debitBalance)(trx, args);
  const column = plain.byExternalId ? "external_id" : "id";
  const { guard } = plain;
  const plainArgs = {
    ...args,
    projectId: input.projectId,
    neededMicros: plain.neededMicros,
    ...guard?.args,
  };
  if (plain.limited === undefined) return debitMove(column, "", guard)(trx, plainArgs);
  const { text, shape, args: limitArgs } = plain.limited;
  return debitMove(column, shape, guard)(trx, { ...plainArgs, limits: text, ...limitArgs });
}

/**
 * The grants side of a stored entry: a credit makes its grant (@returns its id); a debit draws
 * grants down (@returns null).
 */
async function bookGrants(
  trx: Transaction<DB>,
  input: EntryInput,
  row: { id: string; account_id: string; created_at_ms: number },
): Promise<string | null> {
  if (input.type === "credit") {
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
  if (input.fromGrantSeq !== undefined) {
    await takeFrom(trx, input.fromGrantSeq, input.amountMicros);
  } else {
    await drawDown(trx, row.account_id, input.amountMicros, input.spendable);
  }
  return null;
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

type DebitMoveArgs = MoveArgs & {
  projectId: string;
  neededMicros: number;
  /** The limited move's: the account's stored limits text, and each limit's arguments. */
  limits?: string;
} & Record<string, string | number | null | undefined>;

/**
 * SQLite's plain debit move, naming the account by `column`: the debit's move only when it is
 * plain (see `PlainMove`). With a non-empty `shape` (src/limits/plain.ts `SqliteLimited`) it is
 * the limited plain debit's move: the account's stored limits must be the `limits` argument, each
 * of its limits stay below its amount, and the move adds the debit to the spend counters in the
 * account's row (src/limits/slots.ts). With `guard`, its condition must hold too. The queue's one
 * writer needs no lock between it and the statements after it.
 */
function plainDebitMove(column: "id" | "external_id", shape: string, guard: MoveGuard | undefined) {
  const n = shape.length;
  const slots = shapeOf(shape).slots;
  return prepared<DebitMoveArgs, Moved>((db, arg) => {
    let update = db.updateTable("accounts").set((eb) => ({
      balance_micros: eb("balance_micros", "-", arg("amountMicros")),
      updated_at_ms: arg("nowMs"),
    }));
    for (const [slotColumn, value] of slotSets(slots, (j) => arg(`w${j}s`), arg("amountMicros"))) {
      update = update.set(slotColumn, value);
    }
    return update
      .where("project_id", "=", arg("projectId"))
      .where(column, "=", arg("accountId"))
      .where((eb) =>
        eb.and([
          n === 0
            ? plainAccount(eb, arg("nowMs"), arg("neededMicros"))
            : plainAccount(eb, arg("nowMs"), arg("neededMicros"), arg("limits")),
          eb.or([
            eb(eb.val(arg("amountMicros")), "=", 0),
            eb(firstGrantRemaining(eb), ">=", arg("amountMicros")),
          ]),
          ...(n === 0 ? [] : underLimits(eb, arg, shape, arg("nowMs"), arg("neededMicros"))),
          ...(guard === undefined ? [] : [guard.condition(eb, arg)]),
        ]),
      )
      .returning(["id", "external_id", "balance_micros", "updated_at_ms"]);
  });
}

const moves = new Map<string, ReturnType<typeof plainDebitMove>>();

/**
 * The plain move by `column` for limits of softness `shape` ("": the plain debit's own) and
 * `guard`'s condition (none: the deduction's own), prepared once each.
 */
function debitMove(column: "id" | "external_id", shape: string, guard?: MoveGuard) {
  const key = guard === undefined ? `${column} ${shape}` : `${column} ${shape} ${guard.key}`;
  let move = moves.get(key);
  if (move === undefined) {
    move = plainDebitMove(column, shape, guard);
    moves.set(key, move);
  }
  return move;
}

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
