/**
 * Who pays a write that spends, and whose limits apply to it (docs/api.md#pools-and-members,
 * docs/design.md#pools-and-members). An account in no tree pays for itself and only its own
 * limits apply. An account in a tree is a spender on a path `[spender, parent, …, root]`: its
 * pool (the nearest account on the path that funds itself) pays, and the limits of every level
 * on the path apply, each counting what its whole subtree spends and holds.
 *
 * Inside a PostgreSQL write unit each level of the path is locked, spender first and root last.
 * Every write below an account locks that account, so the writes that change what a level
 * spends or holds, or what a pool's credits back, take turns on that level's row across
 * processes; and every such write locks upwards, in the same direction.
 */
import type { Transaction } from "kysely";
import { type Prepared, prepared } from "../db/prepared.ts";
import type { AccountRow, DB } from "../db/schema.ts";
import type { SpendLevel } from "../limits/enforce.ts";
import { findAccount, findAccountWithBalance, type Reader } from "./lookup.ts";
import { fundedHeld, type HeldTree, heldTree, MAX_LEVELS, poolOf, subtreeHeld } from "./tree.ts";

/** An account with its balances (micro-credits), as `findAccountWithBalance` answers. */
export interface FoundAccount {
  account: AccountRow;
  balance: number;
  reserved: number;
  available: number;
  /** False when no grant expiry of the account is due or held. */
  grantWork: boolean;
}

/** What a write that spends needs to know of its spender's tree. */
export interface Spending {
  /** The account the write names (a member spends on behalf of itself). */
  spender: AccountRow;
  /** `[spender, parent, …, root]`; `[spender]` for an account in no tree. */
  path: readonly AccountRow[];
  /** The pool, whose credits pay, with its balances (its `reserved`: every hold it backs). */
  payer: FoundAccount;
  /** The micro-credits held at a level of the path and below it (its limits' `held`). */
  heldAt(level: AccountRow): number;
  /** The member a debit is booked on behalf of: the spender when another account pays. */
  onBehalfOf: string | null;
}

/**
 * The path from `account` up to its root: `[account, parent, …, root]`, each found in the
 * account's project and, inside a PostgreSQL write unit, locked in that order.
 * @throws Error when the path is longer than 4 levels (a broken tree)
 */
export async function pathUp(db: Reader, account: AccountRow): Promise<AccountRow[]> {
  const path = [account];
  let at = account;
  while (at.parent_id !== null) {
    if (path.length >= MAX_LEVELS) throw new Error(`ledger invariant: ${account.id} is too deep`);
    at = await findAccount(db, account.project_id, at.parent_id);
    path.push(at);
  }
  return path;
}

/**
 * The account a write that spends names (internal id, else externalId), found and locked as
 * `findAccountWithBalance` finds it, with its own holds only: `spendingOf` reads its tree.
 * @throws ApiError ACCOUNT_NOT_FOUND
 */
export function findSpender(db: Reader, projectId: string, ref: string, nowMs: number) {
  return findAccountWithBalance(db, projectId, ref, nowMs, { ownHolds: true });
}

/**
 * The spending of `found` (the spender as its unit found, and locked, it, with its own holds:
 * `findSpender`) at `nowMs`: for an account in no tree, itself; else its path locked, its pool
 * with the holds it backs, and each level's holds (one recursive read of the root's tree).
 */
export async function spendingOf(
  db: Reader,
  found: FoundAccount,
  nowMs: number,
): Promise<Spending> {
  const spender = found.account;
  if (spender.tree_links === 0) {
    return {
      spender,
      path: [spender],
      payer: found,
      heldAt: () => found.reserved,
      onBehalfOf: null,
    };
  }
  const path = await pathUp(db, spender);
  const root = path[path.length - 1] ?? spender;
  return treeSpending(found, path, await heldTree(db, root.id, nowMs));
}

/**
 * The spending of `found`, a spender in a tree, whose path is `path` (`[spender, …, root]`) and
 * whose root's tree holds `tree`: its pool pays, with the holds it backs as its `reserved`, and
 * each level's limits count the holds of its subtree.
 */
export function treeSpending(
  found: FoundAccount,
  path: readonly AccountRow[],
  tree: HeldTree,
): Spending {
  const spender = found.account;
  const pool = poolOf(path);
  const reserved = fundedHeld(tree, pool.id);
  const payer =
    pool.id === spender.id
      ? { ...found, reserved, available: found.balance - reserved, grantWork: true }
      : {
          account: pool,
          balance: pool.balance_micros,
          reserved,
          available: pool.balance_micros - reserved,
          grantWork: true,
        };
  return {
    spender,
    path,
    payer,
    heldAt: (level) => subtreeHeld(tree, level.id),
    onBehalfOf: pool.id === spender.id ? null : spender.id,
  };
}

/** Whether the spender is in a tree (its refusals name the refusing account). */
export function inTree(spending: Spending): boolean {
  return spending.spender.tree_links > 0;
}

/** The levels whose limits judge the write: the path, each with what it and below it hold. */
export function spendLevels(spending: Spending): SpendLevel[] {
  return spending.path.map((account) => ({ account, heldMicros: spending.heldAt(account) }));
}

/** The pool an INSUFFICIENT_CREDITS names: for a spender in a tree, its pool; else none. */
export function namedPool(spending: Spending): AccountRow | undefined {
  return inTree(spending) ? spending.payer.account : undefined;
}

/**
 * Records a spending debit at each level above its spender (`spend_levels`), so that those
 * levels' window counters can be rebuilt and checked from rows (counters.ts `spentInRows`).
 * Nothing for a spender without a parent, or a debit of 0.
 */
export async function recordSpendLevels(
  trx: Transaction<DB>,
  spending: Spending,
  debit: { id: string; created_at_ms: number; amount_micros: number },
): Promise<void> {
  const above = spending.path.slice(1);
  if (above.length === 0 || debit.amount_micros <= 0) return;
  const args: SpendLevelArgs = {
    createdAtMs: debit.created_at_ms,
    transactionId: debit.id,
    amountMicros: debit.amount_micros,
  };
  above.forEach((level, i) => {
    args[`level${i}`] = level.id;
  });
  await trx.executeQuery(insertSpendLevels(above.length)(trx, args));
}

/** One debit's `spend_levels` rows: the levels' account ids (`level<i>`), its time, id and amount. */
type SpendLevelArgs = { createdAtMs: number; transactionId: string; amountMicros: number } & Record<
  `level${number}`,
  string
>;

/** The prepared inserts of `spend_levels` rows, by how many levels they record. */
const spendLevelInserts = new Map<number, Prepared<SpendLevelArgs, unknown>>();

/**
 * The insert of one debit's `spend_levels` rows for `n` levels: the arguments `level0` …
 * `level<n-1>` (account ids), `createdAtMs`, `transactionId` and `amountMicros`.
 */
function insertSpendLevels(n: number) {
  let insert = spendLevelInserts.get(n);
  if (insert === undefined) {
    insert = prepared<SpendLevelArgs, unknown>((db, arg) =>
      db.insertInto("spend_levels").values(
        Array.from({ length: n }, (_, i) => ({
          account_id: arg(`level${i}`),
          created_at_ms: arg("createdAtMs"),
          transaction_id: arg("transactionId"),
          amount_micros: arg("amountMicros"),
        })),
      ),
    );
    spendLevelInserts.set(n, insert);
  }
  return insert;
}
