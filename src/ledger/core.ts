/**
 * The ledger's arithmetic and invariants (contract §1, §6). Every credit movement of the
 * service goes through `postEntry`, inside a write unit:
 *
 * - balance = Σ credits − Σ debits of the account, and each row's balanceAfter = the previous
 *   row's balanceAfter ± its amount (the row is written with the balance it produces);
 * - 0 ≤ balance ≤ 9e9 credits (a credit past it is 409 BALANCE_LIMIT_EXCEEDED);
 * - debits are checked against `available` = balance − reserved by the callers that must
 *   (deduct, manual debit, confirm overage); `postEntry` itself refuses any debit below zero.
 *
 * The database repeats these as CHECK constraints, so a bug here fails the unit instead of
 * storing a broken ledger.
 */
import type { Kysely, Transaction } from "kysely";
import { prepared } from "../db/prepared.ts";
import type {
  AccountRow,
  DB,
  TransactionRow,
  TransactionSource,
  TransactionType,
} from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { INTERNAL_ACCOUNT_ID, newId } from "../ids.ts";
import { parseJsonColumn, stringifyJson } from "../json.ts";
import { fromMicros, MAX_BALANCE_MICROS } from "../money.ts";

type Reader = Kysely<DB> | Transaction<DB>;

type AccountKey = { projectId: string; ref: string; nowMs: number };
type AccountWithHeld = AccountRow & { held_micros: number };

/**
 * A prepared account lookup by `column` within the project; `withHeld` adds `held_micros`, the
 * credits held by pending, unexpired reservations at `nowMs` (one query instead of two).
 */
function accountLookup(column: "id" | "external_id", withHeld: boolean) {
  return prepared<AccountKey, AccountWithHeld>((db, arg) => {
    const query = db
      .selectFrom("accounts")
      .selectAll()
      .where("project_id", "=", arg("projectId"))
      .where(column, "=", arg("ref"));
    if (!withHeld) return query as never;
    return query.select((eb) =>
      eb
        .selectFrom("reservations")
        .select((r) => r.fn.coalesce(r.fn.sum<number>("amount_micros"), r.lit(0)).as("held"))
        .whereRef("reservations.account_id", "=", "accounts.id")
        .where("reservations.status", "=", "pending")
        .where("reservations.expires_at_ms", ">", arg("nowMs"))
        .as("held_micros"),
    );
  });
}

const lookups = {
  plain: { id: accountLookup("id", false), external: accountLookup("external_id", false) },
  held: { id: accountLookup("id", true), external: accountLookup("external_id", true) },
};

/** The account named by `ref`: its internal id first, else its externalId. */
async function lookupAccount(db: Reader, key: AccountKey, withHeld: boolean) {
  const by = withHeld ? lookups.held : lookups.plain;
  const byId = INTERNAL_ACCOUNT_ID.test(key.ref)
    ? (await db.executeQuery(by.id(key))).rows[0]
    : undefined;
  const row = byId ?? (await db.executeQuery(by.external(key))).rows[0];
  if (!row) throw new ApiError("ACCOUNT_NOT_FOUND", `Account ${key.ref} not found`);
  return row;
}

/**
 * The account named by `ref` (its internal id, else its externalId) in the project.
 * @throws ApiError ACCOUNT_NOT_FOUND (also for another project's account)
 */
export function findAccount(db: Reader, projectId: string, ref: string): Promise<AccountRow> {
  return lookupAccount(db, { projectId, ref, nowMs: 0 }, false);
}

/**
 * The account with this externalId in the project.
 * @throws ApiError ACCOUNT_NOT_FOUND
 */
export async function findAccountByExternalId(
  db: Reader,
  projectId: string,
  externalId: string,
): Promise<AccountRow> {
  const key = { projectId, ref: externalId, nowMs: 0 };
  const row = (await db.executeQuery(lookups.plain.external(key))).rows[0];
  if (!row) throw new ApiError("ACCOUNT_NOT_FOUND", `Account ${externalId} not found`);
  return row;
}

/**
 * The account named by `ref` (internal id, else externalId) with its balances at `nowMs`, read
 * in one query (the hot path of deductions and reservations).
 * @returns the account and its balance, reserved and available credits in micro-credits
 * @throws ApiError ACCOUNT_NOT_FOUND
 */
export async function findAccountWithBalance(
  db: Reader,
  projectId: string,
  ref: string,
  nowMs: number,
) {
  const { held_micros, ...account } = await lookupAccount(db, { projectId, ref, nowMs }, true);
  const reserved = Number(held_micros);
  return {
    account,
    balance: account.balance_micros,
    reserved,
    available: account.balance_micros - reserved,
  };
}

/**
 * Micro-credits held by the account's reservations that are pending and unexpired at `nowMs`
 * (an expired hold stops counting at its expiresAt, whether or not the sweeper ran; contract §7).
 */
export async function reservedMicros(db: Reader, accountId: string, nowMs: number) {
  const { rows } = await db.executeQuery(heldByAccount({ accountId, nowMs }));
  return Number(rows[0]?.held ?? 0);
}

const heldByAccount = prepared<{ accountId: string; nowMs: number }, { held: number }>((db, arg) =>
  db
    .selectFrom("reservations")
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>("amount_micros"), eb.lit(0)).as("held"))
    .where("account_id", "=", arg("accountId"))
    .where("status", "=", "pending")
    .where("expires_at_ms", ">", arg("nowMs")),
);

/** The account's balance and available credits, in micro-credits, at `nowMs`. */
export async function balanceOf(db: Reader, account: AccountRow, nowMs: number) {
  const reserved = await reservedMicros(db, account.id, nowMs);
  return {
    balance: account.balance_micros,
    reserved,
    available: account.balance_micros - reserved,
  };
}

/**
 * Throws 402 INSUFFICIENT_CREDITS unless `requestedMicros` ≤ `availableMicros` (contract §6).
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
}

/**
 * Appends one ledger entry and moves the account's balance with it.
 * A debit first spends the unspent credits of a non-accumulating plan grant (contract §8).
 * @returns the stored transaction row
 * @throws ApiError BALANCE_LIMIT_EXCEEDED when a credit would pass 9e9 credits;
 *   Error (a bug: callers check `available` first) when a debit would go below zero
 */
export async function postEntry(trx: Transaction<DB>, input: EntryInput): Promise<TransactionRow> {
  if (!Number.isSafeInteger(input.amountMicros) || input.amountMicros < 0) {
    throw new Error(`ledger invariant: entry amount ${input.amountMicros}`);
  }
  // One statement moves the balance and returns the new one; its WHERE refuses a balance past
  // the limit (credit) or below zero (debit), so no row comes back in those cases.
  const move = input.type === "credit" ? creditBalance : debitBalance;
  const { rows } = await trx.executeQuery(
    move({ accountId: input.accountId, amount: input.amountMicros, nowMs: input.nowMs }),
  );
  const balanceAfter = rows[0]?.balance_micros;
  if (balanceAfter === undefined) throw await refusedEntry(trx, input);
  const row = {
    id: newId("txn"),
    project_id: input.projectId,
    account_id: input.accountId,
    type: input.type,
    amount_micros: input.amountMicros,
    balance_after_micros: balanceAfter,
    description: input.description,
    metadata: stringifyJson(input.metadata),
    source: input.source,
    reservation_id: input.reservationId ?? null,
    account_plan_id: input.accountPlanId ?? null,
    created_at_ms: input.nowMs,
  };
  const inserted = await trx.executeQuery(insertTransaction(row));
  return { ...row, seq: Number(inserted.insertId) };
}

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

type MoveArgs = { accountId: string; amount: number; nowMs: number };

const creditBalance = prepared<MoveArgs, { balance_micros: number }>((db, arg) =>
  db
    .updateTable("accounts")
    .set((eb) => ({
      balance_micros: eb("balance_micros", "+", arg("amount")),
      updated_at_ms: arg("nowMs"),
    }))
    .where("id", "=", arg("accountId"))
    .where((eb) => eb(eb("balance_micros", "+", arg("amount")), "<=", MAX_BALANCE_MICROS))
    .returning("balance_micros"),
);

/** A debit also spends the unspent credits of a non-accumulating plan grant first (§8). */
const debitBalance = prepared<MoveArgs, { balance_micros: number }>((db, arg) =>
  db
    .updateTable("accounts")
    .set((eb) => ({
      balance_micros: eb("balance_micros", "-", arg("amount")),
      plan_bucket_micros: eb.fn("max", [eb.lit(0), eb("plan_bucket_micros", "-", arg("amount"))]),
      updated_at_ms: arg("nowMs"),
    }))
    .where("id", "=", arg("accountId"))
    .where("balance_micros", ">=", arg("amount"))
    .returning("balance_micros"),
);

const insertTransaction = prepared<Omit<TransactionRow, "seq">, unknown>((db, arg) =>
  db.insertInto("transactions").values({
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
  }),
);

/** ISO 8601 UTC timestamp of epoch milliseconds. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** The API's Transaction object (spec §2). */
export function transactionJson(row: TransactionRow) {
  return {
    id: row.id,
    accountId: row.account_id,
    type: row.type,
    amount: fromMicros(row.amount_micros),
    description: row.description,
    balanceAfter: fromMicros(row.balance_after_micros),
    metadata: parseJsonColumn(row.metadata) ?? {},
    createdAt: iso(row.created_at_ms),
  };
}
