/**
 * Finding accounts: by internal id or externalId within a project, plain, locked for a write
 * unit, or with the credits their holds reserve (docs/api.md#naming-an-account,
 * docs/design.md#the-write-path).
 */
import type { CompiledQuery, Kysely, Transaction } from "kysely";
import { grantWork } from "../admission/grant-work.ts";
import { locksRows } from "../db/engine.ts";
import { heldExpression } from "../db/held.ts";
import { type Arg, prepared } from "../db/prepared.ts";
import type { AccountRow, DB } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { INTERNAL_ACCOUNT_ID } from "../ids.ts";
import { fundedHeld, heldTree, rootIdOf, type TreeNode } from "./tree.ts";

/** A connection, instance or transaction to read with. */
export type Reader = Kysely<DB> | Transaction<DB>;

type AccountKey = { projectId: string; ref: string; nowMs: number };
/** An account with its holds and grant work (0/1 on SQLite, a boolean on PostgreSQL). */
type AccountWithHeld = AccountRow & { held_micros: number; grant_work: number | boolean };

/** What a balance read needs of an account, with its holds. */
type BalanceRow = Pick<
  AccountRow,
  "id" | "external_id" | "balance_micros" | "parent_id" | "funding" | "tree_links"
> & {
  held_micros: number;
};

type AccountColumn = "id" | "external_id";

/** The account whose `column` is the `ref` argument, within the project. */
function accountWhere(db: Kysely<DB>, arg: Arg<AccountKey>, column: AccountColumn) {
  return db
    .selectFrom("accounts")
    .selectAll()
    .where("project_id", "=", arg("projectId"))
    .where(column, "=", arg("ref"));
}

/**
 * The prepared account lookups by `column`: `plain`; `locked`, which also takes the row's lock
 * (`FOR UPDATE`, PostgreSQL write units only); `held`, which adds `held_micros`, the credits held
 * by pending, unexpired reservations at `nowMs` (one query instead of two), and `grant_work`
 * (`grantWork`): 0 lets a debit skip the expiry step.
 */
function accountLookups(column: AccountColumn) {
  return {
    plain: prepared<AccountKey, AccountRow>((db, arg) => accountWhere(db, arg, column)),
    locked: prepared<AccountKey, AccountRow>((db, arg) =>
      accountWhere(db, arg, column).forUpdate(),
    ),
    held: prepared<AccountKey, AccountWithHeld>((db, arg) =>
      accountWhere(db, arg, column)
        .select((eb) => heldExpression(eb, arg("nowMs")).as("held_micros"))
        .select((eb) => grantWork(eb, arg("nowMs")).as("grant_work")),
    ),
    balance: prepared<AccountKey, BalanceRow>((db, arg) =>
      db
        .selectFrom("accounts")
        .select(["id", "external_id", "balance_micros", "parent_id", "funding", "tree_links"])
        .select((eb) => heldExpression(eb, arg("nowMs")).as("held_micros"))
        .where("project_id", "=", arg("projectId"))
        .where(column, "=", arg("ref")),
    ),
  };
}

const byId = accountLookups("id");
const byExternalId = accountLookups("external_id");

type Lookup<R> = (db: Kysely<DB>, key: AccountKey) => CompiledQuery<R>;

/** The account named by `ref`: its internal id first, else its externalId. */
async function lookupAccount<R>(db: Reader, key: AccountKey, id: Lookup<R>, external: Lookup<R>) {
  const found = INTERNAL_ACCOUNT_ID.test(key.ref)
    ? (await db.executeQuery(id(db, key))).rows[0]
    : undefined;
  const row = found ?? (await db.executeQuery(external(db, key))).rows[0];
  if (!row) throw new ApiError("ACCOUNT_NOT_FOUND", `Account ${key.ref} not found`);
  return row;
}

/**
 * The account named by `ref` (its internal id, else its externalId) in the project. Inside a
 * PostgreSQL write unit it also locks the account's row until the unit commits: every unit that
 * changes an account, or anything of it (holds, assignments, grants), finds it here first, so
 * such units take turns across processes (see docs/design.md, "Engines"). A unit that only
 * names the account (a usage record) passes `lock: false`.
 * @throws ApiError ACCOUNT_NOT_FOUND (also for another project's account)
 */
export function findAccount(
  db: Reader,
  projectId: string,
  ref: string,
  options: { lock: boolean } = { lock: true },
): Promise<AccountRow> {
  const key = { projectId, ref, nowMs: 0 };
  return options.lock && locksRows(db)
    ? lookupAccount(db, key, byId.locked, byExternalId.locked)
    : lookupAccount(db, key, byId.plain, byExternalId.plain);
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
  const lookup = locksRows(db) ? byExternalId.locked : byExternalId.plain;
  const row = (await db.executeQuery(lookup(db, key))).rows[0];
  if (!row) throw new ApiError("ACCOUNT_NOT_FOUND", `Account ${externalId} not found`);
  return row;
}

/**
 * The account named by `ref` (internal id, else externalId) with its balances at `nowMs`, read
 * in one query. Inside a PostgreSQL write unit the account's row is locked first and its holds
 * are summed (and its grant work read) by a second statement, which sees every hold committed
 * before the lock was granted (a subquery of the locking statement would read the snapshot
 * taken before it waited for the lock).
 * `reserved` counts what the account's credits back: for an account in a tree, the holds of the
 * accounts below it that it funds too, unless `options.ownHolds` (a spender's lookup, whose
 * tree src/accounts/spending.ts reads itself): then only its own.
 * @returns the account, its balance, reserved and available credits in micro-credits, and
 *   whether a grant expiry is due or held (`grantWork`)
 * @throws ApiError ACCOUNT_NOT_FOUND
 */
export async function findAccountWithBalance(
  db: Reader,
  projectId: string,
  ref: string,
  nowMs: number,
  options: { ownHolds: boolean } = { ownHolds: false },
) {
  const key = { projectId, ref, nowMs };
  const row = locksRows(db)
    ? await lockedWithHeld(db, key)
    : await lookupAccount(db, key, byId.held, byExternalId.held);
  return withBalances(options.ownHolds ? row : await withTreeHolds(db, row, nowMs));
}

/**
 * An account read with its own holds, its holds made what its credits back
 * (docs/api.md#pools-and-members): for an account in a tree, its own and those of the accounts
 * below it that it funds (none for a member funded by its parent, which backs nothing).
 */
async function withTreeHolds<R extends TreeNode & { tree_links: number; held_micros: number }>(
  db: Reader,
  row: R,
  nowMs: number,
): Promise<R> {
  if (row.tree_links === 0) return row;
  const tree = await heldTree(db, await rootIdOf(db, row), nowMs);
  return { ...row, held_micros: fundedHeld(tree, row.id) };
}

/**
 * An account's balance, reserved and available credits (micro-credits) at `nowMs`, for a read
 * (no lock): one query of the three columns a balance view shows and the sum of its pending,
 * unexpired holds, without the grant work a write needs (docs/design.md#reads). `ref` is an
 * internal id, else an externalId; with `externalId: true` only an externalId.
 * @throws ApiError ACCOUNT_NOT_FOUND
 */
export async function readBalance(
  db: Kysely<DB>,
  projectId: string,
  ref: string,
  nowMs: number,
  options: { externalId: boolean },
) {
  const key = { projectId, ref, nowMs };
  const row = options.externalId
    ? (await db.executeQuery(byExternalId.balance(db, key))).rows[0]
    : await lookupAccount(db, key, byId.balance, byExternalId.balance);
  if (!row) throw new ApiError("ACCOUNT_NOT_FOUND", `Account ${ref} not found`);
  const { held_micros, ...account } = await withTreeHolds(db, row, nowMs);
  return balancesOf(account, held_micros);
}

/** An account read with its holds and grant work, as the lookups with balances return it. */
function withBalances({ held_micros, grant_work, ...account }: AccountWithHeld) {
  return {
    ...balancesOf(account, held_micros),
    /** False when no grant expiry is due or held. */
    grantWork: Number(grant_work) === 1,
  };
}

/**
 * An account with its balance, reserved and available credits (micro-credits), from its row and
 * what its holds keep (`heldMicros`, a number or PostgreSQL's bigint text).
 */
function balancesOf<A extends { balance_micros: number }>(account: A, heldMicros: number | string) {
  const reserved = Number(heldMicros);
  return {
    account,
    balance: account.balance_micros,
    reserved,
    available: account.balance_micros - reserved,
  };
}

async function lockedWithHeld(db: Reader, key: AccountKey): Promise<AccountWithHeld> {
  const account = await lookupAccount(db, key, byId.locked, byExternalId.locked);
  const { rows } = await db.executeQuery(
    heldAndWork(db, { accountId: account.id, nowMs: key.nowMs }),
  );
  const read = rows[0];
  if (!read) throw new Error(`ledger invariant: account ${account.id} vanished under its lock`);
  return { ...account, held_micros: Number(read.held), grant_work: Number(read.grant_work) };
}

/**
 * What the `held` lookup adds to an account, read by a statement of its own: its holds at
 * `nowMs` and whether a grant expiry is due or held (`grantWork`). PostgreSQL runs it after the
 * account's lock, so that it sees every commit made before the lock was granted.
 */
const heldAndWork = prepared<
  { accountId: string; nowMs: number },
  { held: number; grant_work: number | boolean }
>((db, arg) =>
  db
    .selectFrom("accounts")
    .select((eb) => [
      eb
        .selectFrom("reservations")
        .select((r) => r.fn.coalesce(r.fn.sum<number>("amount_micros"), r.lit(0)).as("held"))
        .whereRef("reservations.account_id", "=", "accounts.id")
        .where("reservations.status", "=", "pending")
        .where("reservations.expires_at_ms", ">", arg("nowMs"))
        .as("held"),
      grantWork(eb, arg("nowMs")).as("grant_work"),
    ])
    .where("id", "=", arg("accountId")),
);

/**
 * Micro-credits held by the account's reservations that are pending and unexpired at `nowMs`
 * (an expired hold stops counting at its expiresAt, whether or not the sweeper ran;
 * docs/api.md#reservation-expiry).
 */
export async function reservedMicros(db: Reader, accountId: string, nowMs: number) {
  const { rows } = await db.executeQuery(heldByAccount(db, { accountId, nowMs }));
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

/**
 * The externalId of the account `accountId`.
 * @throws Error when there is no such account (callers name one their unit just wrote to)
 */
export async function externalIdOf(db: Reader, accountId: string): Promise<string> {
  const { external_id } = await db
    .selectFrom("accounts")
    .select("external_id")
    .where("id", "=", accountId)
    .executeTakeFirstOrThrow();
  return external_id;
}
